"""The one exception type that means "the user's input is wrong", or the user's machine
is in a state the user can fix (a full disk, a run folder another run is using).

The CLI turns a `UserError` into a one-line message and exit code 2; anything else is a bug
(exit code 1). Raising it anywhere below the CLI is how a module says "tell the user, not me".
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input (config, data, options), or a fixable state of the machine: shown as one
    line, exit code 2."""


# The end of every refusal of work that is only too big (a run's estimated hours or memory, a
# sweep's variant count): the one way past it, worded the same everywhere.
FORCE = "or add --force to run it anyway"
