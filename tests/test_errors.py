"""The error tree drawn in ``memreader/errors.py``'s docstring is the tree the classes make: every
``MemReaderError`` subclass of the package is drawn, under its real parent, and nothing else is."""

from __future__ import annotations

import importlib
import pkgutil
import re

import memreader
from memreader import errors
from memreader.errors import MemReaderError


def _drawn() -> dict[str, str]:
    """Each drawn class name -> the name drawn as its parent."""
    doc = errors.__doc__ or ""
    lines = [line for line in doc.splitlines() if re.search(r"[├└]── |^    MemReaderError", line)]
    parents: dict[str, str] = {}
    stack: list[str] = []
    for line in lines:
        name = re.search(r"(\w+)", line.split("── ")[-1]).group(1)  # type: ignore[union-attr]
        depth = 0 if "── " not in line else (line.index("── ") - 4) // 4 + 1
        del stack[depth:]
        if stack:
            parents[name] = stack[-1]
        stack.append(name)
    return parents


def _classes() -> dict[str, type[BaseException]]:
    """Every MemReaderError subclass defined in the package (all modules imported)."""
    for module in pkgutil.walk_packages(memreader.__path__, "memreader."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: dict[str, type[BaseException]] = {}
    todo: list[type[BaseException]] = [MemReaderError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("memreader.") and not sub.__name__.startswith("_"):
                found[sub.__name__] = sub
                todo.append(sub)
    return found


def test_the_drawn_error_tree_is_the_class_tree() -> None:
    drawn = _drawn()
    classes = _classes()
    assert set(drawn) == set(classes), (
        f"drawn but not defined: {sorted(set(drawn) - set(classes))}; "
        f"defined but not drawn: {sorted(set(classes) - set(drawn))}"
    )
    for name, parent in drawn.items():
        bases = [b.__name__ for b in classes[name].__bases__]
        assert parent in bases, f"{name} is drawn under {parent}, but its bases are {bases}"
