"""The strategy structured reader: chats read in groups of whole messages (by a character
budget or a number of messages, groups overlapping by whole messages), with an extraction prompt
that says whose each memory is; documents as in the simple reader.

>>> reader = StrategyStructMemReader(StrategyStructMemReaderConfig(embedder=None))
>>> [s.name for s in reader.pipeline][:4]
['normalize', 'parse', 'window', 'fast_items']
>>> StrategyStructMemReaderConfig(strategy={"chunk_by": "session", "chunk_session": 4,
...                                         "chunk_overlap": 3})  # doctest: +ELLIPSIS
Traceback (most recent call last):
memreader.errors.ConfigError: ...chunk_overlap (3) must be at most half of chunk_session (4)...
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from memreader.config import BaseReaderConfig
from memreader.config_model import ConfigModel
from memreader.extraction.agent_prompts import STRATEGY_EXTRACT_SYSTEM
from memreader.grouping import GroupingConfig, group_windows
from memreader.pipeline import Pipeline, ReaderRuntime
from memreader.pipeline.step import STEPS
from memreader.pipeline.steps import WindowStep, default_steps
from memreader.readers.base import BaseMemReader, register_reader
from memreader.scene import Scene
from memreader.windows import Unit, Window

__all__ = [
    "StrategyConfig",
    "StrategyStructMemReader",
    "StrategyStructMemReaderConfig",
    "StrategyWindow",
]


class StrategyConfig(ConfigModel):
    """How the strategy reader groups a chat's messages.

    - ``chunk_by``: ``content_length`` (as many whole messages as fit ``content_length``
      characters of rendered lines; a longer message is split exactly into pieces of its own) or
      ``session`` (``chunk_session`` messages per group).
    - ``chunk_overlap``: whole messages shared by consecutive groups: at most half of
      ``chunk_session`` in session mode; in content-length mode at most half of
      ``content_length`` characters are carried, and only messages not carried before. Every
      message is read at most twice (see :mod:`memreader.grouping`).

    Every group is also held to the window token budget (``window.max_tokens``): a longer one
    is cut into several windows.
    """

    chunk_by: Literal["content_length", "session"] = "content_length"
    content_length: int = Field(default=4000, ge=64)
    chunk_session: int = Field(default=20, ge=1)
    chunk_overlap: int = Field(default=2, ge=0)

    @model_validator(mode="after")
    def _check(self) -> StrategyConfig:
        self.grouping()  # raises ConfigError (a ValueError) naming the fields
        return self

    def grouping(self) -> GroupingConfig:
        """The splitter's settings."""
        return GroupingConfig(
            chunk_by=self.chunk_by,
            content_length=self.content_length,
            chunk_session=self.chunk_session,
            chunk_overlap=self.chunk_overlap,
        )


class StrategyStructMemReaderConfig(BaseReaderConfig):
    """The strategy reader's settings: those every reader shares, plus ``strategy`` (how chats
    are grouped; see :class:`StrategyConfig`)."""

    strategy: StrategyConfig = Field(default_factory=StrategyConfig)


@STEPS.register("strategy_window")
class StrategyWindow(WindowStep):
    """Chats in groups of whole messages (see :mod:`memreader.grouping`), documents by tokens
    as in the simple reader; one report entry per window."""

    def windows_of(self, scene: Scene, units: list[Unit], runtime: ReaderRuntime) -> list[Window]:
        if scene.type != "chat":
            return runtime.windower.windows(units)
        config: StrategyStructMemReaderConfig = runtime.config  # type: ignore[assignment]
        return group_windows(units, config.strategy.grouping(), runtime.windower)


@register_reader("strategy_struct")
class StrategyStructMemReader(BaseMemReader):
    """Reads chats in groups of whole messages and attributes every memory to who said it
    (``[user viewpoint]``, names in tags), with the simple reader's JSON contract, cited
    sources, filter, rewrite and fallbacks; documents as in the simple reader."""

    config_class = StrategyStructMemReaderConfig

    @classmethod
    def default_pipeline(cls, config: BaseReaderConfig) -> Pipeline:
        """The simple reader's steps with the grouping window step and the strategy prompt."""
        pipeline = Pipeline(default_steps(config.fine, extract_prompts=STRATEGY_EXTRACT_SYSTEM))
        pipeline.replace("window", StrategyWindow())
        return pipeline
