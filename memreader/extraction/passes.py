"""The passes of fine mode, registered by name: adding a pass is one :func:`register_pass`.

A pass is a step of fine mode that ``fine.passes`` switches on by name. Its entry says which
module defines its step (registered in :data:`~memreader.steps.registry.STEPS` under the pass's
name, and built without arguments), where it runs (``order``), which passes it needs, and
whether it runs when ``fine.passes`` is not set. The config checks ``fine.passes`` against these
entries; the readers build the pass steps from them, in order: a pass whose step requires the
call's ``items`` runs after fine mode's items are built, the others between ``prepare_fine``
and the items, chained per window.

This module is low (the config imports it): it names the step modules, never imports them.

>>> [p.name for p in passes_in_order(["rewrite", "extract"])]
['extract', 'rewrite']
>>> PASSES.get("skill").needs
('tool',)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memreader.registry import Registry

__all__ = ["BUILTIN_PASSES", "PASSES", "FinePass", "passes_in_order", "register_pass"]


@dataclass(frozen=True)
class FinePass:
    """One pass of fine mode (see the module docstring).

    Attributes:
        name: what ``fine.passes`` lists; also the name its step is registered under.
        module: the module that defines and registers its step (imported on first use).
        order: where it runs among the passes (lower first).
        needs: the passes it works on (``skill`` needs ``tool``).
        default: whether it runs when ``fine.passes`` is not set.
        required: whether every list of passes must hold it (``extract``).
        summary: what it makes, for messages.
    """

    name: str
    module: str
    order: int
    needs: tuple[str, ...] = ()
    default: bool = False
    required: bool = False
    summary: str = ""


#: The passes by name: the built-ins below, and the plugins' through :func:`register_pass`.
PASSES: Registry[FinePass] = Registry("fine pass")


def register_pass(entry: FinePass) -> FinePass:
    """Register a pass (a plugin does it in the module its entry point names)."""
    return PASSES.register(entry.name, entry)


def passes_in_order(names: Iterable[str]) -> list[FinePass]:
    """The passes ``names`` lists, in run order (an unknown name is a ``ConfigError``)."""
    return sorted((PASSES.get(name) for name in names), key=lambda p: (p.order, p.name))


_FINE, _AGENT = "memreader.steps.fine", "memreader.steps.agent"
#: The passes that ship.
BUILTIN_PASSES = (
    FinePass(
        "extract",
        _FINE,
        10,
        default=True,
        required=True,
        summary="the other passes work on its windows",
    ),
    FinePass("filter", _FINE, 20, default=True, summary="drops memories the messages do not back"),
    FinePass("rewrite", _FINE, 30, default=True, summary="names for pronouns, absolute dates"),
    FinePass("tool", _AGENT, 40, summary="tool trajectories"),
    FinePass("preference", _AGENT, 50, summary="the user's preferences"),
    FinePass("skill", _AGENT, 60, needs=("tool",), summary="skills from successful tool use"),
    FinePass(
        "tool_schema",
        "memreader.steps.tool_schema",
        70,
        default=True,
        summary="one item per distinct tool schema, no LLM",
    ),
    FinePass(
        "reconcile",
        "memreader.steps.reconcile",
        80,
        summary="new memories against the stored ones they resemble (needs a store)",
    ),
)
for _entry in BUILTIN_PASSES:
    register_pass(_entry)
