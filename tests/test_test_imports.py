"""No test module imports another test module or a conftest.py: what tests share lives in
helper modules (tests/common.py, tests/<folder>/<helper>.py) and fixtures in conftest.py files,
so a test module can move or be deleted without breaking another. A step a job config names by
``module:attr`` lives in a helper module too, unless the module names itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: A ``module:attr`` step reference to a test module, in a string.
REFERENCE = re.compile(r"\b(tests(?:\.\w+)*\.(?:test_\w+|conftest)):\w+")


def _is_test_module(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    return name.startswith("tests.") and (leaf.startswith("test_") or leaf == "conftest")


def _module_name(path: Path) -> str:
    return ".".join(("tests", *path.relative_to(TESTS).with_suffix("").parts))


def _imports(tree: ast.Module) -> set[str]:
    """Every module an import statement in ``tree`` names (``from a import b`` names ``a``
    and ``a.b``: ``b`` may be a module)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_test_module_imports_another_or_a_conftest() -> None:
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        own = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bad = {name for name in _imports(tree) if _is_test_module(name) and name != own}
        bad |= {ref for ref in REFERENCE.findall(path.read_text(encoding="utf-8")) if ref != own}
        if bad:
            found[str(path.relative_to(TESTS))] = sorted(bad)
    assert found == {}


def test_the_check_sees_an_import_and_a_step_reference() -> None:
    tree = ast.parse("from tests.batch.test_batch import write_job\nfrom tests import conftest\n")
    assert {n for n in _imports(tree) if _is_test_module(n)} == {
        "tests.batch.test_batch",
        "tests.conftest",
    }
    slow = "tests.batch." + "test_batch:Slow"  # split: this file's own text is scanned too
    text = f'{{"step": "{slow}"}}, {{"step": "tests.batch.jobs:Slow"}}'
    assert REFERENCE.findall(text) == ["tests.batch.test_batch"]
