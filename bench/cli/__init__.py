"""The command line: python -m bench (main.py), its options (args.py) and the store and machine commands."""
