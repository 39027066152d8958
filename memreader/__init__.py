"""memreader: turn chat logs, documents and tool traces into embedded memory items with exact
provenance.

>>> from memreader import Memory
>>> m = Memory()  # doctest: +SKIP
>>> m.add([{"role": "user", "content": "I love green tea."}], user_id="u1")  # doctest: +SKIP
>>> m.search("what does u1 drink?", user_id="u1")  # doctest: +SKIP

The reader alone (no store):

>>> from memreader import SimpleStructMemReader
>>> reader = SimpleStructMemReader()  # doctest: +SKIP
>>> items = reader.get_memory(  # doctest: +SKIP
...     [[{"role": "user", "content": "I love green tea."}]],
...     type="chat", info={"user_id": "u1", "session_id": "s1"})
"""

from memreader._version import __version__
from memreader.calls.deadlines import Deadline
from memreader.config import BaseReaderConfig, PipelineSpec, StepSpec, WindowConfig
from memreader.embedders.config import EmbedderConfig
from memreader.errors import (
    BlockedAddressError,
    BlockedBucketError,
    ConfigError,
    DeadlineExceeded,
    DocumentError,
    EmbeddingError,
    FetchError,
    ImageError,
    InputError,
    InternalError,
    InvalidChatTimeError,
    InvalidCursorError,
    InvalidInfoError,
    InvalidMessageError,
    InvalidSceneError,
    LLMRequiredError,
    MemReaderError,
    MissingEmbedderError,
    PipelineError,
    SinkError,
    SkillWriteError,
    StoreError,
    TranscriptionError,
    UnknownMemoryError,
    UnknownRoleError,
    UnsupportedModeError,
)
from memreader.factory import MemReaderConfigFactory, MemReaderFactory
from memreader.front import AddResult, AsyncMemory, Memory
from memreader.items import (
    MEMORY_TYPES,
    MemoryType,
    SourceMessage,
    TextualMemoryItem,
    TextualMemoryItemMetadata,
)
from memreader.pipeline import Pipeline, Step, StepEvent, StepHooks, step
from memreader.readers import (
    READERS,
    BaseMemReader,
    MultiModalStructMemReader,
    MultiModalStructMemReaderConfig,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    StrategyStructMemReader,
    StrategyStructMemReaderConfig,
    register_reader,
)
from memreader.steps.report import PartReport, ReadReport, WindowReport
from memreader.steps.state import ReadState

__all__ = [
    "MEMORY_TYPES",
    "READERS",
    "AddResult",
    "AsyncMemory",
    "BaseMemReader",
    "BaseReaderConfig",
    "BlockedAddressError",
    "BlockedBucketError",
    "ConfigError",
    "Deadline",
    "DeadlineExceeded",
    "DocumentError",
    "EmbedderConfig",
    "EmbeddingError",
    "FetchError",
    "ImageError",
    "InputError",
    "InternalError",
    "InvalidChatTimeError",
    "InvalidCursorError",
    "InvalidInfoError",
    "InvalidMessageError",
    "InvalidSceneError",
    "LLMRequiredError",
    "MemReaderConfigFactory",
    "MemReaderError",
    "MemReaderFactory",
    "Memory",
    "MemoryType",
    "MissingEmbedderError",
    "MultiModalStructMemReader",
    "MultiModalStructMemReaderConfig",
    "PartReport",
    "Pipeline",
    "PipelineError",
    "PipelineSpec",
    "ReadReport",
    "ReadState",
    "SimpleStructMemReader",
    "SimpleStructMemReaderConfig",
    "SinkError",
    "SkillWriteError",
    "SourceMessage",
    "Step",
    "StepEvent",
    "StepHooks",
    "StepSpec",
    "StoreError",
    "StrategyStructMemReader",
    "StrategyStructMemReaderConfig",
    "TextualMemoryItem",
    "TextualMemoryItemMetadata",
    "TranscriptionError",
    "UnknownMemoryError",
    "UnknownRoleError",
    "UnsupportedModeError",
    "WindowConfig",
    "WindowReport",
    "__version__",
    "register_reader",
    "step",
]
