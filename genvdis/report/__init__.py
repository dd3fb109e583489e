"""What a person reads: the figures (`plotting`, their line styles in `styles`), REPORT.md and
REPORT.html (`markdown`, with the per-panel curves section in `curves` and the sweep's
stability section in `stability`) and the interactive explorer page (`explorer`).
"""

__all__ = ["curves", "explorer", "markdown", "plotting", "stability", "styles"]
