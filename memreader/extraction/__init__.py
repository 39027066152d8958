"""Fine-mode extraction: prompts (en/zh), the JSON contract, and the per-window plan of
extract -> hallucination filter -> rewrite."""

from memreader.extraction.contract import (
    EXTRACTION_SCHEMA,
    FILTER_SCHEMA,
    REWRITE_SCHEMA,
    ContractError,
    ExtractedMemory,
    Extraction,
    memory_type_from,
    read_extraction,
    read_results,
)
from memreader.extraction.fine import (
    LLMRequest,
    PassStatus,
    WindowInput,
    WindowOutcome,
    arun_plan,
    failed_outcome,
    run_plan,
    short_error,
    window_plan,
)
from memreader.extraction.language import detect_language

__all__ = [
    "EXTRACTION_SCHEMA",
    "FILTER_SCHEMA",
    "REWRITE_SCHEMA",
    "ContractError",
    "ExtractedMemory",
    "Extraction",
    "LLMRequest",
    "PassStatus",
    "WindowInput",
    "WindowOutcome",
    "arun_plan",
    "detect_language",
    "failed_outcome",
    "memory_type_from",
    "read_extraction",
    "read_results",
    "run_plan",
    "short_error",
    "window_plan",
]
