"""The models: one file per built-in model, the logistic-regression solvers, scikit-learn
estimators."""
