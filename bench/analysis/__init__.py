"""What the measurements mean: steady-state metrics, the diagnosis, comparisons and sweeps, the articles' figures."""
