"""Configuration models of readers, bounded YAML loading and ``${ENV}`` interpolation.

A leaf module: no registry lookups here (those happen in :mod:`memreader.factory`, where a
``backend`` name picks the reader and its config class). Secrets are ``SecretStr`` and are never
printed.

>>> BaseReaderConfig(window={"max_tokens": 512}).window.max_tokens
512
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from memreader.config_model import ConfigModel
from memreader.documents.limits import (
    DEFAULT_MAX_ARCHIVE_MEMBERS,
    DEFAULT_MAX_COMPRESSION_RATIO,
    DEFAULT_MAX_DOCUMENT_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_UNPACKED_BYTES,
    DocumentLimits,
)
from memreader.embedders.config import EmbedderConfig
from memreader.errors import ConfigError
from memreader.files import FileRefused, read_regular_file
from memreader.llms.config import LLMConfig, LLMSlots
from memreader.skills import SkillsConfig

#: A config file larger than this is refused before it is parsed (real ones are a few KiB).
MAX_CONFIG_BYTES = 1024 * 1024
#: Nesting deeper than this is refused while parsing YAML and interpolating (real configs: ~5).
MAX_CONFIG_DEPTH = 100
#: Values visited while interpolating ``${ENV}``; YAML aliases are counted each time they are
#: used, so a "billion laughs" file is refused instead of expanded.
MAX_CONFIG_NODES = 100_000


class WindowConfig(ConfigModel):
    """How scenes are cut into windows (token counts in ``tokenizer``'s tokens)."""

    max_tokens: int = Field(default=1024, ge=64)
    overlap_tokens: int = Field(default=200, ge=0)
    tokenizer: str = "cl100k_base"
    # How a message or document too long for one window is cut: "recursive" prefers paragraph,
    # sentence, then word boundaries (chonkie's RecursiveChunker); "tokens" cuts at token
    # boundaries, preferring a newline or a space. Both keep exact spans and the budget.
    splitter: Literal["recursive", "tokens"] = "recursive"

    @model_validator(mode="after")
    def _overlap_fits(self) -> WindowConfig:
        if self.overlap_tokens > self.max_tokens // 2:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) must be at most half of max_tokens "
                f"({self.max_tokens})"
            )
        return self


#: The passes of fine mode, in the order they run.
PASS_NAMES = ("extract", "filter", "rewrite", "tool", "preference", "skill", "tool_schema")
PassName = Literal["extract", "filter", "rewrite", "tool", "preference", "skill", "tool_schema"]


class FineConfig(ConfigModel):
    """How fine mode extracts and checks memories, and which passes run.

    ``passes`` lists the passes (``None``: ``extract``, then ``filter`` unless
    ``hallucination_filter`` is off, ``rewrite`` unless ``rewrite: off``, and ``tool_schema``,
    which asks no LLM). The extra passes cost LLM calls and are off unless listed: ``tool``
    (tool trajectories, on windows with tool traffic), ``preference`` (the user's preferences,
    ``preference_extractor_llm`` slot) and ``skill`` (skills from successful tool use, written as
    ``SKILL.md`` bundles where ``skills.output`` says; needs ``tool``). ``extract`` is required.
    ``rewrite`` picks the rewrite's evidence (``user_only``) when it runs.
    """

    hallucination_filter: bool = True
    rewrite: Literal["all", "user_only", "off"] = "all"
    # A window the model finds nothing in: keep it as a raw item ("fallback") or only report it.
    empty_window: Literal["fallback", "drop"] = "fallback"
    language: Literal["auto", "en", "zh"] = "auto"
    passes: list[PassName] | None = None
    skills: SkillsConfig = Field(default_factory=SkillsConfig)

    @field_validator("passes")
    @classmethod
    def _check_passes(cls, passes: list[str] | None) -> list[str] | None:
        if passes is None:
            return None
        if len(set(passes)) != len(passes):
            raise ValueError("passes lists a pass twice")
        if "extract" not in passes:
            raise ValueError("passes must include extract (the other passes work on its windows)")
        if "skill" in passes and "tool" not in passes:
            raise ValueError("the skill pass needs the tool pass (skills come from tool use)")
        return passes

    def enabled_passes(self) -> tuple[str, ...]:
        """The passes that run, in run order."""
        if self.passes is not None:
            chosen = set(self.passes)
        else:
            chosen = {"extract", "tool_schema"}
            chosen |= {"filter"} if self.hallucination_filter else set()
            chosen |= {"rewrite"} if self.rewrite != "off" else set()
        return tuple(name for name in PASS_NAMES if name in chosen)


