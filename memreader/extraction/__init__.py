"""Fine-mode extraction: prompts (en/zh), the JSON contract, and the per-window plans of the
passes (extract, hallucination filter, rewrite)."""

from memreader.extraction.contract import (
    EXTRACTION_SCHEMA,
    FILTER_SCHEMA,
    REWRITE_SCHEMA,
    CategoryMenu,
    ContractError,
    ExtractedMemory,
    Extraction,
    extraction_schema,
    memory_type_from,
    read_extraction,
    read_results,
)
from memreader.extraction.fine import (
    LLMRequest,
    PassStatus,
    Plan,
    WindowInput,
    WindowOutcome,
    arun_plan,
    extract_plan,
    failed_outcome,
    filter_plan,
    rewrite_plan,
    run_plan,
    short_error,
)
from memreader.extraction.language import detect_language

__all__ = [
    "EXTRACTION_SCHEMA",
    "FILTER_SCHEMA",
    "REWRITE_SCHEMA",
    "CategoryMenu",
    "ContractError",
    "ExtractedMemory",
    "Extraction",
    "LLMRequest",
    "PassStatus",
    "Plan",
    "WindowInput",
    "WindowOutcome",
    "arun_plan",
    "detect_language",
    "extract_plan",
    "extraction_schema",
    "failed_outcome",
    "filter_plan",
    "memory_type_from",
    "read_extraction",
    "read_results",
    "rewrite_plan",
    "run_plan",
    "short_error",
]
