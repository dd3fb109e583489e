"""The import rules of docs/architecture.md, held by the code: no import cycle between any two
genvdis modules, the layers of pyproject.toml's import-linter contract (which `make lint` runs
as `lint-imports`), and the doc's layer list and module list equal to the contract and to the
package, so that neither can drift."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import grimp
import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # `if TYPE_CHECKING:` imports are type hints only: they run nowhere, as the contract says
    return grimp.build_graph("genvdis", exclude_type_checking_imports=True)


def contract_layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return list(layers["layers"])


def _layer(entry: str) -> grimp.Layer:
    """import-linter's spelling: "a | b" siblings that may not import each other, "a : b"
    siblings that may."""
    independent = ":" not in entry
    return grimp.Layer(*re.split(r"\s*[|:]\s*", entry.strip()), independent=independent)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    """The check below can fail: a two-module and a three-module loop are found, a chain not."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == [["x", "y", "z"]]
    assert _cycles({"x": {"y"}, "y": {"z"}}) == []


def test_no_import_cycle_between_genvdis_modules(graph):
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert _cycles(edges) == []


def test_the_layers_hold(graph):
    """The contract's layers (higher may import lower only), checked as lint-imports checks
    them, so that `make test` holds them too; each broken arrow is named."""
    broken = graph.find_illegal_dependencies_for_layers(
        [_layer(entry) for entry in contract_layers()]
    )
    arrows = sorted(
        f"{','.join(sorted(route.heads))} -> {','.join(sorted(route.tails))}"
        for dep in broken
        for route in dep.routes
    )
    assert arrows == []


def _doc_section(heading: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_the_doc_lists_the_contracts_layers():
    block = re.search(r"```text\n(.*?)```", _doc_section("The layers"), re.S)
    assert block is not None, "docs/architecture.md: no ```text block under '## The layers'"
    listed = [line.strip() for line in block[1].splitlines() if line.strip()]
    assert listed == contract_layers()


def _modules() -> list[str]:
    """genvdis's modules as paths, but the subpackages' `__init__.py` (their own docstrings)."""
    found = (REPO / "genvdis").rglob("*.py")
    return sorted(
        str(p.relative_to(REPO))
        for p in found
        if p.name != "__init__.py" or p.parent.name == "genvdis"
    )


def test_the_doc_lists_every_module_once():
    r"""Each module is one `- \`path\`: why` line under '## The modules'."""
    listed = re.findall(r"^- `(genvdis/[\w/]+\.py)`", _doc_section("The modules"), re.M)
    assert len(listed) == len(set(listed))
    assert sorted(listed) == _modules()


def test_each_subpackage_names_its_public_modules():
    """A subpackage's `__all__` is its public modules and subpackages (no `_` prefix): the
    list a reader sees first, kept true as modules come and go."""
    for init in sorted((REPO / "genvdis").rglob("*/__init__.py")):
        package = ".".join(init.parent.relative_to(REPO).parts)
        module = importlib.import_module(package)
        public = sorted(
            p.stem if p.suffix == ".py" else p.name
            for p in init.parent.iterdir()
            if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").is_file())
        )
        assert sorted(module.__all__) == public, package
        assert module.__doc__, package