class StepSpec(ConfigModel):
    """One step of a pipeline declared in YAML: a registered step name (``redact``) or a
    ``module:attr`` reference to a step class, a step, or a registered step factory (only with
    :attr:`PipelineSpec.allow_imports`), and the keyword arguments to build it with."""

    step: str = Field(min_length=1)
    config: dict[str, Any] = Field(default_factory=dict)


class PipelineSpec(ConfigModel):
    """Changes to a reader's default pipeline, applied in this order: ``replace`` (step name ->
    new step), ``remove`` (step names), ``insert_before`` and ``insert_after`` (step name -> new
    steps, in order). Each change is checked as in Python; an unknown step or module is a
    :class:`~memreader.errors.ConfigError`.

    ``allow_imports`` (default ``False``): whether steps may be named as ``module:attr``.
    Importing a module runs its code, so **a config that names modules is code**: without this
    switch such a step is a ``ConfigError`` and nothing is imported. With it, the module is
    imported and the attribute must be a :class:`~memreader.pipeline.Step` subclass, a step,
    or a factory registered in ``STEPS``; anything else (``os:system``) is a ``ConfigError``
    before anything is called. Steps registered by name (built-ins, and plugins installed
    through the ``memreader.plugins`` entry points) need no switch.

    >>> PipelineSpec(insert_after={"parse": [{"step": "redact"}]}).insert_after["parse"][0].step
    'redact'
    """

    replace: dict[str, StepSpec] = Field(default_factory=dict)
    remove: list[str] = Field(default_factory=list)
    insert_before: dict[str, list[StepSpec]] = Field(default_factory=dict)
    insert_after: dict[str, list[StepSpec]] = Field(default_factory=dict)
    allow_imports: bool = False


