"""The models, scikit-learn-like (small classes with fit/predict, parameters validated once):
one file per built-in model (naive_bayes, logistic_regression, lda, majority), each declaring
the `base.ModelInfo` that `registry` finds by itself; their shared base (`base`); the
logistic-regression solvers (`logistic`); classifiers named by import path (`estimators`).
Models import only the runtime layer and the numeric libraries.
"""

import pkgutil

# every public module, found as the registry finds the model files: a new model file needs no
# edit here
__all__ = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
