"""LLM profiles and the rate_limit interceptor from the service's reader config, through a real
service: a fine read over HTTP sends each pass to the profile it picks (two real LLM servers,
requests counted on each), the answer's report gives usage per profile, and a config naming a
profile it does not define never starts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memreader.errors import ConfigError
from memreader.service import ServiceConfig
from tests.fine_script import kind, scripted_responder
from tests.llm_server import LLMTestServer
from tests.service.http_client import Start, read

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def servers() -> Iterator[tuple[LLMTestServer, LLMTestServer]]:
    with LLMTestServer() as main, LLMTestServer() as fast:
        main.responder = fast.responder = scripted_responder()
        yield main, fast


def test_a_fine_read_over_http_uses_the_profiles_of_the_reader_config(
    start: Start, servers: tuple[LLMTestServer, LLMTestServer]
) -> None:
    main, fast = servers
    config = {
        "llm_profiles": {
            "default": {"backend": "openai", "model": "big", "base_url": main.url},
            "fast": {"backend": "openai", "model": "small", "base_url": fast.url},
        },
        "fine": {"passes": ["extract", {"name": "filter", "llm_profile": "fast"}, "rewrite"]},
        "llm_interceptors": [{"name": "rate_limit", "requests_per_minute": 100}],
    }
    url = start(config=config)
    answer = read(url, mode="fine")
    assert answer.status_code == 200, answer.text
    assert sorted(kind(r) for r in main.requests) == ["memory_extraction", "memory_rewrite"]
    assert [kind(r) for r in fast.requests] == ["memory_filter"]
    usage = answer.json()["report"]["usage"]
    assert usage["requests_by_profile"] == {"default": 2, "fast": 1}


def test_a_service_config_naming_an_undefined_profile_is_refused() -> None:
    config = {
        "llm": {"backend": "scripted", "model": "m"},
        "fine": {"passes": ["extract", {"name": "filter", "llm_profile": "fast"}]},
    }
    with pytest.raises(ConfigError, match="fine pass 'filter' names the LLM profile 'fast'"):
        ServiceConfig.from_dict({"config": config, "service": {"workers": 1}})
