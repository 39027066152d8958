"""How the CLI shows an :class:`~memreader.stores.erasure.EraseReceipt` (``memreader delete
--erase``, ``memreader forget``): one line per part, after the events; ``--json`` prints
:meth:`~memreader.stores.erasure.EraseReceipt.to_dict` instead.

>>> from memreader.stores import EraseReceipt
>>> print_receipt(EraseReceipt("u1", "memory:a", erased=("a",), removed={"memories": 1}))
erased:     a
removed:    memories 1
"""

from __future__ import annotations

from collections.abc import Mapping

from memreader.stores import EraseReceipt

__all__ = ["print_receipt"]


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{place} {n}" for place, n in counts.items())


def print_receipt(receipt: EraseReceipt) -> None:
    """Print the parts of ``receipt`` that hold something, one line each."""
    lines = [
        ("erased", " ".join(receipt.erased)),
        ("expired", " ".join(receipt.expired)),
        ("reduced", " ".join(receipt.reduced)),
        ("removed", _counts(receipt.removed)),
        ("rewritten", _counts(receipt.rewritten)),
        ("categories", " ".join(receipt.categories)),
    ]
    lines += [("file", step) for step in receipt.file_steps]
    lines += [("residue", place) for place in receipt.residue]
    for name, value in lines:
        if value:
            print(f"{name + ':':<11} {value}")
