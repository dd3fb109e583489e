"""The learners, scikit-learn-like (small classes with fit/predict, parameters validated
once): naive Bayes and LDA (`generative`), their shared batch fitting (`linear`), logistic
regression and its solvers (`logistic`), K classes (`multiclass`) and a user's scikit-learn
estimators (`estimators`). Models import only the runtime layer and the numeric libraries.
"""

__all__ = ["estimators", "generative", "linear", "logistic", "multiclass"]
