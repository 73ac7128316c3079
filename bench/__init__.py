"""Headless engine: datasets, models, devices, monitoring, training workers, jobs, store, charts and CLI.

Nothing in this package imports Streamlit; the dashboard (app.py, pages/, ui/) is a thin layer on top of it.
"""

from __future__ import annotations

__version__ = "0.1.0"
