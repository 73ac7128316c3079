"""The plans: what a model and a data set are, with no framework loaded."""
