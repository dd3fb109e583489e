"""Where a config's table comes from and how it becomes arrays: the registered UCI sets
(`uci`, with `registry.txt`), downloads checked by sha256 (`fetch`), known synthetic
distributions (`synthetic`), the one place that picks a config's source (`sources`), and the
rows, classes and one-hot layout the models fit (`preprocessing`).
"""

__all__ = ["fetch", "openml", "preprocessing", "sources", "synthetic", "uci"]
