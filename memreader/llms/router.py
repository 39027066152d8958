"""Clients from configs, and the per-reader set of slot clients.

:func:`build_llm` builds a client for a config through the backend registry
(:mod:`memreader.llms.backends`). :class:`LLMRouter` turns an :class:`LLMSlots` (a reader's
config is one) into clients that share one concurrency budget, one usage meter and one set of
hooks, building each distinct config once. A call names a slot, and may name a profile of
``llm_profiles`` instead of the slot's config (a fine pass that picks one); either way the
usage is recorded under the slot, and under the profile that served it. The config's
``llm_interceptors`` are built once per router, so their budgets (a rate limit) are the
reader's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memreader.errors import LLMRequiredError
from memreader.llms.backends import LLM_BACKENDS
from memreader.llms.base import BaseLLMClient
from memreader.llms.hooks import LLMHooks
from memreader.llms.limiter import ConcurrencyLimiter
from memreader.llms.usage import UsageMeter

if TYPE_CHECKING:
    from memreader.calls.deadlines import Deadline
    from memreader.llms.config import LLMConfig, LLMSlots
    from memreader.llms.types import LLMClient, LLMResponse, Messages, Validator

__all__ = ["LLMRouter", "build_llm"]


def build_llm(
    config: LLMConfig,
    *,
    limiter: ConcurrencyLimiter | None = None,
    meter: UsageMeter | None = None,
    hooks: LLMHooks | None = None,
) -> LLMClient:
    """A client for ``config``; pass the reader's shared ``limiter``, ``meter`` and ``hooks``.

    Raises:
        ConfigError: the backend is unknown.
    """
    factory = LLM_BACKENDS.get(config.backend)
    client: LLMClient = factory(config, limiter=limiter, meter=meter, hooks=hooks)
    return client


class LLMRouter:
    """The clients of one reader's LLM slots, sharing one budget, meter and hooks.

    Args:
        slots: the slot configuration, e.g. a reader's config (its ``llm_max_concurrency``
            sizes the budget unless a ``limiter`` is given).
        limiter, meter, hooks: shared objects to use instead of fresh ones.
    """

    def __init__(
        self,
        slots: LLMSlots,
        *,
        limiter: ConcurrencyLimiter | None = None,
        meter: UsageMeter | None = None,
        hooks: LLMHooks | None = None,
    ) -> None:
        self.slots = slots
        self.limiter = (
            limiter if limiter is not None else ConcurrencyLimiter(slots.llm_max_concurrency)
        )
        self.meter = meter if meter is not None else UsageMeter()
        hooks = hooks if hooks is not None else LLMHooks()
        configured = tuple(spec.build() for spec in slots.llm_interceptors)
        self.hooks = hooks.with_configured(configured) if configured else hooks
        self._clients: dict[int, LLMClient] = {}
        self._profiles: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def client(self, slot: str) -> LLMClient | None:
        """The client serving ``slot`` after fallbacks, or ``None`` if no slot is set.

        Raises:
            ConfigError: ``slot`` is not a known slot name.
        """
        cfg = self.slots.resolve(slot)
        if cfg is None:
            return None
        return self._client_for(cfg)

    def profile_client(self, profile: str) -> LLMClient:
        """The client of the profile ``profile`` of ``llm_profiles``.

        Raises:
            ConfigError: no such profile.
        """
        return self._client_for(self.slots.profile(profile))

    def _profile_of(self, slot: str) -> str | None:
        # The slots are frozen: which profile serves a slot is worked out once.
        if slot not in self._profiles:
            self._profiles[slot] = self.slots.profile_of(slot)
        return self._profiles[slot]

    def _client_for(self, cfg: LLMConfig) -> LLMClient:
        with self._lock:
            client = self._clients.get(id(cfg))
            if client is None:
                client = build_llm(cfg, limiter=self.limiter, meter=self.meter, hooks=self.hooks)
                self._clients[id(cfg)] = client
            return client

    def require(self, slot: str) -> LLMClient:
        """Like :meth:`client`, but raises :class:`LLMRequiredError` when nothing serves it."""
        client = self.client(slot)
        if client is None:
            raise LLMRequiredError(f"no LLM is configured for slot {slot!r} (nor its fallbacks)")
        return client

    def complete(
        self,
        slot: str,
        messages: Messages,
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "response",
        meter: UsageMeter | None = None,
        validate: Validator | None = None,
        profile: str | None = None,
        deadline: Deadline | None = None,
    ) -> LLMResponse:
        """``require(slot).complete(...)`` with the slot name filled in; with ``profile``, the
        client of that profile of ``llm_profiles`` answers for the slot.

        ``validate`` is passed on only when given, so clients written before it existed still
        work without one; ``profile`` and ``deadline`` reach only clients built on
        :class:`~memreader.llms.base.BaseLLMClient` (the interceptors see them there).

        Raises:
            ConfigError: ``profile`` is not defined.
            LLMRequiredError: nothing serves ``slot``.
            LLMError: the call failed (:class:`~memreader.llms.errors.LLMCallBlocked` when an
                interceptor blocked it).
        """
        client, extra = self._route(slot, profile, validate, deadline)
        return client.complete(
            messages, schema=schema, schema_name=schema_name, slot=slot, meter=meter, **extra
        )

    async def acomplete(
        self,
        slot: str,
        messages: Messages,
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "response",
        meter: UsageMeter | None = None,
        validate: Validator | None = None,
        profile: str | None = None,
        deadline: Deadline | None = None,
    ) -> LLMResponse:
        """The async twin of :meth:`complete`."""
        client, extra = self._route(slot, profile, validate, deadline)
        return await client.acomplete(
            messages, schema=schema, schema_name=schema_name, slot=slot, meter=meter, **extra
        )

    def _route(
        self,
        slot: str,
        profile: str | None,
        validate: Validator | None,
        deadline: Deadline | None,
    ) -> tuple[LLMClient, dict[str, Any]]:
        """The client of a call and the keyword arguments it takes beside the common ones."""
        if profile is not None:
            client = self.profile_client(profile)
        else:
            client = self.require(slot)
            profile = self._profile_of(slot)
        extra: dict[str, Any] = {} if validate is None else {"validate": validate}
        if isinstance(client, BaseLLMClient):
            extra.update(profile=profile, deadline=deadline)
        return client, extra

    async def aclose(self) -> None:
        """Close every client built so far, async clients of the running loop included."""
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for client in clients:
            aclose = getattr(client, "aclose", None)
            if aclose is not None:
                await aclose()
            else:
                client.close()

    def close(self) -> None:
        """Close every client built so far."""
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for client in clients:
            client.close()
