"""The ``read`` command's fine-mode LLM flags (``--llm-model``, ``--llm-base-url``,
``--llm-api-key-env``, ...) and the config's ``llm`` they make (:func:`llm_settings`).

A flag the user gave is never ignored quietly: ``--llm-api-key-env VAR`` with ``VAR`` unset or
empty is an error naming ``VAR`` (as ``${VAR}`` in a config is), and a server without a model
(``--llm-base-url URL`` alone) is an error naming ``--llm-model``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from memreader.errors import ConfigError
from memreader.llms.config import DEFAULT_PROFILE

__all__ = ["add_llm_flags", "llm_settings"]


def add_llm_flags(read: argparse.ArgumentParser) -> None:
    """Add the fine-mode LLM flags to ``read``."""
    llm = read.add_argument_group(
        "fine mode LLM",
        "override the config's `llm`; defaults come from MEMREADER_LLM_BACKEND, "
        "MEMREADER_LLM_MODEL, MEMREADER_LLM_BASE_URL and OPENAI_API_KEY",
    )
    llm.add_argument(
        "--llm-backend",
        choices=("openai", "ollama"),
        help="the LLM client: openai (any OpenAI-compatible server) or ollama",
    )
    llm.add_argument("--llm-model", help="the model name the server knows, e.g. gpt-4o-mini")
    llm.add_argument("--llm-base-url", help="e.g. http://127.0.0.1:8080/v1 (llama.cpp server)")
    llm.add_argument(
        "--llm-api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (keys are never taken as arguments); "
        "named here, it must be set and not empty (default: OPENAI_API_KEY, if set)",
    )
    llm.add_argument(
        "--structured-output",
        choices=("json_schema", "json_object_schema", "tool_call", "prompt"),
        help="how the LLM is asked for JSON (default: the config's, json_schema)",
    )
    llm.add_argument(
        "--llm-profile",
        metavar="NAME",
        help="extract with the config's LLM profile NAME (its llm_profiles), instead of the "
        "flags above",
    )
    llm.add_argument("--llm-concurrency", type=int, help="LLM requests in flight at most")
    llm.add_argument(
        "--no-check",
        action="store_true",
        help="do not check the LLM before reading (by default each slot answers one tiny "
        "request first, or the read exits 2 naming the slot and URL)",
    )
    llm.add_argument("--no-filter", action="store_true", help="skip the hallucination filter")
    llm.add_argument("--no-rewrite", action="store_true", help="skip the rewrite pass")


def llm_settings(
    args: argparse.Namespace,
    configured: dict[str, Any] | str | None,
    profiles: Mapping[str, Any] | None = None,
) -> Any:
    """The config's ``llm`` with flags and environment on top (flags win). ``--llm-profile``
    (or a config whose ``llm`` names a profile, or has a ``default`` one, with no flag or
    variable on top) keeps the profile's name, so its calls count as that profile's.

    Raises:
        ConfigError: ``--llm-profile`` beside another LLM flag; ``--llm-api-key-env`` names a
            variable that is not set or empty; or no model comes from anywhere (the message
            names ``--llm-model``, and the flags or variables given without it).
    """
    profiles = profiles or {}
    env = os.environ
    given = {
        "backend": _given(args.llm_backend, "--llm-backend", "MEMREADER_LLM_BACKEND"),
        "model": _given(args.llm_model, "--llm-model", "MEMREADER_LLM_MODEL"),
        "base_url": _given(args.llm_base_url, "--llm-base-url", "MEMREADER_LLM_BASE_URL"),
        "structured_output": (args.structured_output, "--structured-output"),
    }
    profile = getattr(args, "llm_profile", None)
    if profile:
        flags = [flag for value, flag in given.values() if value and flag.startswith("--")]
        flags += ["--llm-api-key-env"] if args.llm_api_key_env is not None else []
        if flags:
            raise ConfigError(f"--llm-profile picks a whole LLM: leave out {', '.join(flags)}")
        return profile  # a name llm_profiles lacks is a ConfigError naming the slot
    if configured is None and DEFAULT_PROFILE in profiles:
        configured = DEFAULT_PROFILE
    if isinstance(configured, str):
        if not any(value for value, _ in given.values()) and args.llm_api_key_env is None:
            return configured
        configured = dict(profiles.get(configured) or {})  # the flags change a copy of it
    llm = dict(configured or {})
    for key, (value, _) in given.items():
        if value:
            llm[key] = value
    if args.llm_api_key_env is not None:
        # A variable the user named must hold the key (as ``${VAR}`` in a config must be set):
        # an unset one must not quietly send no key.
        name = args.llm_api_key_env
        if name not in env:
            raise ConfigError(f"--llm-api-key-env: environment variable {name} is not set")
        if not env[name].strip():
            raise ConfigError(f"--llm-api-key-env: environment variable {name} is empty")
        llm["api_key"] = env[name]
    elif llm.get("api_key") is None and env.get("OPENAI_API_KEY"):
        llm["api_key"] = env["OPENAI_API_KEY"]
    if not llm.get("model"):
        named = [flag for value, flag in given.values() if value]
        if args.llm_api_key_env is not None:
            named.append("--llm-api-key-env")
        if named:
            raise ConfigError(
                f"{' and '.join(named)} {'needs' if len(named) == 1 else 'need'} --llm-model "
                "(or $MEMREADER_LLM_MODEL, or llm.model in the --config file)"
            )
        raise ConfigError(
            "--mode fine needs an LLM: --llm-model M (and --llm-base-url URL for a local "
            "server), or `llm` in the --config file (see configs/fine_openai.yaml)"
        )
    return llm


def _given(flag_value: str | None, flag: str, variable: str) -> tuple[str | None, str]:
    """The value of an LLM setting and where it came from: ``flag``, else ``$variable``."""
    if flag_value:
        return flag_value, flag
    return os.environ.get(variable) or None, f"${variable}"
