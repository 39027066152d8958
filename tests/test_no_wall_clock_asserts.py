"""No test asserts a wall-clock time: a bound on seconds fails on a loaded machine (one such
assert failed ``make test`` at 2.056 s against ``< 2.0``). A test of speed counts work instead
(``tests/work_counting.py``: lines executed, bytes inflated, calls, requests), a deadline test
asserts the typed timeout error and what was (not) done, with a generous bounded wait only as a
safety net, and a measurement belongs in ``benchmarks/``.

This scans every Python file under ``tests/`` with :mod:`ast` for an ``assert`` that compares a
clock reading (``time.perf_counter()``, ``monotonic()``, ``time()``..., a variable assigned from
one, or what a helper returning one gives) or a measured duration attribute (``elapsed_s``,
``wall_s``...) with an ordering operator, so that new ones are caught.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CLOCKS = frozenset(
    {
        "perf_counter",
        "perf_counter_ns",
        "monotonic",
        "monotonic_ns",
        "process_time",
        "process_time_ns",
        "time",
        "time_ns",
        "default_timer",
        "thread_time",
    }
)
#: Attributes holding a duration the code under test measured.
DURATION_ATTRIBUTES = ("elapsed", "elapsed_s", "wall_s", "seconds", "duration", "took")
#: Attributes holding a clock reading (a difference of two is a duration).
READING_ATTRIBUTES = frozenset({"received_at", "started_at", "finished_at", "ended_at", "sent_at"})
#: A target unpacked from a helper returning a clock reading is a duration when named so.
DURATION_NAMES = ("elapsed", "took", "duration", "seconds", "wall", "time")
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq)


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        # time.time(), time.perf_counter(), loop.time(), timeit.default_timer()
        return func.attr in CLOCKS and (func.attr != "time" or _names(func.value) <= {"time"})
    return isinstance(func, ast.Name) and func.id in CLOCKS - {"time"}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


_Function = ast.FunctionDef | ast.AsyncFunctionDef


class _Clocks:
    """Which names hold a clock reading in a scope (``started = monotonic()``, ``elapsed =
    monotonic() - started``), and which functions return one (``return outcome, monotonic() -
    started``): a fixed point over the assignments of each function (and of the module)."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions: set[str] = set()
        self.scopes: dict[ast.AST, set[str]] = {}
        scopes: list[ast.AST] = [tree, *(n for n in ast.walk(tree) if isinstance(n, _Function))]
        size = -1
        while size != self._size():
            size = self._size()
            for scope in scopes:
                names = self.scopes.setdefault(scope, set())
                for node in _own_nodes(scope):
                    if isinstance(node, ast.Assign):
                        self._assign(names, node.targets, node.value)
                    elif isinstance(node, ast.AnnAssign) and node.value is not None:
                        self._assign(names, [node.target], node.value)
                    elif isinstance(node, ast.Return) and self.timed(node.value, names):
                        assert isinstance(scope, _Function)
                        self.functions.add(scope.name)

    def _size(self) -> int:
        return len(self.functions) + sum(len(names) for names in self.scopes.values())

    def timed(self, node: ast.AST | None, names: set[str]) -> bool:
        """Whether ``node`` reads a clock, a name holding a reading, or a function returning
        one."""
        if node is None:
            return False
        for sub in ast.walk(node):
            if _is_clock_call(sub) or (isinstance(sub, ast.Name) and sub.id in names):
                return True
            if isinstance(sub, ast.Attribute) and sub.attr in READING_ATTRIBUTES:
                return True
            called = sub.func if isinstance(sub, ast.Call) else None
            if isinstance(called, ast.Name) and called.id in self.functions:
                return True
        return False

    def _assign(self, names: set[str], targets: list[ast.expr], value: ast.AST) -> None:
        if not self.timed(value, names):
            return
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif isinstance(target, ast.Tuple):
                names.update(
                    element.id
                    for element in target.elts
                    if isinstance(element, ast.Name)
                    and any(word in element.id.lower() for word in DURATION_NAMES)
                )


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` outside the functions defined in it."""
    nodes: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        nodes.append(node)
        if not isinstance(node, _Function | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return nodes


def _duration_attribute(node: ast.AST) -> bool:
    return any(
        isinstance(sub, ast.Attribute) and sub.attr in DURATION_ATTRIBUTES for sub in ast.walk(node)
    )


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def wall_clock_asserts(source: str, filename: str = "<test>") -> list[str]:
    """``file:line: text`` of every assert in ``source`` that compares a wall-clock time."""
    tree = ast.parse(source, filename)
    clocks = _Clocks(tree)
    found = []
    # Each assert sees the names of its function and of every function (and module) around it.
    visible: dict[ast.AST, set[str]] = {}
    stack: list[tuple[ast.AST, set[str]]] = [(tree, clocks.scopes[tree])]
    while stack:
        node, names = stack.pop()
        visible[node] = names
        for child in ast.iter_child_nodes(node):
            inner = names | clocks.scopes[child] if isinstance(child, _Function) else names
            stack.append((child, inner))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        names = visible[node]
        for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            operands = [compare.left, *compare.comparators]
            if not any(isinstance(op, ORDERING) for op in compare.ops):
                continue
            timed = any(clocks.timed(operand, names) for operand in operands)
            # A measured duration compared with anything but 0 (``elapsed_s >= 0`` only
            # checks the field is filled in).
            measured = any(_duration_attribute(o) for o in operands) and not any(
                _is_zero(o) for o in operands
            )
            if timed or measured:
                found.append(f"{filename}:{node.lineno}: {ast.unparse(node)[:120]}")
                break
    return found


def _samples(path: Path) -> dict[str, list[str]]:
    """The sample sources of ``path``, by section (see the file's header)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for block in re.split(r"^(== \w+)\n", path.read_text(encoding="utf-8"), flags=re.M)[1:]:
        if block.startswith("== "):
            current = sections.setdefault(block[3:], [])
        elif current is not None:
            current.extend(s.strip("\n") for s in re.split(r"^---\n", block, flags=re.M))
    return sections


#: Sources the scan must flag, and sources it must leave alone: in a text file, so that no
#: scan of the test sources takes these samples for real asserts.
SAMPLES = _samples(Path(__file__).parent / "wall_clock_samples.txt")


def test_no_test_asserts_a_wall_clock_time() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        found += wall_clock_asserts(path.read_text(encoding="utf-8"), path.name)
    assert found == [], "count work instead of timing it (tests/work_counting.py):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize("source", SAMPLES["flagged"])
def test_the_scan_finds_wall_clock_asserts(source: str) -> None:
    assert len(wall_clock_asserts(source)) == 1, source


@pytest.mark.parametrize("source", SAMPLES["allowed"])
def test_the_scan_leaves_other_asserts_alone(source: str) -> None:
    assert wall_clock_asserts(source) == [], source


def test_the_samples_are_read() -> None:
    # An empty section would parametrize nothing: the self-tests above would pass unrun.
    assert len(SAMPLES["flagged"]) == 9 and len(SAMPLES["allowed"]) == 8
