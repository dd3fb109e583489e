"""genvdis: naive Bayes vs. logistic regression learning curves (Ng & Jordan, 2001).

The public API (see README "Python API"): `load_config`, `run`, `open_results`, `Results`,
`builtin_configs` and `UserError`. Importing genvdis loads none of the numeric libraries: each
name is imported from its module on first use.
"""

from __future__ import annotations

import importlib

__version__ = "0.3.0"
__all__ = ["Results", "UserError", "builtin_configs", "load_config", "open_results", "run"]

_HOMES = {
    "Results": "genvdis.api",
    "load_config": "genvdis.api",
    "open_results": "genvdis.api",
    "run": "genvdis.api",
    "builtin_configs": "genvdis.builtin",
    "UserError": "genvdis.errors",
}

TYPE_CHECKING = False  # without importing typing (most of import genvdis's time otherwise)
if TYPE_CHECKING:
    from genvdis.api import Results, load_config, open_results, run
    from genvdis.builtin import builtin_configs
    from genvdis.errors import UserError


def __getattr__(name: str) -> object:
    """The public names, imported on first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'genvdis' has no attribute '{name}'")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
