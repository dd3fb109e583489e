"""What logistic regression does on a separable training set (docs/separable.md)."""
