"""MemOS's LLM and embedder settings (``{backend, config: {model_name_or_path, api_base, ...}}``)
translated to memreader's :class:`~memreader.llms.config.LLMConfig` and
:class:`~memreader.embedders.config.EmbedderConfig` mappings, each setting noted in the
:class:`~memreader.memos.translation.Translation`. A backend memreader cannot stand in for
(Azure, an in-process Hugging Face model, Ark embeddings) is a
:class:`~memreader.errors.MemOSConfigError`: ignoring it would change every result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memreader.errors import MemOSConfigError
from memreader.memos.translation import Translation

__all__ = ["translate_embedder", "translate_llm"]

#: MemOS's OpenAI-compatible LLM backends and the ``api_base`` each defaults to there.
_OPENAI_LIKE: dict[str, str | None] = {
    "openai": None,
    "openai_new": None,
    "qwen": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    "deepseek": "https://api.deepseek.com",
    "minimax": "https://api.minimax.io/v1",
    "vllm": "http://localhost:8088/v1",
}
_REFUSED_LLMS = {
    "azure": "memreader has no Azure OpenAI backend (its URL and api_version differ); use an "
    "OpenAI-compatible endpoint",
    "huggingface": "memreader runs no in-process Hugging Face model; serve it with an "
    "OpenAI-compatible server (vLLM, llama.cpp) and use backend openai",
    "huggingface_singleton": "memreader runs no in-process Hugging Face model; serve it with an "
    "OpenAI-compatible server (vLLM, llama.cpp) and use backend openai",
}
#: Settings read as they are: MemOS name -> memreader name.
_LLM_SAME = {
    "model_name_or_path": "model",
    "api_key": "api_key",
    "api_base": "base_url",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "default_headers": "extra_headers",
}
_LLM_UNUSED = {
    "remove_think_prefix": "memreader always strips think blocks before reading an answer",
    "model_schema": "MemOS's own class marker",
    "backup_client": "memreader retries the same endpoint (max_retries)",
    "backup_api_key": "memreader retries the same endpoint (max_retries)",
    "backup_api_base": "memreader retries the same endpoint (max_retries)",
    "backup_model_name_or_path": "memreader retries the same endpoint (max_retries)",
    "backup_headers": "memreader retries the same endpoint (max_retries)",
    "do_sample": "no in-process model",
    "add_generation_prompt": "no in-process model",
}
#: The settings of MemOS's embedder configs (``src/memos/configs/embedder.py``), per backend:
#: any other is a misspelling, an error as for the LLMs (``extra_params``: older MemOS).
_EMBEDDER_BASE = frozenset(
    {"model_name_or_path", "embedding_dims", "max_tokens", "headers_extra", "model_schema"}
)
_EMBEDDER_KEYS = {
    "ollama": _EMBEDDER_BASE | {"api_base"},
    "sentence_transformer": _EMBEDDER_BASE | {"trust_remote_code"},
    "universal_api": _EMBEDDER_BASE
    | {
        "provider",
        "api_key",
        "base_url",
        "backup_client",
        "backup_base_url",
        "backup_api_key",
        "backup_headers_extra",
        "backup_model_name_or_path",
        "extra_params",
    },
}
#: MemOS embedder models that are the one memreader bundles.
_BUNDLED_MODELS = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})


def _parts(value: Any, where: str) -> tuple[str, dict[str, Any]]:
    """A MemOS factory's ``backend`` and ``config``, checked."""
    if not isinstance(value, Mapping):
        raise MemOSConfigError(f"{where} must be a mapping with backend and config")
    backend = value.get("backend")
    config = value.get("config")
    if not isinstance(backend, str) or not isinstance(config, Mapping):
        raise MemOSConfigError(f"{where} must have a backend name and a config mapping")
    extra = set(value) - {"backend", "config", "model_schema"}
    if extra:
        raise MemOSConfigError(f"{where} has unknown keys: {', '.join(sorted(extra))}")
    return backend, dict(config)


