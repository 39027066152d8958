"""The check ``memreader read --mode fine`` makes before reading: each configured LLM slot
answers one tiny request, and a key the server needs is there.

Without it an unreachable server was retried per window, every window fell back to raw items,
and the run exited 1 with a message that named neither the URL nor the slot. The check fails in
seconds with exit 2, before any window, naming the slot and the URL (its password masked);
``--no-check`` skips it (a server that is slow to start, a metered API). ``memreader ingest`` of a
fine job and ``memreader refine`` make the same check of the job's reader
(:func:`check_job_llm`) before any input is read.

Example:
    >>> from memreader.llms import LLMConfig
    >>> try:
    ...     check_llm_slots({"llm": LLMConfig(backend="openai", model="gpt-4o-mini")})
    ... except LLMCheckError as exc:
    ...     print(str(exc).split(": ")[1])
    the LLM of slot 'llm' (gpt-4o-mini at https://api.openai.com/v1) needs an API key
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from memreader.errors import ConfigError
from memreader.llms.errors import (
    LLMConnectionError,
    LLMError,
    LLMRequestError,
    LLMServerError,
    LLMTimeoutError,
)
from memreader.secret_masking import mask_url

if TYPE_CHECKING:
    from memreader.llms import LLMConfig

__all__ = ["CHECK_TIMEOUT", "LLMCheckError", "check_job_llm", "check_llm_slots", "configured_slots"]

#: Seconds the check waits for an answer at most (the slot's own timeout if shorter).
CHECK_TIMEOUT = 10.0
# Where a slot without base_url sends its requests (as its client does).
_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "ollama": "http://127.0.0.1:11434"}
# Failures that say the slot cannot work; a rate limit or an odd answer says it is there.
_FATAL = (LLMConnectionError, LLMTimeoutError, LLMRequestError, LLMServerError)


class LLMCheckError(ConfigError):
    """A fine-mode LLM slot cannot work: no key, no answer, or a refusal (exit 2)."""


def configured_slots(config: Any) -> dict[str, LLMConfig]:
    """The slots and LLM profiles of a reader config that are set, one per distinct server and
    model (the first slot, or ``profile <name>``, that names it)."""
    slots: dict[str, LLMConfig] = {}
    seen: set[tuple[str, str | None, str]] = set()
    named = [
        (name, config.resolve(name))
        for name in (
            "llm",
            "general_llm",
            "image_parser_llm",
            "document_parser_llm",
            "preference_extractor_llm",
        )
    ]
    # A profile only a fine pass picks is checked too: the read would fail on it as well.
    named += [(f"profile {p}", cfg) for p, cfg in getattr(config, "llm_profiles", {}).items()]
    for name, slot in named:
        if slot is None:
            continue
        identity = (slot.backend, slot.base_url, slot.model)
        if identity not in seen:
            seen.add(identity)
            slots[name] = slot
    return slots


def check_llm_slots(slots: Mapping[str, LLMConfig]) -> None:
    """Check each of ``slots`` (name to config) as the module docstring says; backends other
    than ``openai`` and ``ollama`` (the scripted one of tests) are not checked.

    Raises:
        LLMCheckError: a slot needs a key it lacks, or did not answer a one-token request
            within :data:`CHECK_TIMEOUT` seconds (no retry), or refused it.
    """
    for name, slot in slots.items():
        if slot.backend in _DEFAULT_URLS:
            _check_one(name, slot)


def check_job_llm(job_path: str, *, refine: bool) -> None:
    """Check the LLM slots of the reader of the job file ``job_path`` when it reads in fine
    mode (``refine``: always; an ``ingest`` job: when its ``mode`` is ``fine``), as
    :func:`check_llm_slots` does.

    Raises:
        ConfigError: the job file or its reader config is wrong (as the job itself says).
        LLMCheckError: a slot cannot work.
    """
    from memreader.batch.job import load_job
    from memreader.factory import MemReaderConfigFactory

    job = load_job(job_path)
    if refine or job.mode == "fine":
        config = MemReaderConfigFactory.from_dict(job.reader_config()).config
        check_llm_slots(configured_slots(config))


def _check_one(name: str, slot: LLMConfig) -> None:
    from memreader.llms import build_llm

    url = slot.base_url or _DEFAULT_URLS[slot.backend]
    profile = name.removeprefix("profile ")
    what = f"profile {profile!r}" if profile != name else f"slot {name!r}"
    where = f"the LLM of {what} ({slot.model} at {mask_url(url)})"
    host = urlsplit(url).hostname or ""
    if slot.backend == "openai" and host.endswith("openai.com") and slot.api_key is None:
        raise LLMCheckError(
            f"fine mode: {where} needs an API key: set OPENAI_API_KEY or --llm-api-key-env VAR "
            "(or api_key in the config)"
        )
    quick = slot.model_copy(
        update={"timeout": min(slot.timeout, CHECK_TIMEOUT), "max_retries": 0, "max_tokens": 1}
    )
    client = build_llm(quick)
    try:
        client.complete([{"role": "user", "content": "Say OK."}], slot=name)
    except _FATAL as exc:
        raise LLMCheckError(
            f"fine mode: {where} does not work: {type(exc).__name__}: {exc} (nothing was read; "
            "--no-check skips this check)"
        ) from None
    except LLMError:  # a rate limit, an answer of an odd shape: the server is there
        pass
    finally:
        client.close()
