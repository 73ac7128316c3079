"""What runs a run: the queue, one worker's life, the spare worker, the store writes, the run's state, the worker process."""
