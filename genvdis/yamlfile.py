"""Config files as YAML: read safely, within bounds, with duplicate keys refused.

`yaml.safe_load` never executes anything, but it trusts a document's shape: a 1 KB file of
nested aliases (a "billion laughs") stands for billions of values, and validating it took
a minute and gigabytes; a key given twice silently keeps the last value. So the document is
first composed into its node graph, where an alias is one shared node and costs nothing; the
graph is checked (duplicate keys, the size and depth it would have once aliases are expanded)
and only then turned into Python objects.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from genvdis.errors import UserError

MAX_BYTES = 2**20  # a config is a few hundred bytes; the shipped ones are under 3 KB
MAX_VALUES = 100_000  # values (scalars, lists, mappings) once aliases are expanded
MAX_DEPTH = 50  # nesting, once aliases are expanded
MERGE_TAG = "tag:yaml.org,2002:merge"
NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
# Numbers that YAML 1.1 (PyYAML) reads otherwise than they look, and than YAML 1.2 would: a
# leading 0 is octal (`splits: 010` is 8) and colons are base 60 (`seed: 1:05` is 65).
OCTAL = re.compile(r"[-+]?0[0-7_]+")


def read_yaml(path: str | Path) -> Any:
    """A YAML file's content (nothing in it is ever executed); any problem is a one-line
    UserError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: config file not found")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise UserError(
            f"{path}: {size / 2**20:.1f} MB is too large for a config file (limit "
            f"{MAX_BYTES / 2**20:.1f} MB; a long sizes: list? use sizes: {{start, stop, num}})"
        )
    try:
        return _load(path.read_text(encoding="utf-8"), path)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise UserError(f"{path}: malformed YAML{where}: {problem}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a UTF-8 text file") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise UserError(_too_deep(path)) from None


def _too_deep(path: Path) -> str:
    return f"{path}: nested more than {MAX_DEPTH} levels deep"


def _load(text: str, path: Path) -> Any:
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_graph(root, path)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_graph(root: yaml.Node, path: Path) -> None:
    """Every mapping's keys distinct; the expanded document within MAX_VALUES and MAX_DEPTH.
    One depth-first pass over the node graph, each shared (aliased) node visited once: its
    expanded size and depth are remembered, so the cost is that of the text, not of the
    expansion."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()  # the current node's ancestors: an alias to one is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children = _children(node)
        if finished:
            open_nodes.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_VALUES:
                raise UserError(
                    f"{path}: the document expands to more than {MAX_VALUES} values "
                    "(YAML aliases repeat what they point to); write it out plainly"
                )
            if depth[key] > MAX_DEPTH:
                raise UserError(_too_deep(path))
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise UserError(f"{path}: an alias at line {node.start_mark.line + 1} contains itself")
        if isinstance(node, yaml.MappingNode):
            _check_keys(node, path)
        elif isinstance(node, yaml.ScalarNode):
            _check_number(node, path)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children)


def _check_keys(node: yaml.MappingNode, path: Path) -> None:
    first_line: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == MERGE_TAG:
            continue  # a merge (<<) may be overridden: that is what it is for
        line, name = key.start_mark.line + 1, (key.tag, key.value)
        if name in first_line:
            first = first_line[name]
            where = f"lines {first} and {line}" if first != line else f"line {line}, twice"
            raise UserError(f"{path}: duplicate key '{key.value}' at {where}")
        first_line[name] = line


def _check_number(node: yaml.ScalarNode, path: Path) -> None:
    """A plain number written with a leading 0 or with colons: refused, not silently read as
    octal or base 60."""
    if node.tag not in NUMBER_TAGS or node.style is not None:
        return
    text = node.value
    if OCTAL.fullmatch(text):
        why = "a leading 0 makes it octal"
    elif ":" in text:
        why = "colons make it base 60"
    else:
        return
    raise UserError(
        f"{path}: '{text}' at line {node.start_mark.line + 1} would be read as "
        f"{yaml.safe_load(text)} ({why}); write the number without it, or quote it for text"
    )
