"""MemOS reader configs (``src/memos/configs/mem_reader.py``'s shapes) translated to memreader's.

:func:`looks_like_memos_config` tells a MemOS reader config from memreader's own, and
:func:`translate_reader_config` makes memreader's mapping of it, with a note of what each
setting became (:class:`~memreader.memos.translation.Translation`). memreader's own keys
given beside MemOS's (``window``, ``fine``, ``store``...) are taken as they are.

With ``memos_defaults`` (the default) the config behaves as MemOS does: its filter and rewrite
are off (MemOS runs a hallucination filter only with ``SIMPLE_STRUCT_ADD_FILTER=true`` and no
rewrite), unless the config sets ``fine`` itself.

>>> t = translate_reader_config({"llm": {"backend": "openai", "config": {
...     "model_name_or_path": "gpt-4o-mini", "api_key": "sk-x"}}, "remove_prompt_example": True})
>>> t.config["llm"]["model"], t.config["fine"]
('gpt-4o-mini', {'hallucination_filter': False, 'rewrite': 'off'})
>>> [n.setting for n in t.of_kind("unused")]
['remove_prompt_example']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from memreader.config import BaseReaderConfig, FineConfig
from memreader.errors import MemOSConfigError
from memreader.llms.config import SLOT_NAMES
from memreader.memos.config_backends import translate_embedder, translate_llm
from memreader.memos.reader_settings import (
    chat_chunker,
    direct_markdown_hostnames,
    skills_dir_config,
)
from memreader.memos.translation import Translation

__all__ = ["MEMOS_ONLY_SETTINGS", "looks_like_memos_config", "translate_reader_config"]

#: Reader settings only MemOS has, and why memreader needs none (ignoring them changes no
#: result; ``memory_version_switch`` and the chunker are translated, not listed here).
MEMOS_ONLY_SETTINGS = {
    "remove_prompt_example": "memreader's extraction prompt is its own; nothing to remove",
    "oss_config": "memreader uploads nothing to object storage",
    "created_at": "MemOS's timestamp of the config object",
    "model_schema": "MemOS's own class marker",
    "qwen_llm": "no counterpart slot",
}
#: Reader settings of MemOS's that change results: translated (or refused) by
#: :mod:`memreader.memos.reader_settings`.
_READER_SETTINGS = ("chat_chunker", "direct_markdown_hostnames", "skills_dir_config")
_TRANSLATED = {*SLOT_NAMES, "embedder", "chunker", "chat_window_max_tokens", *_READER_SETTINGS}
_CHUNKER_UNUSED = {
    "min_sentences_per_chunk": "memreader's splitter prefers sentence ends, with no minimum",
    "save_rawfile": "the multimodal reader keeps each document chunk as a RawFileMemory item",
    "headers_to_split_on": "documents are cut by tokens; each chunk names its headings",
    "strip_headers": "documents are cut by tokens; each chunk names its headings",
    "recursive": "memreader's splitter is always recursive",
}
_TOKENIZERS = frozenset({"cl100k_base"})
_MEMOS_ONLY_EMBEDDERS = frozenset({"sentence_transformer", "universal_api", "ark"})


def looks_like_memos_config(config: Mapping[str, Any]) -> bool:
    """Whether the reader config ``config`` is in MemOS's shape: an LLM slot or the embedder as
    ``{backend, config: {model_name_or_path...}}``, a ``chunker``, or a MemOS-only setting."""
    if not isinstance(config, Mapping):
        return False
    if {"chunker", "chat_window_max_tokens", "memory_version_switch"} & set(config):
        return True
    if {*MEMOS_ONLY_SETTINGS, *_READER_SETTINGS} & set(config):
        return True
    for name in (*SLOT_NAMES, "embedder"):
        value = config.get(name)
        inner = value.get("config") if isinstance(value, Mapping) else None
        if isinstance(inner, Mapping) and "model_name_or_path" in inner:
            return True
    return False


def translate_reader_config(
    config: Mapping[str, Any],
    *,
    fields: Collection[str] | None = None,
    memos_defaults: bool = True,
) -> Translation:
    """memreader's reader config for the MemOS one ``config``, with its notes. ``fields``: the
    settings of the reader's config class, taken as they are (default: those every reader has).

    Raises:
        MemOSConfigError: a setting memreader cannot honour and whose absence would change
            results (see :mod:`memreader.memos.config_backends`, ``memory_version_switch: on``
            without a ``store``), or a MemOS factory that is not ``{backend, config}``.
    """
    out = Translation()
    ours: dict[str, Any] = out.config
    for name in SLOT_NAMES:
        if _memos_llm(config.get(name)):
            ours[name] = translate_llm(config[name], name, out)
        elif name in config:
            ours[name] = config[name]
            out.note(name, "translated", name, "memreader's own setting, taken as is")
    if _memos_embedder(config.get("embedder")):
        ours["embedder"] = translate_embedder(config["embedder"], out)
    elif "embedder" in config:
        ours["embedder"] = config["embedder"]
        out.note("embedder", "translated", "embedder", "memreader's own setting, taken as is")
    window = _window(config, out)
    native = set(fields if fields is not None else BaseReaderConfig.model_fields)
    for name, value in config.items():
        if name in _TRANSLATED or name == "memory_version_switch":
            continue
        if name in MEMOS_ONLY_SETTINGS:
            out.note(name, "unused", detail=MEMOS_ONLY_SETTINGS[name])
        elif name == "window" and isinstance(value, Mapping):
            window = {**window, **value}
            out.note(name, "translated", "window", "memreader's own setting, taken as is")
        elif name in native:
            ours[name] = value
            out.note(name, "translated", name, "memreader's own setting, taken as is")
        else:
            out.note(name, "unused", detail="not a setting memreader knows")
    if window:
        ours["window"] = window
    _reader_settings(config, ours, native, out)
    _fine(config, ours, out, memos_defaults)
    _skills(config, ours, out)
    return out


def _reader_settings(
    config: Mapping[str, Any], ours: dict[str, Any], native: Collection[str], out: Translation
) -> None:
    """``chat_chunker`` -> ``strategy``, ``direct_markdown_hostnames`` -> ``fetch``."""
    if "chat_chunker" in config:
        if "strategy" in ours:
            raise MemOSConfigError(
                "chat_chunker and strategy both say how chats are grouped: keep one"
            )
        strategy = chat_chunker(config["chat_chunker"], native, out)
        if strategy is not None:
            ours["strategy"] = strategy
    if "direct_markdown_hostnames" in config:
        hosts = direct_markdown_hostnames(config["direct_markdown_hostnames"], native, out)
        if hosts is not None:
            fetch = _section(ours, "fetch")
            known = list(fetch.get("direct_markdown_hostnames") or [])
            fetch["direct_markdown_hostnames"] = [*known, *(h for h in hosts if h not in known)]


def _skills(config: Mapping[str, Any], ours: dict[str, Any], out: Translation) -> None:
    """``skills_dir_config.skills_local_dir`` -> ``fine.skills.output``."""
    if "skills_dir_config" not in config:
        return
    output = skills_dir_config(config["skills_dir_config"], out)
    if output is None:
        return
    fine = _section(ours, "fine")
    skills = _section(fine, "skills")
    if skills.get("output") not in (None, "", output):
        raise MemOSConfigError(
            f"skills_dir_config.skills_local_dir ({output!r}) and fine.skills.output "
            f"({skills['output']!r}) name different folders: keep one"
        )
    skills["output"] = output


def _section(ours: dict[str, Any], name: str) -> dict[str, Any]:
    """``ours[name]`` as a mapping of its own, made when missing (a model given as it is is
    dumped: a MemOS setting is merged into it).

    Raises:
        MemOSConfigError: it is neither a mapping nor a config model.
    """
    value = ours.get(name)
    if value is None:
        value = {}
    elif hasattr(value, "model_dump"):
        value = value.model_dump()
    elif isinstance(value, Mapping):
        value = dict(value)
    else:
        raise MemOSConfigError(f"{name} must be a mapping, got {type(value).__name__}")
    ours[name] = value
    return value


def _memos_llm(value: Any) -> bool:
    """Whether an LLM slot's value is MemOS's (memreader's has a ``model`` and no ``config``)."""
    return isinstance(value, Mapping) and ("config" in value or "model" not in value)


def _memos_embedder(value: Any) -> bool:
    """Whether ``embedder`` is MemOS's: a MemOS-only backend, or a ``model_name_or_path``."""
    if not isinstance(value, Mapping):
        return False
    inner = value.get("config")
    named = isinstance(inner, Mapping) and "model_name_or_path" in inner
    return named or value.get("backend") in _MEMOS_ONLY_EMBEDDERS


def _window(config: Mapping[str, Any], out: Translation) -> dict[str, Any]:
    """``window`` from MemOS's ``chat_window_max_tokens`` and ``chunker``."""
    window: dict[str, Any] = {}
    chat = config.get("chat_window_max_tokens")
    if chat is not None:
        window["max_tokens"] = chat
        out.note("chat_window_max_tokens", "translated", "window.max_tokens")
    if "chunker" not in config:
        return window
    chunker = config["chunker"]
    if not isinstance(chunker, Mapping) or not isinstance(chunker.get("config", {}), Mapping):
        raise MemOSConfigError("chunker must be a mapping with backend and config")
    backend = chunker.get("backend")
    if backend not in ("sentence", "markdown"):
        raise MemOSConfigError(
            f"chunker.backend {backend!r} is not a MemOS chunker (sentence, markdown)"
        )
    out.note(
        "chunker.backend",
        "translated",
        "window.splitter: recursive",
        "paragraph, then sentence, then word boundaries",
    )
    for key, value in dict(chunker.get("config") or {}).items():
        at = f"chunker.config.{key}"
        if key == "chunk_size" and chat is None:
            window["max_tokens"] = value
            out.note(at, "translated", "window.max_tokens")
        elif key == "chunk_size":
            out.note(
                at,
                "unused",
                detail="chats and documents share window.max_tokens, set from "
                "chat_window_max_tokens; info['chunk_size'] sets it per call",
            )
        elif key == "chunk_overlap":
            window["overlap_tokens"] = value
            out.note(at, "translated", "window.overlap_tokens")
        elif key == "tokenizer_or_token_counter" and value in _TOKENIZERS:
            window["tokenizer"] = value
            out.note(at, "translated", "window.tokenizer")
        elif key == "tokenizer_or_token_counter":
            out.note(at, "unused", detail="windows count cl100k_base tokens (no download)")
        elif key in _CHUNKER_UNUSED:
            out.note(at, "unused", detail=_CHUNKER_UNUSED[key])
        else:
            raise MemOSConfigError(f"{at} is not a setting of MemOS's {backend} chunker")
    return window


def _fine(
    config: Mapping[str, Any], ours: dict[str, Any], out: Translation, memos_defaults: bool
) -> None:
    """``fine``: MemOS's defaults (filter and rewrite off) and ``memory_version_switch``."""
    if "fine" not in ours and memos_defaults:
        ours["fine"] = {"hallucination_filter": False, "rewrite": "off"}
        out.note(
            "(defaults)",
            "default",
            "fine.hallucination_filter: false, fine.rewrite: off",
            "as MemOS; memos_defaults=False or a fine section keeps memreader's",
        )
    switch = config.get("memory_version_switch", "off")
    if switch not in ("on", "off"):
        raise MemOSConfigError(f"memory_version_switch must be 'on' or 'off', got {switch!r}")
    if switch == "off":
        if "memory_version_switch" in config:
            out.note("memory_version_switch", "translated", "no reconcile pass (off)")
        return
    if "store" not in ours:
        raise MemOSConfigError(
            "memory_version_switch: on merges new memories into stored ones; memreader's "
            "reconcile pass does that against a store: add store: sqlite:///memories.db (or a "
            "postgresql:// URL) to the config, or set memory_version_switch: off"
        )
    fine = dict(ours.get("fine") or {})
    passes = list(FineConfig.model_validate(fine).enabled_passes())
    fine = {k: v for k, v in fine.items() if k not in ("hallucination_filter", "rewrite")}
    fine["passes"] = [*passes, "reconcile"] if "reconcile" not in passes else passes
    ours["fine"] = fine
    out.note("memory_version_switch", "translated", "fine.passes + reconcile", "against the store")
