"""genvdis: naive Bayes vs. logistic regression learning curves (Ng & Jordan, 2001).

The public API (see README "Python API"): `load_config`, `run`, `sweep`, `open_results`, `Results`,
`builtin_configs` and `UserError`. Importing genvdis loads none of the numeric libraries: each
name is imported from its module on first use. `__version__` lives in genvdis/_version.py, which
pyproject.toml reads too.
"""

from __future__ import annotations

import importlib

from genvdis._version import __version__ as __version__

__all__ = ["Results", "UserError", "builtin_configs", "load_config", "open_results", "run"]
__all__ += ["sweep"]

_HOMES = {
    "Results": "genvdis.runresults",
    "load_config": "genvdis.api",
    "open_results": "genvdis.runresults",
    "run": "genvdis.api",
    "sweep": "genvdis.api",
    "builtin_configs": "genvdis.config.builtin",
    "UserError": "genvdis.errors",
}

TYPE_CHECKING = False  # without importing typing (most of import genvdis's time otherwise)
if TYPE_CHECKING:
    from genvdis.api import load_config, run, sweep
    from genvdis.config.builtin import builtin_configs
    from genvdis.errors import UserError
    from genvdis.runresults import Results, open_results


def __getattr__(name: str) -> object:
    """The public names, imported on first use (PEP 562)."""
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'genvdis' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})
