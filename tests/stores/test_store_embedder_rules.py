"""Which embedder a store searches with, through the public API on both backends (the ``url``
fixture of tests/stores/conftest.py): a store opened without one refuses unless text-only search
is asked for by name; a store opened with another model than its memories' says so once per
owner, and shows what it found; a hit shows its memory's id, text, type and session."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

import pytest

from memreader.errors import ConfigError, MissingEmbedderError
from memreader.stores import STORES, SourceSelector, open_store
from memreader.stores.embedder_rules import model_family
from memreader.stores.urls import public_url
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item

INT8 = "local:all-MiniLM-L6-v2:int8"
FP32 = "local:all-MiniLM-L6-v2"
RULES_LOGGER = "memreader.stores.embedder_rules"


class Named:
    """An embedder called ``name`` whose every vector is the same unit vector."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


def axis(i: int) -> list[float]:
    """The unit vector along axis ``i`` of 4 (distinct memories: none a near duplicate)."""
    return [1.0 if j == i else 0.0 for j in range(4)]


def _stored(url: str) -> None:
    """Owner u1: two memories embedded by the int8 local model, one by an OpenAI model, one
    expired one by a third model; owner u2: one by the OpenAI model."""
    with open_store(url, text_only=True) as store:
        store.write(
            [
                item("a", "Ana lives in Porto.", vector=axis(0), model=INT8),
                item("b", "Ana teaches piano.", vector=axis(1), model=INT8),
                item("c", "Ana likes green tea.", vector=axis(2), model="openai:text-embedding-3"),
                item("d", "Ana had a cat.", vector=axis(3), model="ollama:nomic", doc="old.md"),
                item(
                    "e",
                    "Bo likes jazz.",
                    user="u2",
                    vector=axis(0),
                    model="openai:text-embedding-3",
                ),
            ],
            now=T0,
        )
        store.forget(SourceSelector(doc_path="old.md"), user_id="u1", now=T0 + timedelta(days=1))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == RULES_LOGGER]


# -- no embedder only by name ----------------------------------------------------------------------


def test_a_store_opened_without_an_embedder_refuses_and_says_how_to_fix_it(url: str) -> None:
    with pytest.raises(MissingEmbedderError) as caught:
        open_store(url)
    message = str(caught.value)
    assert isinstance(caught.value, ConfigError)
    assert "opened without an embedder" in message
    assert "embedder=" in message and "text_only=True" in message
    assert public_url(url) in message  # which store, its password masked


def test_the_store_classes_refuse_it_too(url: str) -> None:
    store_class = STORES.get(url.partition("://")[0])
    with pytest.raises(MissingEmbedderError, match="text_only=True"):
        store_class.from_url(url)


def test_text_only_by_name_opens_and_searches_words(url: str) -> None:
    with open_store(url, text_only=True) as store:
        assert store.embedder is None
        store.write([item("a", "Ana lives in Porto.")], now=T0)
        hits = store.search("Porto", user_id="u1", now=T0)
    assert [hit.id for hit in hits] == ["a"]


def test_text_only_with_an_embedder_is_a_contradiction(url: str) -> None:
    with pytest.raises(ConfigError, match="text_only=True with an embedder"):
        open_store(url, embedder=HashEmbedder(), text_only=True)


def test_text_only_must_be_a_bool(url: str) -> None:
    with pytest.raises(ConfigError, match="text_only must be true or false"):
        open_store(url, text_only="yes")  # type: ignore[arg-type]


# -- another model says so -------------------------------------------------------------------------


def test_embedding_models_counts_active_vectors_by_model(url: str) -> None:
    _stored(url)
    with open_store(url, text_only=True) as store:
        assert store.embedding_models(user_id="u1") == {INT8: 2, "openai:text-embedding-3": 1}
        assert store.embedding_models(user_id="u2") == {"openai:text-embedding-3": 1}
        assert store.embedding_models(user_id="nobody") == {}
        assert store.embedding_models() == {INT8: 2, "openai:text-embedding-3": 2}


def test_another_model_is_said_once_per_owner(url: str, caplog: pytest.LogCaptureFixture) -> None:
    _stored(url)
    embedder = Named("openai:text-embedding-3")
    caplog.set_level(logging.WARNING, logger=RULES_LOGGER)
    with open_store(url, embedder=embedder) as store:
        for _ in range(3):
            store.search("where does Ana live?", user_id="u1", now=T0)
        said = _warnings(caplog)
        assert len(said) == 1
        assert "owner 'u1' has 3 active memories with a vector, 2 of them" in said[0]
        assert repr(INT8) in said[0] and "(2)" in said[0]
        assert "'openai:text-embedding-3'" in said[0]
        assert "store.embedding_models()" in said[0]
        store.search("jazz", user_id="u2", now=T0)  # u2's vectors are this model's
        assert len(_warnings(caplog)) == 1


def test_a_text_search_does_not_check_models(url: str, caplog: pytest.LogCaptureFixture) -> None:
    _stored(url)
    caplog.set_level(logging.WARNING, logger=RULES_LOGGER)
    with open_store(url, embedder=Named("openai:text-embedding-3")) as store:
        store.search("Porto", user_id="u1", now=T0, mode="text")
        assert _warnings(caplog) == []
        store.search("Porto", user_id="u1", now=T0)
        assert len(_warnings(caplog)) == 1


def test_int8_and_fp32_of_one_model_are_one_model(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with open_store(url, text_only=True) as store:
        store.write(
            [
                item("a", "Ana lives in Porto.", vector=axis(1), model=INT8),
                item("b", "Ana teaches piano.", vector=axis(2), model=FP32),
                item("c", "Ana sings.", vector=axis(3), model=f"{FP32}:unnormalized"),
                item("d", "Ana hums.", vector=axis(0)),  # no model name: cannot be told
            ],
            now=T0,
        )
    caplog.set_level(logging.WARNING, logger=RULES_LOGGER)
    for name in (FP32, INT8):
        with open_store(url, embedder=Named(name)) as store:
            assert store.search("Porto", user_id="u1", now=T0)
    assert _warnings(caplog) == []


def test_model_family_keeps_what_changes_the_vectors() -> None:
    assert model_family(INT8) == model_family(FP32) == FP32
    assert model_family("static:all-MiniLM-L6-v2:256d") != model_family(FP32)
    assert (
        model_family("openai:text-embedding-3-small:256d") == "openai:text-embedding-3-small:256d"
    )


# -- a hit, flat ---------------------------------------------------------------------------------


def test_a_hit_shows_its_memory_at_the_top(url: str) -> None:
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write([item("a", "Ana lives in Porto.", session="s7", memory_type="UserMemory")])
        (hit,) = store.search("Porto", user_id="u1")
    assert (hit.id, hit.text, hit.memory_type, hit.session_id) == (
        "a",
        "Ana lives in Porto.",
        "UserMemory",
        "s7",
    )
    assert hit.text == hit.memory.item.memory and hit.id == hit.memory.id
