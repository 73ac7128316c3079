"""The dashboard brought to training code it did not start: ``bench.integrations.keras.BenchCallback`` records a
script's or notebook's ``model.fit`` in the dashboard's store as ``bench run`` records its own runs.

Importing this package loads no framework; ``bench.integrations.keras`` imports Keras (the script has it loaded).
"""
