"""Streamlit widgets shared by the pages; with pages/ and app.py, the only code that imports streamlit."""
