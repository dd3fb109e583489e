"""What every test of a refused input asserts of the command's result: shared by the tests
that run the command line on bad input."""

from __future__ import annotations

from pathlib import Path


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
