"""Named LLM profiles: a fine pass or a slot picks one of ``llm_profiles`` by name, and its calls
go to that profile's server (two real servers, requests counted on each); usage is reported per
profile; a name the config does not define is a ``ConfigError`` naming where and what."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.errors import ConfigError
from memreader.factory import MemReaderConfigFactory
from memreader.steps.report import ReadReport
from tests.common import HASH_EMBEDDER, INFO
from tests.fine_script import CHAT, kind, scripted_responder
from tests.llm_server import LLMTestServer, Reply, openai_completion


@pytest.fixture
def servers() -> Iterator[tuple[LLMTestServer, LLMTestServer]]:
    with LLMTestServer() as big, LLMTestServer() as fast:
        big.responder = scripted_responder()
        fast.responder = scripted_responder()
        yield big, fast


def llm(server: LLMTestServer, model: str) -> dict[str, Any]:
    return {"backend": "openai", "model": model, "base_url": server.url, "max_retries": 0}


def kinds(server: LLMTestServer) -> list[str]:
    return sorted(kind(r) for r in server.requests)


def config(**settings: Any) -> SimpleStructMemReaderConfig:
    return SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER, window={"max_tokens": 256, "overlap_tokens": 32}, **settings
    )


def test_a_pass_that_picks_a_profile_sends_its_calls_to_that_profiles_server(
    servers: tuple[LLMTestServer, LLMTestServer],
) -> None:
    big, fast = servers
    reader = SimpleStructMemReader(
        config(
            llm=llm(big, "big"),
            llm_profiles={"fast": llm(fast, "small")},
            fine={"passes": ["extract", {"name": "filter", "llm_profile": "fast"}, "rewrite"]},
        )
    )
    report = ReadReport()
    items = reader.get_memory(CHAT, "chat", dict(INFO), mode="fine", report=report)
    assert kinds(fast) == ["memory_filter"]
    assert kinds(big) == ["memory_extraction", "memory_rewrite"]
    assert fast.requests[0].json["model"] == "small"
    # The filter's answer (from the fast profile) was used: the cat is gone.
    assert not any("cat" in item.memory for item in items[0])
    assert report.usage is not None
    assert dict(report.usage.requests_by_profile) == {"fast": 1}
    assert report.usage.by_profile["fast"].total_tokens == 120
    # The call is still the filter's slot's: per-slot counts keep their meaning.
    assert report.usage.requests_by_slot["general_llm"] == 2
    assert report.to_dict()["usage"]["requests_by_profile"] == {"fast": 1}


def test_an_async_read_routes_a_pass_to_its_profile_too(
    servers: tuple[LLMTestServer, LLMTestServer],
) -> None:
    big, fast = servers
    reader = SimpleStructMemReader(
        config(
            llm=llm(big, "big"),
            llm_profiles={"fast": llm(fast, "small")},
            fine={"passes": [{"name": "extract", "llm_profile": "fast"}, "filter"]},
        )
    )
    asyncio.run(reader.aget_memory(CHAT, "chat", dict(INFO), mode="fine"))
    assert kinds(fast) == ["memory_extraction"]
    assert kinds(big) == ["memory_filter"]


def test_a_slot_names_a_profile_and_the_default_profile_serves_llm(
    servers: tuple[LLMTestServer, LLMTestServer],
) -> None:
    big, fast = servers
    # memU's shape: no slots of their own, a `default` profile and a slot that names another.
    factory = MemReaderConfigFactory.from_dict(
        {
            "backend": "simple_struct",
            "config": {
                "embedder": HASH_EMBEDDER,
                "llm_profiles": {"default": llm(big, "big"), "fast": llm(fast, "small")},
                "general_llm": "fast",
            },
        }
    )
    reader = factory.build()
    report = ReadReport()
    reader.get_memory(CHAT, "chat", dict(INFO), mode="fine", report=report)
    assert kinds(big) == ["memory_extraction"]
    assert kinds(fast) == ["memory_filter", "memory_rewrite"]
    assert report.usage is not None
    assert dict(report.usage.requests_by_profile) == {"default": 1, "fast": 2}


def test_a_config_with_profiles_reads_back_the_same_from_its_dump(
    servers: tuple[LLMTestServer, LLMTestServer],
) -> None:
    big, fast = servers
    first = config(
        llm_profiles={"fast": llm(fast, "small")},
        llm=llm(big, "big"),
        image_parser_llm="fast",
        fine={"passes": ["extract", {"name": "rewrite", "llm_profile": "fast"}]},
    )
    again = SimpleStructMemReaderConfig.model_validate(first.model_dump())
    assert again.fine.passes == ["extract", "rewrite"]
    assert again.fine.pass_profiles == {"rewrite": "fast"}
    assert again.image_parser_llm == "fast"
    assert again.resolve("image_parser_llm") == first.llm_profiles["fast"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"fine": {"passes": ["extract", {"name": "filter", "llm_profile": "fsat"}]}},
            r"fine pass 'filter' names the LLM profile 'fsat', which llm_profiles does not "
            r"define \(defined: fast\)",
        ),
        (
            {"general_llm": "fsat"},
            "general_llm names the LLM profile 'fsat', which llm_profiles does not define",
        ),
        (
            {
                "llm_interceptors": [
                    {"name": "rate_limit", "requests_per_minute": 5, "profile": "x"}
                ]
            },
            r"llm_interceptors\[0\] \(rate_limit\) names the LLM profile 'x'",
        ),
        ({"general_llm": "../etc"}, "an LLM profile name is 1-64 letters"),
        (
            {"fine": {"passes": [{"name": "extract", "llm_profile": "fast", "model": "m"}]}},
            r"passes\[0\]: a pass is its name or \{name: <pass>, llm_profile: <profile>\}; "
            r"unknown keys \['model'\]",
        ),
    ],
)
def test_a_profile_the_config_does_not_define_is_a_config_error_naming_it(
    settings: dict[str, Any], message: str
) -> None:
    scripted = {"backend": "scripted", "model": "m"}
    with pytest.raises(ConfigError, match=message):
        config(llm=scripted, llm_profiles={"fast": scripted}, **settings)


def test_a_yaml_config_with_an_unknown_profile_fails_when_read(tmp_path: Any) -> None:
    path = tmp_path / "reader.yaml"
    path.write_text(
        "backend: simple_struct\n"
        "config:\n"
        "  llm_profiles: {fast: {backend: scripted, model: s}}\n"
        "  llm: {backend: scripted, model: b}\n"
        "  fine: {passes: [{name: extract, llm_profile: slow}]}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="fine pass 'extract' names the LLM profile 'slow'"):
        MemReaderConfigFactory.from_yaml(path)


@pytest.mark.parametrize("fault", ["malformed", "500", "wrong_shape"])
def test_a_misbehaving_profile_fails_only_the_pass_that_picked_it(
    servers: tuple[LLMTestServer, LLMTestServer], fault: str
) -> None:
    big, fast = servers
    replies = {
        "malformed": Reply(body=openai_completion("Sorry, I can't check these.")),
        "500": Reply(status=500, body={"error": {"message": "down"}}),
        "wrong_shape": Reply(body=openai_completion('{"results": "all fine"}')),
    }
    fast.responder = lambda request: replies[fault]
    reader = SimpleStructMemReader(
        config(
            llm=llm(big, "big"),
            llm_profiles={"fast": llm(fast, "small")},
            fine={"passes": ["extract", {"name": "filter", "llm_profile": "fast"}]},
        )
    )
    report = ReadReport()
    items = reader.get_memory(CHAT, "chat", dict(INFO), mode="fine", report=report)
    (window,) = report.windows
    assert (window.status, window.filter_status) == ("ok", "failed")
    assert len(items[0]) == 3  # the extraction's memories, kept unfiltered
    assert kinds(big) == ["memory_extraction"]


def test_turning_off_a_pass_that_picked_a_profile_leaves_the_others_as_they_were() -> None:
    from memreader.config import without_pass

    fine = {"passes": ["extract", {"name": "filter", "llm_profile": "fast"}, "rewrite"]}
    changed = without_pass(fine, "filter")  # what read --no-filter does
    scripted = {"backend": "scripted", "model": "m"}
    read = config(llm=scripted, llm_profiles={"fast": scripted}, fine=changed)
    assert read.fine.enabled_passes() == ("extract", "rewrite")