def translate_llm(value: Any, where: str, out: Translation) -> dict[str, Any]:
    """memreader's LLM config for the MemOS LLM factory ``value`` at ``where`` (``llm``)."""
    backend, config = _parts(value, where)
    if backend in _REFUSED_LLMS:
        raise MemOSConfigError(f"{where}.backend {backend!r}: {_REFUSED_LLMS[backend]}")
    if backend != "ollama" and backend not in _OPENAI_LIKE:
        known = ", ".join(sorted([*_OPENAI_LIKE, "ollama"]))
        raise MemOSConfigError(f"{where}.backend {backend!r} is not a MemOS LLM backend ({known})")
    ours = "ollama" if backend == "ollama" else "openai"
    result: dict[str, Any] = {"backend": ours}
    detail = "the chat completions API of the same server" if backend == "openai_new" else ""
    out.note(f"{where}.backend", "translated", f"{where}.backend: {ours}", detail)
    if "model_name_or_path" not in config:
        raise MemOSConfigError(f"{where}.config.model_name_or_path is required")
    if backend in _OPENAI_LIKE and _OPENAI_LIKE[backend] and "api_base" not in config:
        config["api_base"] = _OPENAI_LIKE[backend]
        out.note(f"{where}.config.api_base", "default", f"{where}.base_url", f"{backend}'s")
    extra_body: dict[str, Any] = {}
    for key, value_ in config.items():
        at = f"{where}.config.{key}"
        if key in _LLM_SAME:
            result[_LLM_SAME[key]] = value_
            out.note(at, "translated", f"{where}.{_LLM_SAME[key]}")
        elif key == "extra_body" and isinstance(value_, Mapping):
            extra_body.update(value_)
            out.note(at, "translated", f"{where}.extra_body")
        elif key == "extra_body" and value_ is None:
            out.note(at, "unused", detail="empty")
        elif key == "top_p" or (key == "top_k" and ours == "ollama"):
            extra_body[key] = value_
            out.note(at, "translated", f"{where}.extra_body.{key}")
        elif key == "top_k":
            out.note(at, "unused", detail="MemOS's OpenAI backends do not send it either")
        elif key == "enable_thinking":
            if value_ is not None:
                name = "think" if ours == "ollama" else "enable_thinking"
                extra_body[name] = value_
                out.note(at, "translated", f"{where}.extra_body.{name}")
        elif key in _LLM_UNUSED:
            out.note(at, "unused", detail=_LLM_UNUSED[key])
        else:
            raise MemOSConfigError(f"{at} is not a setting of MemOS's {backend} LLM backend")
    if "temperature" not in config:
        out.note(
            f"{where}.config.temperature", "default", f"{where}.temperature: 0.0", "MemOS: 0.7"
        )
    if extra_body:
        result["extra_body"] = extra_body
    return result


def translate_embedder(value: Any, out: Translation) -> dict[str, Any] | None:
    """memreader's embedder config for MemOS's ``embedder`` factory ``value``."""
    backend, config = _parts(value, "embedder")
    known = _EMBEDDER_KEYS.get(backend)
    stray = sorted(k for k in config if known is not None and k not in known)
    if stray:
        raise MemOSConfigError(
            f"embedder.config.{stray[0]} is not a setting of MemOS's {backend} embedder backend"
        )
    if backend == "universal_api" and config.get("provider", "openai") != "openai":
        raise MemOSConfigError(
            f"embedder.config.provider {config['provider']!r}: memreader's embedders speak the "
            "OpenAI API (provider openai); an Azure deployment needs an OpenAI-compatible URL"
        )
    if "model_name_or_path" not in config:
        raise MemOSConfigError("embedder.config.model_name_or_path is required")
    model = config.pop("model_name_or_path")
    settings: dict[str, Any]
    if backend == "universal_api":
        ours = "openai"
        settings = {"model": model}
        names = {
            "api_key": "api_key",
            "base_url": "base_url",
            "embedding_dims": "dimensions",
            "max_tokens": "max_input_tokens",
            "headers_extra": "extra_headers",
        }
    elif backend == "ollama":
        ours = "ollama"
        settings = {"model": model}
        names = {"api_base": "host", "max_tokens": "max_input_tokens"}
    elif backend == "sentence_transformer":
        bundled = model in _BUNDLED_MODELS
        ours = "local" if bundled else "sentence_transformers"
        settings = {} if bundled else {"model_path": model}
        names = {}
    elif backend == "ark":
        raise MemOSConfigError(
            "embedder.backend 'ark': memreader has no Ark embedder; its vectors would differ "
            "(use an OpenAI-compatible endpoint with backend universal_api)"
        )
    else:
        raise MemOSConfigError(f"embedder.backend {backend!r} is not a MemOS embedder backend")
    out.note("embedder.backend", "translated", f"embedder.backend: {ours}")
    out.note("embedder.config.model_name_or_path", "translated", _model_note(ours))
    for key, value_ in config.items():
        at = f"embedder.config.{key}"
        if key in names:
            if value_ is not None:
                settings[names[key]] = value_
                out.note(at, "translated", f"embedder.config.{names[key]}")
        elif key == "provider" and value_ == "openai":
            out.note(at, "translated", "embedder.backend: openai")
        elif key in ("embedding_dims", "max_tokens"):
            out.note(at, "unused", detail=f"the {ours} backend takes the model's own")
        elif key.startswith("backup_"):
            out.note(at, "unused", detail="memreader retries the same endpoint (max_retries)")
        else:  # MemOS's own reads it only for another backend, or not at all
            out.note(at, "unused", detail=f"no counterpart in memreader's {ours} embedder")
    return {"backend": ours, "config": settings}


def _model_note(ours: str) -> str:
    if ours == "local":
        return "embedder.backend: local (the bundled all-MiniLM-L6-v2)"
    if ours == "sentence_transformers":
        return "embedder.config.model_path"
    return "embedder.config.model"
