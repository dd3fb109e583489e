"""Config files as YAML: read safely, within bounds, with duplicate keys refused.

`yaml.safe_load` never executes anything, but it trusts a document's shape: a 1 KB file of
nested aliases (a "billion laughs") stands for billions of values, and validating it took
a minute and gigabytes; a key given twice silently keeps the last value. So the document is
first composed into its node graph, where an alias is one shared node and costs nothing; the
graph is checked (duplicate keys, the size and depth it would have once aliases are expanded)
and only then turned into Python objects.

The graph is composed by libyaml's C parser where PyYAML has it (`yaml.CSafeLoader`, about
6 times faster: a report reads hundreds of run configs), with the same resolver, so the same
nodes, tags, styles and line numbers for the checks. A document the C parser or the checks
refuse is read again by the Python parser, whose messages say what is wrong and where: either
parser gives the same answer and the same message.
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


def read_yaml(path: str | Path, data: bytes | None = None) -> Any:
    """A YAML file's content (nothing in it is ever executed); any problem is a one-line
    UserError naming the file. `data`: the file's bytes, if read already."""
    path = Path(path)
    if data is None and not path.is_file():
        raise UserError(f"{path}: config file not found")
    size = path.stat().st_size if data is None else len(data)
    if size > MAX_BYTES:
        raise UserError(
            f"{path}: {size / 2**20:.1f} MB is too large for a config file (limit "
            f"{MAX_BYTES / 2**20:.1f} MB; a long sizes: list? use sizes: {{start, stop, num}})"
        )
    try:
        if data is None:
            text = path.read_text(encoding="utf-8")
        else:  # as read_text gives it: universal newlines
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        return _load(text, path)
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


# libyaml's parser, when PyYAML was built with it; else the Python one alone
FAST_LOADER = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None


def _load(text: str, path: Path) -> Any:
    """The document, composed and checked (`_check_graph`) before it is constructed: by the C
    parser if there is one, and by the Python parser where that one fails (for its message)."""
    if FAST_LOADER is not None:
        try:
            return _compose_checked(FAST_LOADER, text, path)
        except (yaml.YAMLError, UserError, RecursionError):
            pass
    return _compose_checked(yaml.SafeLoader, text, path)


def _compose_checked(loader_class: type, text: str, path: Path) -> Any:
    loader = loader_class(text)
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
    merged: dict[int, dict] = {}  # each mapping's keys once merges (<<) apply: _merged_keys
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
            _check_keys(node, path, merged)
        elif isinstance(node, yaml.ScalarNode):
            _check_number(node, path)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children)


def _check_keys(node: yaml.MappingNode, path: Path, memo: dict[int, dict]) -> None:
    first_line: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        # the keys a merge (<<) brings may be overridden by the mapping's own (that is what it
        # is for), but a second << is a duplicate key too: PyYAML let it override the first
        if not isinstance(key, yaml.ScalarNode):
            continue
        line, name = key.start_mark.line + 1, (key.tag, key.value)
        if name in first_line:
            first = first_line[name]
            where = f"lines {first} and {line}" if first != line else f"line {line}, twice"
            merge = "; merge several with <<: [*a, *b]" if key.tag == MERGE_TAG else ""
            raise UserError(f"{path}: duplicate key '{key.value}' at {where}{merge}")
        first_line[name] = line
    _check_merges(node, first_line, path, memo)


def _merge_sources(value: yaml.Node) -> list[yaml.MappingNode]:
    """The mappings a merge (<<) brings: one, or a list of them."""
    if isinstance(value, yaml.MappingNode):
        return [value]
    if isinstance(value, yaml.SequenceNode):
        return [item for item in value.value if isinstance(item, yaml.MappingNode)]
    return []


def _check_merges(
    node: yaml.MappingNode, own: dict[tuple[str, str], int], path: Path, memo: dict[int, dict]
) -> None:
    """No key the mapping leaves to its merges may come from two of them: which one wins
    depends, in PyYAML, on whether the two key strings are one object in memory (a list of
    merges let the last win, where YAML says the first does)."""
    given: dict[tuple[str, str], yaml.Node] = {}
    for key, value in node.value:
        if not (isinstance(key, yaml.ScalarNode) and key.tag == MERGE_TAG):
            continue
        for source in _merge_sources(value):
            for name, from_key in _merged_keys(source, {id(node)}, memo).items():
                first = given.setdefault(name, from_key)
                if name not in own and first is not from_key:
                    lines = f"lines {first.start_mark.line + 1} and {from_key.start_mark.line + 1}"
                    raise UserError(
                        f"{path}: key '{name[1]}' is merged (<<) at line {key.start_mark.line + 1}"
                        f" from two mappings ({lines}), and which one wins is not reliable; "
                        "give it in one of them only, or in the mapping itself"
                    )


def _merged_keys(
    node: yaml.MappingNode, inside: set[int], memo: dict[int, dict]
) -> dict[tuple[str, str], yaml.Node]:
    """A mapping's keys once its own merges are applied: its own, then those merged in (each
    mapping's worked out once: `memo`)."""
    if id(node) in memo:
        return memo[id(node)]
    if id(node) in inside:  # an alias that contains itself: refused by _check_graph
        return {}
    inside = inside | {id(node)}
    keys: dict[tuple[str, str], yaml.Node] = {}
    merged: dict[tuple[str, str], yaml.Node] = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        if key.tag != MERGE_TAG:
            keys[(key.tag, key.value)] = key
            continue
        for source in _merge_sources(value):
            for name, from_key in _merged_keys(source, inside, memo).items():
                merged.setdefault(name, from_key)
    memo[id(node)] = {**merged, **keys}
    return memo[id(node)]


def read_scalar(text: str, where: str) -> Any:
    """One value written on the command line (`--vary bins=010`), read as a config's values
    are: a number with a leading 0 or colons refused (`_check_number`)."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if isinstance(node, yaml.ScalarNode):
        _check_number(node, where, line=False)
    return yaml.safe_load(text)


def _check_number(node: yaml.ScalarNode, path: Path | str, line: bool = True) -> None:
    """A plain number written with a leading 0 or with colons: refused, not silently read as
    octal or base 60."""
    if node.tag not in NUMBER_TAGS or node.style:  # quoted; a plain one's is None, or ''
        return
    text = node.value
    if OCTAL.fullmatch(text):
        why = "a leading 0 makes it octal"
    elif ":" in text:
        why = "colons make it base 60"
    else:
        return
    at = f" at line {node.start_mark.line + 1}" if line else ""
    raise UserError(
        f"{path}: '{text}'{at} would be read as {yaml.safe_load(text)} ({why}); write the "
        "number without it, or quote it for text"
    )
