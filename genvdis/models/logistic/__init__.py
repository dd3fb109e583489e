"""Logistic regression: binary and softmax fits by Newton's method, and their kernels."""
