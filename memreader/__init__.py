"""memreader: turn chat logs, documents and tool traces into embedded memory items with exact
provenance.

>>> from memreader import SimpleStructMemReader
>>> reader = SimpleStructMemReader()  # doctest: +SKIP
>>> items = reader.get_memory(  # doctest: +SKIP
...     [[{"role": "user", "content": "I love green tea."}]],
...     type="chat", info={"user_id": "u1", "session_id": "s1"})
"""

from memreader._version import __version__
from memreader.config import BaseReaderConfig, PipelineSpec, StepSpec, WindowConfig
from memreader.embedders.config import EmbedderConfig
from memreader.errors import (
    ConfigError,
    DocumentError,
    EmbeddingError,
    InputError,
    InternalError,
    InvalidChatTimeError,
    InvalidInfoError,
    InvalidMessageError,
    InvalidSceneError,
    LLMRequiredError,
    MemReaderError,
    PipelineError,
    UnknownRoleError,
    UnsupportedModeError,
)
from memreader.factory import MemReaderConfigFactory, MemReaderFactory
from memreader.items import (
    MEMORY_TYPES,
    MemoryType,
    SourceMessage,
    TextualMemoryItem,
    TextualMemoryItemMetadata,
)
from memreader.pipeline import Pipeline, ReadState, Step, StepEvent, StepHooks, step
from memreader.readers import (
    READERS,
    BaseMemReader,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    register_reader,
)
from memreader.report import ReadReport, WindowReport

__all__ = [
    "MEMORY_TYPES",
    "READERS",
    "BaseMemReader",
    "BaseReaderConfig",
    "ConfigError",
    "DocumentError",
    "EmbedderConfig",
    "EmbeddingError",
    "InputError",
    "InternalError",
    "InvalidChatTimeError",
    "InvalidInfoError",
    "InvalidMessageError",
    "InvalidSceneError",
    "LLMRequiredError",
    "MemReaderConfigFactory",
    "MemReaderError",
    "MemReaderFactory",
    "MemoryType",
    "Pipeline",
    "PipelineError",
    "PipelineSpec",
    "ReadReport",
    "ReadState",
    "SimpleStructMemReader",
    "SimpleStructMemReaderConfig",
    "SourceMessage",
    "Step",
    "StepEvent",
    "StepHooks",
    "StepSpec",
    "TextualMemoryItem",
    "TextualMemoryItemMetadata",
    "UnknownRoleError",
    "UnsupportedModeError",
    "WindowConfig",
    "WindowReport",
    "__version__",
    "register_reader",
    "step",
]
