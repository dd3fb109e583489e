"""Figures, the markdown report and the HTML explorer."""
