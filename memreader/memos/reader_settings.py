"""MemOS reader settings that change what a reader does beyond its models and its chunker,
translated to memreader's own, or refused: never dropped with a note that says "results
unchanged" when they would change.

- ``chat_chunker`` (MemOS's strategy reader: ``{backend, config: {chunk_type, chunk_length,
  chunk_session, chunk_overlap}}``) -> the strategy reader's ``strategy``: ``chunk_type``
  ``content_length`` groups messages by ``chunk_length`` characters, carrying one message
  (MemOS carries the last message of the previous group); any other type is MemOS's session
  grouping, ``chunk_session`` messages sharing ``chunk_overlap``. MemOS's other readers do not
  read it, nor do memreader's.
- ``direct_markdown_hostnames`` -> ``fetch.direct_markdown_hostnames`` (the multimodal reader's;
  ``None`` takes ``FILE_PARSER_DIRECT_MARKDOWN_HOSTNAMES``, as MemOS does). The other readers
  fetch no URL, in MemOS as here.
- ``skills_dir_config`` (``skills_local_dir``, ``skills_local_tmp_dir``, ``skills_oss_dir``) ->
  ``fine.skills.output``: the folder MemOS copies each skill to is where memreader writes its
  bundles. With ``SKILLS_REPO_BACKEND=OSS`` MemOS uploads them instead: a
  :class:`~memreader.errors.MemOSConfigError` (say ``fine.skills.output: s3://bucket/prefix``).

>>> from memreader.memos.translation import Translation
>>> out = Translation()
>>> chat_chunker({"backend": "x", "config": {"chunk_type": "default", "chunk_session": 5,
...     "chunk_overlap": 1}}, {"strategy"}, out)
{'chunk_by': 'session', 'chunk_session': 5, 'chunk_overlap': 1}
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError

from memreader.errors import ConfigError, MemOSConfigError
from memreader.extraction.skills import SkillsConfig
from memreader.fetch.settings import FetchConfig
from memreader.memos.translation import Translation
from memreader.windowing.grouping import GroupingConfig

__all__ = ["chat_chunker", "direct_markdown_hostnames", "skills_dir_config"]

#: MemOS's chat chunker settings (``get_reader_config`` in ``src/memos/api/config.py``).
_CHAT_CHUNKER_KEYS = frozenset({"chunk_type", "chunk_length", "chunk_session", "chunk_overlap"})
#: The keys of MemOS's ``skills_dir_config`` (``_skill_init`` checks these three).
_SKILLS_KEYS = frozenset({"skills_local_dir", "skills_local_tmp_dir", "skills_oss_dir"})
#: MemOS's environment: where it reads hosts and the skills' destination when the config does
#: not say. Read here only to translate what MemOS would have done.
_HOSTS_ENV = "FILE_PARSER_DIRECT_MARKDOWN_HOSTNAMES"
_SKILLS_BACKEND_ENV = "SKILLS_REPO_BACKEND"


def chat_chunker(value: Any, fields: Collection[str], out: Translation) -> dict[str, Any] | None:
    """The ``strategy`` section for MemOS's ``chat_chunker``, or ``None`` where the reader
    groups no chats by it (``fields``, its config's settings, have no ``strategy``).

    Raises:
        MemOSConfigError: not ``{backend, config}``, a key MemOS's chunker has not, or values
            memreader's grouping refuses (an overlap over half the session, a length under 64).
    """
    if not isinstance(value, Mapping) or not isinstance(value.get("config"), Mapping):
        raise MemOSConfigError("chat_chunker must be a mapping with backend and config")
    config = dict(value["config"])
    stray = sorted(str(k) for k in config if k not in _CHAT_CHUNKER_KEYS)
    if stray:
        raise MemOSConfigError(
            f"chat_chunker.config.{stray[0]} is not a setting of MemOS's chat chunker "
            f"({', '.join(sorted(_CHAT_CHUNKER_KEYS))})"
        )
    if "strategy" not in fields:
        out.note(
            "chat_chunker",
            "unused",
            detail="only the strategy_struct reader groups chats by it (in MemOS too)",
        )
        return None
    by_length = config.get("chunk_type") == "content_length"
    strategy: dict[str, Any]
    if by_length:
        strategy = {"chunk_by": "content_length", "chunk_overlap": 1}
        _take(config, "chunk_length", "content_length", strategy, out)
        out.note("chat_chunker.config.chunk_type", "translated", "strategy.chunk_by")
        if "chunk_overlap" in config:
            out.note(
                "chat_chunker.config.chunk_overlap",
                "translated",
                "strategy.chunk_overlap: 1",
                "MemOS's content_length grouping carries one message whatever it says",
            )
    else:
        strategy = {"chunk_by": "session"}
        detail = "MemOS groups by session for any type but content_length"
        out.note("chat_chunker.config.chunk_type", "translated", "strategy.chunk_by", detail)
        _take(config, "chunk_session", "chunk_session", strategy, out)
        _take(config, "chunk_overlap", "chunk_overlap", strategy, out)
    if not by_length and "chunk_length" in config:
        out.note("chat_chunker.config.chunk_length", "unused", detail="session grouping")
    if by_length and "chunk_session" in config:
        out.note("chat_chunker.config.chunk_session", "unused", detail="content_length grouping")
    try:
        GroupingConfig.model_validate(strategy)
    except (ConfigError, ValidationError) as exc:
        raise MemOSConfigError(f"chat_chunker: memreader cannot group chats so: {exc}") from None
    return strategy


def _take(
    config: Mapping[str, Any], key: str, ours: str, strategy: dict[str, Any], out: Translation
) -> None:
    at = f"chat_chunker.config.{key}"
    if key in config:
        strategy[ours] = config[key]
        out.note(at, "translated", f"strategy.{ours}")
    else:
        out.note(at, "default", f"strategy.{ours}", "memreader's (MemOS requires it)")


def direct_markdown_hostnames(
    value: Any, fields: Collection[str], out: Translation
) -> list[str] | None:
    """The hosts for ``fetch.direct_markdown_hostnames``, or ``None`` where the reader fetches
    no URL (``fields`` have no ``fetch``).

    Raises:
        MemOSConfigError: not a list of host names.
    """
    setting = "direct_markdown_hostnames"
    if value is None:
        value = [h.strip() for h in os.environ.get(_HOSTS_ENV, "").split(",") if h.strip()]
        detail = f"from {_HOSTS_ENV}, as MemOS reads them when the config says none"
    else:
        detail = ""
    if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
        raise MemOSConfigError(f"{setting} must be a list of host names")
    if "fetch" not in fields:
        out.note(setting, "unused", detail="this reader fetches no URL (MemOS's neither)")
        return None
    try:
        hosts = FetchConfig(direct_markdown_hostnames=value).direct_markdown_hostnames
    except (ConfigError, ValidationError) as exc:
        raise MemOSConfigError(f"{setting}: {exc}") from None
    out.note(setting, "translated", f"fetch.{setting}", detail)
    return hosts


def skills_dir_config(value: Any, out: Translation) -> str | None:
    """``fine.skills.output`` for MemOS's ``skills_dir_config`` (``None``: it names none).

    Raises:
        MemOSConfigError: not a mapping, a key MemOS's has not, or MemOS would upload the
            skills to OSS (``SKILLS_REPO_BACKEND=OSS``), which this setting cannot say.
    """
    if value is None:
        out.note("skills_dir_config", "unused", detail="none given")
        return None
    if not isinstance(value, Mapping):
        raise MemOSConfigError("skills_dir_config must be a mapping")
    stray = sorted(str(k) for k in value if k not in _SKILLS_KEYS)
    if stray:
        raise MemOSConfigError(
            f"skills_dir_config.{stray[0]} is not a key of MemOS's skills_dir_config "
            f"({', '.join(sorted(_SKILLS_KEYS))})"
        )
    if os.environ.get(_SKILLS_BACKEND_ENV) == "OSS":
        raise MemOSConfigError(
            f"skills_dir_config: with {_SKILLS_BACKEND_ENV}=OSS MemOS uploads skills to object "
            "storage; set fine.skills.output: s3://bucket/prefix (and fine.skills.s3) instead"
        )
    if "skills_local_tmp_dir" in value:
        out.note(
            "skills_dir_config.skills_local_tmp_dir",
            "unused",
            detail="memreader writes each bundle in place, with no staging folder",
        )
    if "skills_oss_dir" in value:
        out.note(
            "skills_dir_config.skills_oss_dir",
            "unused",
            detail=f"MemOS uploads there only with {_SKILLS_BACKEND_ENV}=OSS",
        )
    folder = value.get("skills_local_dir")
    if folder is None:
        return None
    try:
        output = SkillsConfig(output=folder).output
    except (ConfigError, ValidationError) as exc:
        raise MemOSConfigError(f"skills_dir_config.skills_local_dir: {exc}") from None
    out.note(
        "skills_dir_config.skills_local_dir",
        "translated",
        "fine.skills.output",
        "SKILL.md bundle folders, where MemOS copies its zips",
    )
    return output
