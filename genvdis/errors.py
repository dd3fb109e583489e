"""The one exception type that means "the user's input is wrong".

The CLI turns a `UserError` into a one-line message and exit code 2; anything else is a bug
(exit code 1). Raising it anywhere below the CLI is how a module says "tell the user, not me".
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input (config, data, options): shown as one line, exit code 2."""
