"""The models: one file per built-in model (naive_bayes, logistic_regression, lda), each
declaring its `base.ModelInfo` that `registry` finds; the logistic-regression solvers
(`logistic`); classifiers named by import path (`estimators`)."""
