"""Data sources: the UCI registry, local files, URLs, scikit-learn tables; fetching,
preprocessing."""
