"""The ``embed`` step: every item's memory embedded, in batched, cached calls.

=====  ========  ========  =================
step   requires  produces  modes
=====  ========  ========  =================
embed  emitted   items     fast, fine, refine
=====  ========  ========  =================

A batch that fails leaves only its items without vectors (tagged ``embedding:failed``, said in
their windows' reports); the other batches keep theirs. The call's deadline is checked before
each batch (it stops the whole call, not one batch).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memreader.embedders.base import FullEmbedder
from memreader.embedders.languages import README_SECTION, UNREADABLE_THRESHOLD, unreadable_note
from memreader.errors import EmbeddingError
from memreader.extraction import short_error
from memreader.items import TextualMemoryItem
from memreader.modes import ALL_MODES
from memreader.pipeline import Step
from memreader.steps.registry import STEPS
from memreader.steps.report import WindowReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState

__all__ = ["IN_REPORT", "Embed"]

logger = logging.getLogger(__name__)

#: Set (true) on a log record whose fact the call's report carries too (the windows' notes): a
#: caller that says the reports' notes itself, as a batch job does per input, may leave it out.
IN_REPORT = "in_report"

#: By item id: the memory the item had and what to embed for it instead, as consecutive fragments.
EmbeddingFragments = dict[str, tuple[str, tuple[str, ...]]]


@STEPS.register("embed")
class Embed(Step):
    """Every item's memory embedded, in batched, cached calls. A batch that fails leaves its
    items without a vector, tagged ``embedding:failed``, and says so in their windows' reports;
    the other batches keep theirs.

    Each window's embedded text is also checked once against what the embedder cannot read
    (``unreadable_share``: the bundled English-only model knows; see
    :mod:`memreader.embedders.languages`): its report gets the share, and a note when the
    text is mostly unreadable; one warning per call names how many windows that is."""

    name = "embed"
    requires = ("emitted",)
    produces = ("items",)
    modes = frozenset(ALL_MODES)

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        made = state.emitted
        if not made or not runtime.embeds:
            return
        embedder = runtime.embedder
        size = embedder.batch_size
        for offset in range(0, len(made), size):
            state.check_deadline(f"before embedding batch {offset // size} (items {offset}+)")
            batch = made[offset : offset + size]
            try:
                vectors = _embed_items(embedder, batch, state.embedding_fragments)
                if len(vectors) != len(batch):
                    raise EmbeddingError(
                        f"{embedder.name}: {len(vectors)} vectors for {len(batch)} texts"
                    )
            except Exception as exc:  # a failed batch is its items' record, not the call's
                error = short_error(exc)
                logger.warning(
                    "embedding %d items failed, returning them without vectors: %s",
                    len(batch),
                    error,
                    exc_info=not isinstance(exc, EmbeddingError),
                )
                for item, entry in batch:
                    item.metadata.tags.append("embedding:failed")
                    entry.embedding_error = error
                continue
            for (item, _), vector in zip(batch, vectors, strict=True):
                item.metadata.embedding = vector
                item.metadata.embedding_model = embedder.name
        _note_unreadable(made, embedder, state.embedding_fragments, runtime)


def _embedding_input(item: TextualMemoryItem, fragments: EmbeddingFragments) -> tuple[str, ...]:
    """What is embedded for ``item``: its fragments while its memory is what they were made from,
    else its memory."""
    made = fragments.get(item.id)
    return made[1] if made is not None and made[0] == item.memory else (item.memory,)


def _embed_items(
    embedder: FullEmbedder,
    batch: Sequence[tuple[TextualMemoryItem, WindowReport]],
    fragments: EmbeddingFragments,
) -> list[list[float]]:
    """The batch's vectors; items with fragments go through ``embed_fragments`` (which joins them
    unless the embedder does better). An item whose memory changed since its fragments were made
    is embedded as its memory."""
    inputs = [_embedding_input(item, fragments) for item, _ in batch]
    if any(len(p) > 1 for p in inputs):
        return embedder.embed_fragments(inputs)
    return embedder.embed(["".join(p) for p in inputs])


def _note_unreadable(
    made: Sequence[tuple[TextualMemoryItem, WindowReport]],
    embedder: FullEmbedder,
    fragments: EmbeddingFragments,
    runtime: ReaderRuntime,
) -> None:
    """Record on each window's report the share of its embedded text (what was embedded for its
    items, joined) that ``embedder`` cannot read, with a note when that is
    :data:`~memreader.embedders.languages.UNREADABLE_THRESHOLD` or more, and log one warning
    for all such windows, once per reader (:meth:`ReaderRuntime.advise`: the advice is to
    choose another embedder; every call's report still notes its windows). An embedder that
    does not know (``None``) leaves the reports as they are. A check that fails leaves its
    window as it was (one warning with the first traceback)."""
    name = embedder.name
    windows: dict[int, tuple[WindowReport, list[str]]] = {}
    for item, entry in made:
        windows.setdefault(id(entry), (entry, []))[1].append(
            "".join(_embedding_input(item, fragments))
        )
    noted: list[float] = []
    failed: list[Exception] = []
    for entry, memories in windows.values():
        try:
            share = embedder.unreadable_share(
                memories[0] if len(memories) == 1 else "\n".join(memories)
            )
            if share is None:
                continue
            if not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
                raise EmbeddingError(f"unreadable_share gave {share!r}, not a share in [0, 1]")
        except Exception as exc:  # the check is advice: its failure never costs the window
            failed.append(exc)
            continue
        entry.unreadable_share = float(share)
        if share >= UNREADABLE_THRESHOLD:
            entry.notes.append(unreadable_note(share, name))
            noted.append(share)
    if failed:
        logger.warning(
            "%s: checking %d of %d windows for text the embedder cannot read failed: %s",
            name,
            len(failed),
            len(windows),
            short_error(failed[0]),
            exc_info=failed[0],
        )
    if noted:
        low, high = int(min(noted) * 100), int(max(noted) * 100)
        runtime.advise(
            logger,
            f"unreadable:{name}",
            "%d of %d windows are mostly text the embedder %s cannot read (%s of their "
            "letters); their vectors say little about them (see the windows' report notes, "
            "and '%s' in the docs' Fast mode; said once per reader)",
            len(noted),
            len(windows),
            name,
            f"{low}%" if low == high else f"{low}% to {high}%",
            README_SECTION,
            **{IN_REPORT: True},
        )
