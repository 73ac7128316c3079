"""What a person reads: Plotly figures and their style, exports and imports, short labels."""
