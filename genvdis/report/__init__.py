"""What a person reads: the figures (`plotting`, their line styles in `styles`), REPORT.md and
REPORT.html (`markdown`, with the per-panel curves section in `curves` and the sweep's
stability section in `stability`), the interactive explorer page (`explorer`), and the
study's report across datasets with its own explorer page (`study`).
"""

__all__ = ["curves", "explorer", "markdown", "plotting", "stability", "study", "styles"]
