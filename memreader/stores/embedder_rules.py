"""Which embedder a store searches with, and whether it is the one its memories were embedded
with; both backends follow these rules, each with its own query.

- **No embedder is said out loud.** A store opened without an embedder searches by words only,
  so forgetting one would silently turn vector search off: :func:`store_embedder` refuses it
  (:class:`~memreader.errors.MissingEmbedderError`) unless the caller passes ``text_only=True``.
- **Another model is said once.** At an owner's first search that uses vectors, the store
  compares its embedder's ``name`` with the models of the owner's active vectors, once per owner
  and open store (:func:`watch_models`: PostgreSQL runs one aggregate query
  over the owner's rows; the embedded store counts the vectors its search loads anyway), and
  logs one warning naming the models and how many memories each embedded. A warning, not an
  error: a user who switches models on purpose still searches (full text finds every memory,
  and the new model's vectors are compared with the query) while re-adding the old memories,
  and :meth:`~memreader.stores.base.MemoryStore.embedding_models` shows the mix.
- **Same vectors, other names are one model** (:func:`model_family`): memreader's embedders add
  ``:int8`` (int8 weights, used only where the CPU passes the check against fp32: cosine 0.97
  or more) and ``:unnormalized`` (the same direction: both stores compare by cosine) to a
  model's name; neither makes its vectors another model's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from memreader.errors import ConfigError, MissingEmbedderError
from memreader.stores.checks import check_owner
from memreader.stores.embedding import QueryEmbedder

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend

__all__ = [
    "QueryEmbedder",
    "embedding_models",
    "foreign_models",
    "model_family",
    "store_embedder",
    "watch_models",
]

logger = logging.getLogger(__name__)

#: Name parts that change how a model's vectors are computed or scaled, not what they mean.
SAME_SPACE = frozenset({"int8", "fp32", "unnormalized"})
#: Owners one open store remembers as checked; past it, it starts again (a search then costs
#: one more aggregate query per owner).
WATCHED_OWNERS = 100_000

_LOCK = threading.Lock()


def store_embedder(
    embedder: QueryEmbedder | None, text_only: bool, where: str
) -> QueryEmbedder | None:
    """``embedder``, checked: a store searches with it, or (``None``) by words only, which the
    caller must have asked for with ``text_only=True``; ``where`` names the store.

    >>> store_embedder(None, True, "sqlite store m.db") is None
    True
    >>> store_embedder(None, False, "sqlite store m.db")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memreader.errors.MissingEmbedderError: sqlite store m.db was opened without an embedder, ...

    Raises:
        MissingEmbedderError: no embedder and not ``text_only``.
        ConfigError: ``text_only`` with an embedder, ``text_only`` not a bool, or an embedder
            without ``embed(texts)``.
    """
    if not isinstance(text_only, bool):
        raise ConfigError(f"{where}: text_only must be true or false, got {text_only!r}")
    if embedder is None:
        if not text_only:
            raise MissingEmbedderError(
                f"{where} was opened without an embedder, so its search would compare words "
                "only and never vectors. Pass embedder= (the one its memories were embedded "
                "with, e.g. reader.embedder), or text_only=True to search by words on purpose"
            )
        return None
    if text_only:
        raise ConfigError(
            f"{where}: text_only=True with an embedder; pass one or the other "
            "(an embedder is used for every search)"
        )
    if not isinstance(embedder, QueryEmbedder):
        raise ConfigError(f"store embedder must have embed(texts), got {type(embedder)!r}")
    return embedder


def model_family(name: str) -> str:
    """The model ``name`` (an embedder's ``name``, a row's ``embedding_model``) embeds with:
    ``name`` without the parts after the model that do not change what vectors mean
    (:data:`SAME_SPACE`).

    >>> model_family("local:all-MiniLM-L6-v2:int8"), model_family("local:all-MiniLM-L6-v2")
    ('local:all-MiniLM-L6-v2', 'local:all-MiniLM-L6-v2')
    >>> model_family("static:all-MiniLM-L6-v2:256d:unnormalized")
    'static:all-MiniLM-L6-v2:256d'
    """
    parts = name.split(":")
    return ":".join(parts[:2] + [part for part in parts[2:] if part not in SAME_SPACE])


def foreign_models(embedder_name: str, found: Mapping[str, int]) -> dict[str, int]:
    """The models of ``found`` (model -> how many memories, as
    :func:`embedding_models` gives them) that are not ``embedder_name``'s
    (:func:`model_family`); vectors stored without a model name (``""``) cannot be told apart
    and are left out.

    >>> foreign_models("local:m:int8", {"local:m": 3, "": 1, "openai:e": 2})
    {'openai:e': 2}
    """
    family = model_family(embedder_name)
    return {m: n for m, n in found.items() if m and model_family(m) != family}


def embedding_models(store: StoreBackend, *, user_id: str | None = None) -> dict[str, int]:
    """The models that embedded the active memories of ``user_id`` (every owner when
    ``None``: that reads every active row, for a report, not per search) that have a
    vector: model name -> how many, by name; ``""`` counts vectors stored without a name.

    Raises:
        InputError: ``user_id`` is not a non-empty string.
        StoreError: the store failed.
    """
    owner = check_owner(user_id) if user_id is not None else None
    return dict(sorted(store._embedding_models(owner).items()))


def watch_models(store: StoreBackend, owner: str) -> None:
    """At ``owner``'s first search with vectors on this store: log one warning when the
    store's embedder is not the model of some of the owner's active vectors."""
    name = getattr(store.embedder, "name", None)
    if not isinstance(name, str):
        return  # text only, or an embedder without a name: nothing to compare
    with _LOCK:
        seen: set[str] = store.__dict__.setdefault("_models_watched", set())
        if owner in seen:
            return
        if len(seen) >= WATCHED_OWNERS:
            seen.clear()
        seen.add(owner)
    found = store._watched_models(owner)
    foreign = foreign_models(name, found)
    if not foreign:
        return
    models = ", ".join(f"{model!r} ({n})" for model, n in sorted(foreign.items()))
    logger.warning(
        "%r: owner %r has %d active memories with a vector, %d of them embedded with "
        "another model than this store's embedder %r: %s. Their vector scores mean nothing "
        "(full text still finds them): open the store with the embedder they were embedded "
        "with, or add them again with this one (store.embedding_models() shows the mix)",
        store,
        owner,
        sum(found.values()),
        sum(foreign.values()),
        name,
        models,
    )
