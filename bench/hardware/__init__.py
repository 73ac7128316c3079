"""What the machine has and does: device discovery, the samplers, energy, the matmul peak, the doctor."""
