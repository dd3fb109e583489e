"""A run's files on disk: written atomically, fingerprinted and checkpointed (`results`), read
back with one-line errors for anything edited or damaged (`runfiles`), and one run per
folder at a time (`lock`).
"""

__all__ = ["lock", "results", "runfiles"]
