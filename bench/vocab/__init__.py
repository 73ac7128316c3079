"""The vocabulary: what a run, a reading, a config and a record are; discovers and computes nothing."""
