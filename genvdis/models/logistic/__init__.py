"""Logistic regression, binary (`binary`) and K-class (`softmax`), fitted for a whole block of
splits at once by a batched Newton method; its private modules are the solver's parts
(Newton steps, design layouts, compiled kernels, linear solves, warm starts), and
`separable` handles training sets a hyperplane separates.
"""

__all__ = ["binary", "separable", "softmax"]
