"""Measuring tools that run from the checkout, beside the engine (bench/) rather than inside it.

``python -m bench overhead`` hands over to :mod:`benchmarks.overhead`: what the dashboard costs a training run,
measured side by side against a bare ``model.fit`` (docs/PERFORMANCE.md, docs/PERFORMANCE-METHOD.md).
``python -m benchmarks.store_soak``: several processes writing runs to one store at once (docs/STORE-SOAK.md).
Only bench/ is installed as a library; this package drives a real dashboard server, a browser and several processes,
so it needs the whole checkout (app.py, pages/, ui/) and the dev requirements.
"""
