"""The built-in configs: this folder is installed as the package `genvdis.configs`, so the
YAML files here are the ones a wheel ships (see genvdis/builtin.py)."""
