"""Configuration models of readers (reading the files: :mod:`memreader.config_files`).

A low module: the only registry it reads is the one of fine passes
(:mod:`memreader.extraction.passes`, to check ``fine.passes``); readers are looked up in
:mod:`memreader.factory`, where a ``backend`` name picks the reader and its config class.
Secrets are ``SecretStr`` and are never printed.

>>> BaseReaderConfig(window={"max_tokens": 512}).window.max_tokens
512
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_core import PydanticCustomError

from memreader.categories.config import CategoriesConfig
from memreader.config_model import ConfigModel
from memreader.embedders.config import EmbedderConfig
from memreader.extraction.passes import PASSES, passes_in_order
from memreader.extraction.skills import SkillsConfig
from memreader.fetch.local_files import DocumentAccess
from memreader.llms.config import LLMSlots
from memreader.llms.profiles import split_pass_profiles
from memreader.stores.context.cold_start import ColdStartConfig
from memreader.stores.lifecycle.config import IndexConfig, LifecycleConfig


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


def _known_pass(name: str) -> str:
    """``name``, if a pass of that name is registered (:mod:`memreader.extraction.passes`)."""
    if name not in PASSES:
        known = [p.name for p in passes_in_order(PASSES.names())]
        expected = ", ".join(repr(n) for n in known[:-1]) + f" or {known[-1]!r}"
        raise PydanticCustomError("fine_pass", "Input should be {expected}", {"expected": expected})
    return name


#: A pass ``fine.passes`` may name: one registered in :mod:`memreader.extraction.passes`.
PassName = Annotated[str, AfterValidator(_known_pass)]


class FineConfig(ConfigModel):
    """How fine mode extracts and checks memories, and which passes run.

    **Which passes run** has one meaning: ``passes``, a list of the passes registered in
    :mod:`memreader.extraction.passes` (they run in their order, whatever the order listed;
    ``extract`` is required). Without ``passes`` the default passes run: ``extract``, ``filter``
    (the hallucination filter), ``rewrite`` and ``tool_schema`` (which asks no LLM). The extra
    passes cost LLM calls and run only when listed: ``tool`` (tool trajectories, on windows with
    tool traffic), ``preference`` (the user's preferences, ``preference_extractor_llm`` slot) and
    ``skill`` (skills from successful tool use, written as ``SKILL.md`` bundles where
    ``skills.output`` says; needs ``tool``) and ``reconcile`` (new memories against the stored ones
    they resemble, ``general_llm`` slot; needs the reader's ``store``).

    Two shorthands, for configs without ``passes``: ``hallucination_filter: false`` means the
    default passes without ``filter``, and ``rewrite: off`` the default passes without
    ``rewrite``. Beside ``passes`` they change nothing, and one that turns off a pass that
    ``passes`` lists is a ``ConfigError``. A pass is never turned off by removing its step in
    the config's ``pipeline.remove`` (a ``ConfigError`` pointing here). ``rewrite`` also picks
    the rewrite's evidence (``user_only``) when it runs.
    """

    hallucination_filter: bool = True
    rewrite: Literal["all", "user_only", "off"] = "all"
    # A window the model finds nothing in: keep it as a raw item ("fallback") or only report it.
    empty_window: Literal["fallback", "drop"] = "fallback"
    language: Literal["auto", "en", "zh"] = "auto"
    passes: list[PassName] | None = None
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    # Pass -> the LLM profile it asks (llm_profiles); or {name: filter, llm_profile: x} in passes.
    pass_profiles: dict[PassName, str] = Field(default_factory=dict)
    _split_profiles = model_validator(mode="before")(split_pass_profiles)

    @field_validator("passes")
    @classmethod
    def _check_passes(cls, passes: list[str] | None) -> list[str] | None:
        if passes is None:
            return None
        if len(set(passes)) != len(passes):
            raise ValueError("passes lists a pass twice")
        chosen = set(passes)
        for entry in passes_in_order(PASSES.names()):
            if entry.required and entry.name not in chosen:
                raise ValueError(f"passes must include {entry.name} ({entry.summary})")
            missing = [need for need in entry.needs if need not in chosen]
            if entry.name in chosen and missing:
                raise ValueError(
                    f"the {entry.name} pass needs the {missing[0]} pass (it works on what that "
                    "pass finds)"
                )
        return passes

    @model_validator(mode="after")
    def _shorthands_agree(self) -> FineConfig:
        if self.passes is None:
            return self
        for name, (setting, off) in self._shorthands().items():
            # Only a shorthand that turns a pass off can contradict: its "on" value is the
            # default, which every dump of a config holds.
            if off and name in self.passes:
                raise ValueError(
                    f"{setting}: {getattr(self, setting)!r} contradicts passes, which lists "
                    f"{name}: passes decides which passes run, so leave {setting} out (it is "
                    f"shorthand for the default passes without {name})"
                )
        return self

    def _shorthands(self) -> dict[str, tuple[str, bool]]:
        """Each shorthand: the pass it names -> (its setting, whether it turns the pass off)."""
        return {
            "filter": ("hallucination_filter", not self.hallucination_filter),
            "rewrite": ("rewrite", self.rewrite == "off"),
        }

    def enabled_passes(self) -> tuple[str, ...]:
        """The passes that run, in run order."""
        if self.passes is not None:
            chosen = self.passes
        else:
            off = {name for name, (_, is_off) in self._shorthands().items() if is_off}
            defaults = [p.name for p in passes_in_order(PASSES.names()) if p.default]
            chosen = [name for name in defaults if name not in off]
        return tuple(p.name for p in passes_in_order(chosen))


def without_pass(fine: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The raw ``fine`` settings (a mapping, before validation) with the pass ``name`` turned
    off the one way that agrees with them: left out of ``passes`` when they list passes, else
    by its shorthand (``filter``: ``hallucination_filter: false``, ``rewrite``: ``rewrite:
    off``). For command-line switches such as ``--no-filter``."""
    changed = dict(split_pass_profiles(fine))  # {name, llm_profile} entries as names
    if changed.get("passes") is None:
        shorthand = {"filter": ("hallucination_filter", False), "rewrite": ("rewrite", "off")}
        if name in shorthand:
            setting, off = shorthand[name]
            changed[setting] = off
            return changed
        changed["passes"] = list(FineConfig.model_validate(fine).enabled_passes())
    changed["passes"] = [p for p in changed["passes"] if p != name]
    return changed


class StepSpec(ConfigModel):
    """One step of a pipeline declared in YAML: a registered step name (``redact``) or a
    ``module:attr`` reference to a step class, a step, or a registered step factory (only with
    :attr:`PipelineSpec.allow_imports`), and the keyword arguments to build it with."""

    step: str = Field(min_length=1)
    config: dict[str, Any] = Field(default_factory=dict)


class PipelineSpec(ConfigModel):
    """Changes to a reader's default pipeline, applied in this order: ``replace`` (step name ->
    new step), ``remove`` (step names; not a fine pass's: ``fine.passes`` says which run),
    ``insert_before`` and ``insert_after`` (step name -> new steps, in order). Each change is
    checked as in Python; an unknown step or module is a :class:`~memreader.errors.ConfigError`.

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

    @field_validator("remove")
    @classmethod
    def _no_pass_removed(cls, names: list[str]) -> list[str]:
        for name in names:
            if name in PASSES:
                raise ValueError(
                    f"{name!r} is a fine pass: turn it off in fine.passes (the passes that run; "
                    "see FineConfig), not by removing its step"
                )
        return names


class BaseReaderConfig(DocumentAccess, LLMSlots):
    """Settings every reader shares.

    The LLM slots and ``llm_max_concurrency`` are those of
    :class:`~memreader.llms.config.LLMSlots`; the document settings (``allow_local_paths``,
    ``allowed_roots``, ``allow_hidden_files`` and the ``max_*`` limits) those of
    :class:`~memreader.fetch.local_files.DocumentAccess`. Both are inherited, so the YAML keys
    are flat, and the config itself is what the LLM router and document reading take.

    ``embed_prefixes`` (default ``False``): whether fast mode's embedding input keeps each line's
    ``role: [time]: `` prefix (the item's memory text keeps it either way); see the README's
    "Fast mode speed" for the retrieval measured with and without.

    ``pipeline`` changes the reader's default steps (see :class:`PipelineSpec`).

    ``store`` (default none): a memory store URL (``sqlite:///memories.db``,
    ``postgresql://...``); with one, the ``dedup`` step looks the call's items up there before
    ``embed`` and items already stored as they are get no vector (see
    :mod:`memreader.steps.dedup`). Kept as a secret: a URL may hold a password.

    ``categories``: which categories items are linked to, and how their summaries are made
    (:class:`~memreader.categories.config.CategoriesConfig`). ``lifecycle``: the store's budget
    and purge delay (:class:`~memreader.stores.lifecycle.config.LifecycleConfig`; none: no budget).
    ``cold_start``: what ``Memory.context()`` returns when nothing matches
    (:class:`~memreader.stores.context.cold_start.ColdStartConfig`; default: an empty block).
    """

    # None: items are not embedded (for stores that embed on their own).
    embedder: EmbedderConfig | None = Field(default_factory=EmbedderConfig)
    window: WindowConfig = Field(default_factory=WindowConfig)
    embedding_cache_size: int = Field(default=10_000, ge=1)
    embed_prefixes: bool = False
    fine: FineConfig = Field(default_factory=FineConfig)
    pipeline: PipelineSpec = Field(default_factory=PipelineSpec)
    store: SecretStr | None = None
    categories: CategoriesConfig = Field(default_factory=CategoriesConfig)
    lifecycle: LifecycleConfig | None = None
    cold_start: ColdStartConfig = Field(default_factory=ColdStartConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and "://" not in value.get_secret_value():
            raise ValueError("a store URL looks like sqlite:///memories.db")
        return value

    def profile_references(self) -> Iterator[tuple[str, str]]:
        """Where the config names an LLM profile: the slots', and the fine passes' picks."""
        yield from super().profile_references()
        yield from ((f"fine pass {p!r}", name) for p, name in self.fine.pass_profiles.items())

    @model_validator(mode="after")
    def _reconcile_needs_a_store(self) -> BaseReaderConfig:
        # Refused when the config is read, not at the first fine read an hour into a job.
        if self.store is None and "reconcile" in self.fine.enabled_passes():
            raise ValueError(
                "fine.passes lists reconcile, which needs the reader's store: set `store:` "
                "(sqlite:///memories.db or postgresql://...), or take reconcile out of "
                "fine.passes"
            )
        return self


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
