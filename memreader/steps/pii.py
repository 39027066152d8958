"""Personal data masked: the ``redact`` step. E-mail addresses, phone numbers and card-like
numbers are masked before windowing, so no window, prompt, item, source or embedding input holds
them.

It runs on the parsed units (insert it after ``parse``), so it sees every text a window will
show: message text, document text and the placeholders of tool calls and files. Role and time
prefixes are not changed.

Provenance after a text-changing step: spans index the **redacted** text. Every source whose
message was changed lists the step in ``transformed_by`` (``["redact"]``), and
``redact_text(original)[start:end] == source.content`` holds for it; a source with an empty
``transformed_by`` still indexes the caller's text itself. Redaction is deterministic, so a
caller who keeps the original can always recompute what a span points into.

What is recognised (no library can promise every format in the world; these are documented
so they can be tested):

- ``email``: ``local@domain.tld`` with the RFC 5322 characters in the local part.
- ``card``: 13 to 19 digits, optionally grouped by single spaces or dashes (any such number,
  Luhn-valid or not: account numbers are as private as card numbers).
- ``phone``: 9 to 15 digits, optionally with a leading ``+`` country code and parentheses, in
  groups separated by single spaces, dots or dashes (``+1 (555) 123-4567``, ``020 7946 0958``,
  ``555.123.4567``, ``+4915112345678``). ISO dates (``2026-05-10``, 8 digits) are left alone.

>>> redact_text("Mail ann@example.org or call +1 (555) 123-4567.")
'Mail [email] or call [phone].'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from memreader.pipeline import Step
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState

__all__ = ["KINDS", "Redact", "redact_text"]

_EMAIL = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
)
_CARD = re.compile(r"(?<![\d+])\d(?:[ -]?\d){12,18}(?!\d)")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,5}\)[ .-]?)?\d{1,5}(?:[ .-]?\d{1,5}){1,5}(?![\w])"
)
_DIGITS = re.compile(r"\d")

#: The kinds ``redact`` knows, in the order they are applied.
KINDS = ("email", "card", "phone")


def _phone(match: re.Match[str], mask: str) -> str:
    text = match.group(0)
    digits = len(_DIGITS.findall(text))
    if not 9 <= digits <= 15:
        return text
    return mask


def redact_text(text: str, kinds: Iterable[str] = KINDS, mask: str = "[{kind}]") -> str:
    """``text`` with every value of ``kinds`` replaced by ``mask`` (``{kind}`` names it)."""
    wanted = set(kinds)
    if "email" in wanted and "@" in text:
        text = _EMAIL.sub(mask.format(kind="email"), text)
    if not _DIGITS.search(text):
        return text
    if "card" in wanted:
        text = _CARD.sub(mask.format(kind="card"), text)
    if "phone" in wanted:
        phone_mask = mask.format(kind="phone")
        text = _PHONE.sub(lambda m: _phone(m, phone_mask), text)
    return text


@STEPS.register("redact")
class Redact(Step):
    """Masks e-mail addresses, phone numbers and card-like numbers in every unit (see the
    module docstring). Insert it after ``parse``.

    Args:
        kinds: which kinds to mask (default: all of :data:`KINDS`).
        mask: the replacement; ``{kind}`` becomes the kind's name.
    """

    name = "redact"
    requires = ("units",)
    produces = ("units",)

    def __init__(self, kinds: Sequence[str] = KINDS, mask: str = "[{kind}]") -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown kinds {sorted(unknown)}; known: {list(KINDS)}")
        if not isinstance(mask, str):
            raise ValueError("mask must be a string")
        self.kinds = tuple(kinds)
        self.mask = mask

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        for units in state.units:
            for i, unit in enumerate(units):
                text = redact_text(unit.text, self.kinds, self.mask)
                if text != unit.text:
                    units[i] = replace(unit, text=text, transforms=(*unit.transforms, self.name))
