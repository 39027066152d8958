"""The house as issue 28 left it, held by tests so it stays so: a root of leaves and faces, an
engine that imports only leaves, one folder per store backend, fetching below documents, no
import cycle (imports under ``TYPE_CHECKING`` and inside functions count too), no module over 400
lines, tests laid out like the package, and MemOS's package an edge nothing imports."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "memreader"

#: The root's modules: the leaves everyone uses and the faces.
ROOT_MODULES = {
    "__init__",
    "_version",
    "config",
    "config_files",
    "config_model",
    "cores",
    "errors",
    "factory",
    "files",
    "items",
    "modes",
    "registry",
    "scopes",
    "secret_masking",
    "testing",
}
#: What the engine may import besides itself.
ENGINE_LEAVES = {
    "memreader.errors",
    "memreader.modes",
    "memreader.registry",
    "memreader.config_model",
    "memreader.items",
    "memreader.calls",
    "memreader.calls.deadlines",
    "memreader.calls.observers",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str) -> Iterator[str]:
    """Every memreader module ``name`` imports, at any depth (type-only imports included)."""
    path = MODULES[name]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from pkg import module`` ties to the module; ``from pkg import name`` to pkg.
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            targets = [sub for sub in subs if sub in MODULES]
            if len(targets) < len(subs):
                targets.append(node.module)
        else:
            continue
        for target in targets:
            if target in MODULES and target != name:
                yield target


GRAPH = {name: set(_imports(name)) for name in MODULES}


def test_the_root_holds_only_leaves_and_faces() -> None:
    root = {path.stem for path in PACKAGE.glob("*.py")}
    assert root == ROOT_MODULES


def test_the_engine_imports_only_leaves() -> None:
    engine = [name for name in MODULES if name.startswith("memreader.pipeline")]
    assert engine
    outside = {
        f"{name} -> {target}"
        for name in engine
        for target in GRAPH[name]
        if not target.startswith("memreader.pipeline") and target not in ENGINE_LEAVES
    }
    assert not outside, sorted(outside)


def test_each_store_backend_has_its_folder() -> None:
    for backend in ("sqlite", "postgres"):
        folder = PACKAGE / "stores" / backend
        assert {"store.py", "operations.py", "writes.py", "schema.py", "categories.py"} <= {
            path.name for path in folder.glob("*.py")
        }
    assert not list((PACKAGE / "stores").glob("sqlite_*.py"))
    assert not list((PACKAGE / "stores").glob("postgres_*.py"))


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ("memreader.fetch", "memreader.documents"),
        ("memreader.fetch", "memreader.parts"),
        ("memreader.documents", "memreader.parts"),
        ("memreader.llms", "memreader.documents"),
        ("memreader.llms", "memreader.parts"),
        ("memreader.stores", "memreader.categories"),
        ("memreader.scenes", "memreader.windowing"),
        ("memreader.steps", "memreader.readers"),
    ],
)
def test_a_lower_package_never_imports_a_higher_one(lower: str, upper: str) -> None:
    ties = {
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        if name == lower or name.startswith(lower + ".")
        for target in targets
        if target == upper or target.startswith(upper + ".")
    }
    assert not ties, sorted(ties)


def _cycles() -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in GRAPH:
        if node not in index:
            visit(node)
    return groups


def test_no_import_cycle_counting_type_only_imports() -> None:
    assert _cycles() == []


def test_no_module_is_over_400_lines() -> None:
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}


def test_tests_are_laid_out_like_the_package() -> None:
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    folders = {
        path.name
        for path in (ROOT / "tests").iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    }
    assert folders <= packages, sorted(folders - packages)
    # Only tests of the root's modules and of promises that cross packages stay at the top.
    assert len(list((ROOT / "tests").glob("test_*.py"))) <= 16


LEAVES = {"errors", "items", "modes", "registry", "files", "config_model", "secret_masking"}
LEAVES |= {"_version", "calls", "scopes", "config_files", "cores"}


def _place(module: str) -> str:
    """A module's package as the README names it: ``steps/``, ``config.py``, ``__init__.py``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    if (PACKAGE / parts[1]).is_dir():
        return parts[1] + "/"
    return parts[1] + ".py"


def _picture() -> dict[str, set[str]]:
    """The package table of the docs' Development page: each package -> what it says the
    package imports."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    rows = text.split("<!-- package-picture -->", 1)[1].strip().split("\n\n", 1)[0]
    picture = {}
    for row in rows.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        picture[cells[0].strip("`")] = set(re.findall(r"`([^`]+)`", cells[2]))
    return picture


def test_the_package_picture_matches_the_imports() -> None:
    actual: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        home = _place(name)
        actual.setdefault(home, set())
        for target in targets:
            there = _place(target)
            if there != home and there.rstrip("/").removesuffix(".py") not in LEAVES:
                actual[home].add(there)
    shown = {
        home: deps
        for home, deps in actual.items()
        if home.rstrip("/").removesuffix(".py") not in LEAVES
    }
    assert _picture() == shown


def test_nothing_outside_memos_imports_it() -> None:
    # MemOS's package is an edge: the core reaches its item and config shapes by name
    # (memreader.items.ITEM_FORMATS, memreader.factory.CONFIG_FORMATS), never by import.
    ties = {
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        if not (name == "memreader.memos" or name.startswith("memreader.memos."))
        for target in targets
        if target == "memreader.memos" or target.startswith("memreader.memos.")
    }
    assert not ties, sorted(ties)
