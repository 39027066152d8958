"""hide_secrets / reveal_secrets keep a sequence's type, a named tuple's included: a named tuple
is rebuilt from its fields (its constructor takes them by position, not as one iterable)."""

from __future__ import annotations

from typing import NamedTuple

from pydantic import SecretStr

from memreader.secret_masking import hide_secrets, mask_secrets, reveal_secrets


class Endpoint(NamedTuple):
    host: str
    url: str


def test_a_named_tuple_is_hidden_and_revealed_field_by_field() -> None:
    value = {"endpoints": [Endpoint("a", "https://user:pw@example.com/x")], "api_key": ("k1",)}
    hidden = hide_secrets(value)
    endpoint = hidden["endpoints"][0]
    assert type(endpoint) is Endpoint
    assert endpoint.host == "a"
    assert "pw" not in str(endpoint.url)
    assert isinstance(hidden["api_key"], tuple)
    assert isinstance(hidden["api_key"][0], SecretStr)
    assert reveal_secrets(hidden) == value
    assert mask_secrets(value)["endpoints"] == [["a", "https://***@example.com/x"]]


def test_lists_and_tuples_keep_their_type() -> None:
    value = {"a": [1, "x"], "b": (2, "y")}
    assert reveal_secrets(hide_secrets(value)) == value
    assert type(hide_secrets(value)["b"]) is tuple
