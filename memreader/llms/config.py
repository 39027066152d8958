"""Configuration of LLM backends and of the reader's LLM slots.

Invalid configuration raises :class:`memreader.errors.ConfigError` naming the field (never a bare
pydantic ``ValidationError``, whose message would echo input values such as an API key).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import (
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from memreader.config_model import ConfigModel
from memreader.errors import ConfigError, config_error_from
from memreader.llms.backends import check_llm_backend
from memreader.llms.interceptor_specs import InterceptorSpec
from memreader.llms.limiter import DEFAULT_MAX_CONCURRENCY
from memreader.secret_masking import HidesSecrets, Opaque, find_non_finite, is_secret_header
from memreader.transport.body import DEFAULT_MAX_RESPONSE_BYTES
from memreader.transport.client import check_transport

__all__ = [
    "DEFAULT_PROFILE",
    "SLOT_FALLBACKS",
    "SLOT_NAMES",
    "LLMConfig",
    "LLMSlots",
    "StructuredOutputMode",
    "config_error_from",
]

#: How the schema of a structured answer is enforced (see :class:`LLMConfig`).
StructuredOutputMode = Literal["json_schema", "json_object_schema", "tool_call", "prompt"]


class LLMConfig(ConfigModel, HidesSecrets):
    """One LLM endpoint.

    Attributes:
        backend: ``"openai"`` (any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, LM Studio,
            ...) or ``"ollama"``, or a name added with ``register_llm``.
        model: the model name sent to the server.
        base_url: the server URL. OpenAI-compatible: up to ``/v1``; ``None`` means OpenAI.
            Ollama: the host (``http://127.0.0.1:11434``); ``None`` means ``$OLLAMA_HOST`` or
            the local default.
        api_key: sent as a bearer token. Never shown in reprs, logs or error messages (JSON
            dumps show ``**********``, as do secret-looking ``extra_headers`` values and a
            password in ``base_url``; python-mode dumps keep all three as ``SecretStr``, and
            validating such a dump again restores them).
            ``None``: the OpenAI backend reads ``$OPENAI_API_KEY`` and otherwise sends a
            placeholder (local servers ignore it).
        temperature, max_tokens: sampling settings (``max_tokens`` becomes ``num_predict`` for
            Ollama).
        timeout: the deadline of one request in seconds: connecting, sending and reading the
            whole answer must be done within it, however slowly the server answers.
        max_response_bytes: the largest answer body read (default 32 MiB); a larger one is an
            :class:`~memreader.llms.errors.LLMServerError`.
        extra_headers: extra HTTP headers for every request.
        extra_body: extra top-level JSON fields for OpenAI-compatible requests; for Ollama,
            ``think``/``keep_alive`` go to the request and everything else (or an ``options``
            mapping) into ``options``.
        structured_output: how a schema is enforced. ``json_schema``: OpenAI structured
            outputs (``response_format`` of type ``json_schema``, ``strict`` off).
            ``json_object_schema``: the llama.cpp dialect (``{"type": "json_object",
            "schema": ...}``). ``tool_call``: one function tool with the schema as its
            parameters, forced with ``tool_choice``. ``prompt``: no server support needed; the
            schema goes into the system prompt. Ollama always sends the schema as ``format``
            (``"json"`` in ``prompt`` mode, a forced tool in ``tool_call`` mode).
        max_retries: retries after the first attempt, shared by transient failures (timeouts,
            connection errors, 408, 409, 429, 5xx, unreadable replies) and re-asks of unusable
            answers.
        backoff_base, backoff_max: exponential backoff with full jitter, in seconds; the wait
            before retry *n* is uniform in ``[0, min(backoff_max, backoff_base * 2**(n-1))]``.
            A ``Retry-After`` header is honoured, capped at ``backoff_max``.
        transport: replaces the network, for tests and for users who route requests their own
            way: an httpx-style transport (``handle_request``/``handle_async_request``), of
            httpx for ``ollama`` (``httpx.MockTransport``) and of the openai SDK's library for
            ``openai`` (``httpx2.MockTransport`` with openai 3; ``httpx`` before), or the
            :class:`memreader.testing.ScriptedLLM` of the ``scripted`` backend. ``timeout`` and
            ``max_response_bytes`` still apply around it. Never in reprs; python dumps keep it
            as an :class:`~memreader.secret_masking.OpaqueRef` (so the reader cache tells two
            transports apart by identity), JSON dumps as ``null``. Default ``None``: the
            network.
    """

    backend: str = "openai"
    model: str
    base_url: str | None = None
    api_key: SecretStr | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=2048, ge=1)
    timeout: float = Field(default=60.0, gt=0.0)
    max_response_bytes: int = Field(default=DEFAULT_MAX_RESPONSE_BYTES, ge=1)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    structured_output: StructuredOutputMode = "json_schema"
    max_retries: int = Field(default=3, ge=0, le=20)
    backoff_base: float = Field(default=0.5, ge=0.0, le=60.0)
    backoff_max: float = Field(default=20.0, ge=0.0, le=600.0)
    transport: Opaque = Field(default=None, repr=False)

    @field_validator("backend")
    @classmethod
    def _check_backend(cls, value: str) -> str:
        return check_llm_backend(value)

    @field_validator("model")
    @classmethod
    def _check_model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model must not be empty")
        return value.strip()

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("base_url must be an http(s) URL with a host")
        return value.rstrip("/")

    @field_validator("api_key")
    @classmethod
    def _check_api_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            return None
        return value

    @field_validator("extra_body")
    @classmethod
    def _check_extra_body(cls, value: dict[str, Any]) -> dict[str, Any]:
        where = find_non_finite(value)
        if where is not None:
            raise ValueError(f"{where} must be a finite number")
        return value

    @field_validator("transport")
    @classmethod
    def _check_transport(cls, value: Any) -> Any:
        return check_transport(value)

    def api_key_value(self) -> str | None:
        """The API key in clear, for building a client. Do not log it."""
        return self.api_key.get_secret_value() if self.api_key is not None else None

    def secrets(self) -> list[str]:
        """Strings that must never appear in logs or messages (the key, secret header values)."""
        found = [v for k, v in self.extra_headers.items() if is_secret_header(k) and v]
        key = self.api_key_value()
        if key:
            found.append(key)
        password = urlsplit(self.base_url).password if self.base_url else None
        if password:
            found.append(password)
        return found


#: The reader's LLM slots, and the slots each falls back to (in order) when unset.
SLOT_FALLBACKS: dict[str, tuple[str, ...]] = {
    "llm": (),
    "general_llm": ("llm",),
    "image_parser_llm": ("general_llm", "llm"),
    "document_parser_llm": ("general_llm", "llm"),
    "preference_extractor_llm": ("general_llm", "llm"),
    "rerank_llm": ("general_llm", "llm"),
}
SLOT_NAMES: tuple[str, ...] = tuple(SLOT_FALLBACKS)


#: The profile that serves ``llm`` when that slot is unset (memU's ``llm_profiles.default``).
DEFAULT_PROFILE = "default"
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

#: A slot: its own LLM config, or the name of a profile of ``llm_profiles``.
SlotValue = LLMConfig | str | None


def check_profile_name(name: str) -> str:
    """``name`` if it can name a profile (letters, digits, ``_.-``, up to 64 characters)."""
    if not isinstance(name, str) or not _PROFILE_NAME.match(name):
        raise ValueError(
            f"an LLM profile name is 1-64 letters, digits, '_', '.' or '-', got {name!r}"
        )
    return name


class LLMSlots(ConfigModel):
    """The LLMs of one reader, by role, plus their shared concurrency budget.

    Reader configs inherit these settings (the YAML keys are flat: ``llm: {...}``), so a
    reader's config is itself the ``LLMSlots`` its :class:`~memreader.llms.LLMRouter` takes.

    Unset slots fall back: ``general_llm`` -> ``llm``; ``image_parser_llm``,
    ``document_parser_llm``, ``preference_extractor_llm`` and ``rerank_llm`` (the LLM that
    reranks a search and judges a recall: :mod:`memreader.front.rerank`) -> ``general_llm``
    -> ``llm``.
    ``llm_max_concurrency`` (default 4) bounds the LLM requests in flight across all slots and
    profiles of the reader.

    ``llm_profiles`` names LLM configs (memU's profiles): a slot may name one instead of
    holding a config (``general_llm: fast``), a fine pass may pick one
    (``fine.passes: [{name: filter, llm_profile: fast}, ...]``), and the profile ``default``
    serves ``llm`` when that slot is unset. Profiles share the reader's concurrency budget,
    usage meter (``by_profile`` in a read's usage), hooks and interceptors. A name that
    ``llm_profiles`` does not define is a :class:`~memreader.errors.ConfigError` when the
    config is read. ``llm_interceptors`` switches on registered interceptors by name
    (``[{name: rate_limit, requests_per_minute: 60}]``, see
    :mod:`memreader.llms.interceptor_specs`).

    >>> fast = {"backend": "scripted", "model": "small"}
    >>> slots = LLMSlots(llm_profiles={"default": {"model": "big"}, "fast": fast},
    ...                  general_llm="fast")
    >>> slots.resolve("llm").model, slots.resolve("general_llm").model
    ('big', 'small')
    >>> slots.profile_of("general_llm"), slots.profile_of("image_parser_llm")
    ('fast', 'fast')
    """

    SLOTS: ClassVar[tuple[str, ...]] = SLOT_NAMES

    llm: SlotValue = None
    general_llm: SlotValue = None
    image_parser_llm: SlotValue = None
    document_parser_llm: SlotValue = None
    preference_extractor_llm: SlotValue = None
    rerank_llm: SlotValue = None
    llm_max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=1024)
    llm_profiles: dict[str, LLMConfig] = Field(
        default_factory=dict,
        description="Named LLM configs that slots and fine passes pick by name.",
    )
    llm_interceptors: list[InterceptorSpec] = Field(
        default_factory=list,
        description="Registered LLM interceptors to run around every call, by name.",
    )

    @field_validator(*SLOT_NAMES, mode="before")
    @classmethod
    def _slot_value(cls, value: Any) -> Any:
        # A config or a profile's name. Deciding here keeps the errors of a bad config those
        # of LLMConfig alone (a plain union would add "or a string" to each).
        if isinstance(value, str):
            return check_profile_name(value.strip())
        if isinstance(value, Mapping):
            return LLMConfig.model_validate(value)
        return value

    @field_validator("llm_profiles")
    @classmethod
    def _profile_names(cls, profiles: dict[str, LLMConfig]) -> dict[str, LLMConfig]:
        for name in profiles:
            check_profile_name(name)
        return profiles

    @model_validator(mode="after")
    def _profiles_exist(self) -> LLMSlots:
        for where, name in self.profile_references():
            if name not in self.llm_profiles:
                defined = ", ".join(sorted(self.llm_profiles)) or "none"
                raise ValueError(
                    f"{where} names the LLM profile {name!r}, which llm_profiles does not "
                    f"define (defined: {defined})"
                )
        return self

    def profile_references(self) -> Iterator[tuple[str, str]]:
        """Where the config names a profile, and the name (subclasses add theirs)."""
        for slot in SLOT_NAMES:
            value = getattr(self, slot)
            if isinstance(value, str):
                yield slot, value
        for i, spec in enumerate(self.llm_interceptors):
            profile = spec.settings().get("profile")
            if isinstance(profile, str):
                yield f"llm_interceptors[{i}] ({spec.name})", profile

    def profile(self, name: str) -> LLMConfig:
        """The config of the profile ``name``.

        Raises:
            ConfigError: ``llm_profiles`` does not define it.
        """
        config = self.llm_profiles.get(name)
        if config is None:
            defined = ", ".join(sorted(self.llm_profiles)) or "none"
            raise ConfigError(f"unknown LLM profile {name!r} (defined: {defined})")
        return config

    def profile_of(self, slot_name: str) -> str | None:
        """The name of the profile serving ``slot_name`` after fallbacks (``None``: a slot's
        own config serves it, or nothing does)."""
        served_by = self.resolved_slot(slot_name)
        if served_by is None:
            return None
        value = getattr(self, served_by, None)
        if isinstance(value, str):
            return value
        return DEFAULT_PROFILE if value is None else None

    def _slot_config(self, name: str) -> LLMConfig | str | None:
        value: LLMConfig | str | None = getattr(self, name)
        if value is None and name == "llm" and DEFAULT_PROFILE in self.llm_profiles:
            return DEFAULT_PROFILE
        return value

    def resolve(self, slot_name: str) -> LLMConfig | None:
        """The config serving ``slot_name`` after fallbacks, or ``None`` if none is set.

        Raises:
            ConfigError: ``slot_name`` is not one of :data:`SLOT_NAMES`.
        """
        if slot_name not in SLOT_FALLBACKS:
            raise ConfigError(
                f"unknown LLM slot {slot_name!r}; known slots: {', '.join(SLOT_NAMES)}"
            )
        for name in (slot_name, *SLOT_FALLBACKS[slot_name]):
            value = self._slot_config(name)
            if isinstance(value, str):
                return self.profile(value)
            if value is not None:
                return value
        return None

    def resolved_slot(self, slot_name: str) -> str | None:
        """The name of the slot whose config serves ``slot_name`` (``None`` if none is set)."""
        if slot_name not in SLOT_FALLBACKS:
            raise ConfigError(
                f"unknown LLM slot {slot_name!r}; known slots: {', '.join(SLOT_NAMES)}"
            )
        for name in (slot_name, *SLOT_FALLBACKS[slot_name]):
            if self._slot_config(name) is not None:
                return name
        return None

    @property
    def configured(self) -> bool:
        """Whether any slot is set (``llm`` counts as set when a ``default`` profile is)."""
        return any(self._slot_config(name) is not None for name in SLOT_NAMES)
