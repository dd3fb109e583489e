"""What every test of a refused input asserts: of the command's result (exit 2, one line), or of
the UserError a function raises. The kind and the subject (the field, file, column or value the
message names) are asserted; the wording around them is free to change."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from genvdis.errors import UserError


def assert_user_error(result, *names: str, out: Path | None = None) -> str:
    """Exit 2, one line starting 'error:' that names every one of `names`, no traceback, and
    nothing written under `out`."""
    message = result.stderr.strip()
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert len(message.splitlines()) == 1, message
    assert message.startswith("error: "), message
    assert "Traceback" not in result.output
    for name in names:
        assert name in message, (name, message)
    if out is not None:
        assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))
    return message


@contextmanager
def raises_user_error(*names: str) -> Iterator[pytest.ExceptionInfo[UserError]]:
    """The block raises a UserError of one line that names every one of `names`: what the CLI
    turns into a one-line exit 2."""
    with pytest.raises(UserError) as caught:
        yield caught
    message = str(caught.value)
    assert message and "\n" not in message.strip(), message
    for name in names:
        assert name in message, (name, message)