class BaseReaderConfig(ConfigModel):
    """Settings every reader shares.

    The LLM slots fall back: ``general_llm`` -> ``llm``; ``image_parser_llm``,
    ``document_parser_llm`` and ``preference_extractor_llm`` -> ``general_llm``.
    ``llm_max_concurrency`` bounds the reader's LLM requests in flight, all slots together.

    Documents (``type="doc"``):

    - ``allow_local_paths`` (default ``False``): whether document input may name local files,
      as a string naming an existing file or a ``{"type": "file", "file": {"path": ...}}``
      part. Off by default because input often comes from strangers (a server passing user
      strings must not read ``/etc/passwd``). When off, a string is always text and a path part
      is a ``DocumentError``.
    - ``allowed_roots`` (default ``[]``): folders or single files. When non-empty (and local
      paths are allowed), a file is read only if its fully resolved path (symlinks followed)
      equals a root or lies under one; any other file named in the input is a
      ``DocumentError`` ("outside the allowed roots"), never read and never taken for text.
      ``~`` is expanded; a relative root is relative to the working directory at read time.
      Empty: any local file (files under /proc, /sys and /dev are always refused).
    - ``allow_hidden_files`` (default ``False``): whether a local file may be read when its
      resolved path has a hidden component (a name starting with ``.``) below its root:
      ``.env``, ``.aws/credentials``, ``.ssh/id_rsa`` and ``.git/config`` hold secrets, and a
      chat's folder is often ``$HOME`` or ``~/Downloads``. Refused by default (a
      ``DocumentError``), wherever content names local files; a root that is itself hidden is
      fine (whoever listed it chose it).
    - ``max_file_bytes`` (50 MiB): the most bytes of one file, read from disk or decoded from
      ``file_data``; never more than this plus one byte is read, whatever size a file reports.
    - ``max_unpacked_bytes`` (200 MiB): the most that a docx, pptx, xlsx or epub may unpack to
      (its declared sizes, summed), or that a pdf's compressed streams may inflate to.
    - ``max_compression_ratio`` (100): the most one archive member (or pdf stream) over 1 MiB,
      or a whole archive, may expand relative to its compressed size; bombs expand ~1000 times.
    - ``max_archive_members`` (10,000): the most members a zip-based document may hold.
    - ``max_document_chars`` (5,000,000): the most characters a file may convert to (about
      1.2 million tokens); the backstop for formats whose expansion cannot be checked first.

    Every limit exceeded is a ``DocumentError`` naming the limit.

    ``embed_prefixes`` (default ``False``): whether fast mode's embedding input keeps each line's
    ``role: [time]: `` prefix (the item's memory text keeps it either way); see the README's
    "Fast mode speed" for the retrieval measured with and without.

    ``pipeline`` changes the reader's default steps (see :class:`PipelineSpec`).
    """

    # None: items are not embedded (for stores that embed on their own).
    embedder: EmbedderConfig | None = Field(default_factory=EmbedderConfig)
    window: WindowConfig = Field(default_factory=WindowConfig)
    embedding_cache_size: int = Field(default=10_000, ge=1)
    embed_prefixes: bool = False
    allow_local_paths: bool = False
    allowed_roots: list[str] = Field(default_factory=list)
    allow_hidden_files: bool = False
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, gt=0)
    max_unpacked_bytes: int = Field(default=DEFAULT_MAX_UNPACKED_BYTES, gt=0)
    max_compression_ratio: float = Field(default=DEFAULT_MAX_COMPRESSION_RATIO, ge=1.0)
    max_archive_members: int = Field(default=DEFAULT_MAX_ARCHIVE_MEMBERS, gt=0)
    max_document_chars: int = Field(default=DEFAULT_MAX_DOCUMENT_CHARS, gt=0)
    llm: LLMConfig | None = None
    general_llm: LLMConfig | None = None
    image_parser_llm: LLMConfig | None = None
    document_parser_llm: LLMConfig | None = None
    preference_extractor_llm: LLMConfig | None = None
    llm_max_concurrency: int = Field(default=4, ge=1, le=1024)
    fine: FineConfig = Field(default_factory=FineConfig)
    pipeline: PipelineSpec = Field(default_factory=PipelineSpec)

    @field_validator("allowed_roots")
    @classmethod
    def _check_roots(cls, roots: list[str]) -> list[str]:
        for root in roots:
            if not root.strip() or "\0" in root:
                raise ValueError("allowed_roots entries must be non-empty paths")
        return roots

    def document_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`memreader.documents.normalize_doc` from this config."""
        return {
            "allow_local_paths": self.allow_local_paths,
            "allowed_roots": tuple(self.allowed_roots),
            "allow_hidden_files": self.allow_hidden_files,
            "max_file_bytes": self.max_file_bytes,
            "max_unpacked_bytes": self.max_unpacked_bytes,
            "max_compression_ratio": self.max_compression_ratio,
            "max_archive_members": self.max_archive_members,
            "max_document_chars": self.max_document_chars,
        }

    def document_limits(self) -> DocumentLimits:
        """The document limits of this config."""
        return DocumentLimits(
            max_file_bytes=self.max_file_bytes,
            max_unpacked_bytes=self.max_unpacked_bytes,
            max_compression_ratio=self.max_compression_ratio,
            max_archive_members=self.max_archive_members,
            max_document_chars=self.max_document_chars,
        )

    def llm_slots(self) -> LLMSlots:
        """The LLM slots of this config, with their shared concurrency budget."""
        return LLMSlots(
            llm=self.llm,
            general_llm=self.general_llm,
            image_parser_llm=self.image_parser_llm,
            document_parser_llm=self.document_parser_llm,
            preference_extractor_llm=self.preference_extractor_llm,
            max_concurrency=self.llm_max_concurrency,
        )


def read_yaml_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in the YAML file ``path`` (not yet interpolated nor validated).

    Raises:
        ConfigError: the file cannot be read or is not a regular file, is over
            ``MAX_CONFIG_BYTES``, is not UTF-8, is not valid YAML, nests deeper than
            ``MAX_CONFIG_DEPTH``, or is not a mapping.
    """
    name = os.fspath(path)
    try:
        raw = read_regular_file(path, MAX_CONFIG_BYTES)
    except FileRefused as exc:
        if not exc.too_large:
            raise ConfigError(f"cannot read config {name!r}: not a regular file") from None
        raise ConfigError(f"config {name!r} is over the {MAX_CONFIG_BYTES} byte limit") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {name!r}: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config {name!r} is not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start})"
        ) from None
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {name!r} is not valid YAML: {exc}") from exc
    except ConfigError as exc:
        raise ConfigError(f"config {name!r}: {exc}") from None
    if data is not None and not isinstance(data, Mapping):
        raise ConfigError(
            f"config {name!r}: a reader config must be a mapping, got {type(data).__name__}"
        )
    return dict(data or {})


