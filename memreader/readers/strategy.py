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

from memreader.config import BaseReaderConfig
from memreader.extraction.agent_prompts import STRATEGY_EXTRACT_SYSTEM
from memreader.pipeline import Pipeline
from memreader.readers.base import BaseMemReader, register_reader
from memreader.steps.fine import Extract
from memreader.steps.preset import default_steps
from memreader.steps.read import StrategySettings, StrategyWindow
from memreader.steps.state import INPUTS

__all__ = ["StrategyStructMemReader", "StrategyStructMemReaderConfig"]


class StrategyStructMemReaderConfig(BaseReaderConfig, StrategySettings):
    """The strategy reader's settings: those every reader shares, plus ``strategy`` (how chats
    are grouped: :class:`~memreader.windowing.grouping.GroupingConfig`)."""


@register_reader("strategy_struct")
class StrategyStructMemReader(BaseMemReader):
    """Reads chats in groups of whole messages and attributes every memory to who said it
    (``[user viewpoint]``, names in tags), with the simple reader's JSON contract, cited
    sources, filter, rewrite and fallbacks; documents as in the simple reader."""

    config_class = StrategyStructMemReaderConfig

    @classmethod
    def default_pipeline(cls, config: BaseReaderConfig) -> Pipeline:
        """The simple reader's steps with the grouping window step and the strategy prompt."""
        pipeline = Pipeline(
            default_steps(config.fine, categorize=config.categories.enabled), inputs=INPUTS
        )
        pipeline.replace("window", StrategyWindow())
        pipeline.replace("extract", Extract(STRATEGY_EXTRACT_SYSTEM))
        return pipeline
