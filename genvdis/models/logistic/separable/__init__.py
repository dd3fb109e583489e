"""What logistic regression does on a separable training set, where its maximum-likelihood fit
does not exist: the separating hyperplanes (`hyperplanes`: maximum margin, ridge, by linear
programming in `_lp`) and a random one drawn from the version space (`sampler`).
"""

__all__ = ["hyperplanes", "sampler"]