def cache_digest(config: BaseModel) -> str:
    """A digest of a whole config, secrets included (hashed, never shown)."""
    payload = json.dumps(config.model_dump(serialize_as_any=True), sort_keys=True, default=_reveal)
    return hashlib.sha256(payload.encode()).hexdigest()


def _reveal(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return "secret:" + hashlib.sha256(value.get_secret_value().encode()).hexdigest()
    if isinstance(value, BaseModel):
        return value.model_dump(serialize_as_any=True)
    return str(value)


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing nesting deeper than ``MAX_CONFIG_DEPTH``.

    The composer recurses once per level, so without this a deeply nested file ends in a
    ``RecursionError`` instead of a ``ConfigError``.
    """

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_CONFIG_DEPTH:
                raise ConfigError(f"nested more than {MAX_CONFIG_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate_env(value: Any, path: str = "config") -> Any:
    """Replace ``${NAME}`` and ``${NAME:-default}`` in every string of ``value``.

    The walk is bounded: more than ``MAX_CONFIG_NODES`` values (a value shared through YAML
    aliases counts each time it is reached) or nesting deeper than ``MAX_CONFIG_DEPTH`` is a
    :class:`ConfigError` naming the limit.

    >>> os.environ["MEMREADER_DOCTEST"] = "x"
    >>> interpolate_env({"a": ["${MEMREADER_DOCTEST}-${NOPE_NOT_SET:-d}"]})
    {'a': ['x-d']}
    """
    return _interpolate(value, path, 0, [0])


def _interpolate(value: Any, path: str, depth: int, visited: list[int]) -> Any:
    visited[0] += 1
    if visited[0] > MAX_CONFIG_NODES:
        raise ConfigError(
            f"{path}: the config expands to more than {MAX_CONFIG_NODES} values "
            "(YAML aliases are counted each time they are used)"
        )
    if depth > MAX_CONFIG_DEPTH:
        raise ConfigError(f"{path}: the config is nested more than {MAX_CONFIG_DEPTH} levels deep")
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{path}: environment variable {name} is not set")

        return _ENV.sub(substitute, value)
    if isinstance(value, Mapping):
        return {k: _interpolate(v, f"{path}.{k}", depth + 1, visited) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, f"{path}[{i}]", depth + 1, visited) for i, v in enumerate(value)]
    return value
