"""The version, in one place: pyproject.toml reads it (setuptools' dynamic version), and the
package, the CLI and every run's manifest import it from here, without importlib.metadata."""

__version__ = "0.10.0"
