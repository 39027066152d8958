"""What shapes a job's items, as a digest the manifest keeps with each input, so a rerun with a
changed job reads the inputs again instead of keeping items made by the old one.

An input's fingerprint covers: the memreader version, the command (``ingest`` or ``refine``),
the job's ``type``, ``mode`` (not for refine jobs, which ignore it), the reader config as
validated (defaults filled in, so spelling a default out changes nothing), ``created_at``,
``tags``, the output format (and a store output's URL, without its password), and the input
spec that found it (``format``, ``mapping``, ``user_id``, ``session_id``; not its ``path`` or
``max_bytes``). It leaves out what does not
change items: ``scenes_per_call``, the engine, ``shard_bytes``, the S3 settings, the reader
config's secrets (a rotated API key) and its :data:`OPERATIONAL` settings (concurrency,
timeouts, retries), wherever they are in it.

>>> from memreader.batch.job import JobConfig
>>> job = JobConfig.model_validate({"inputs": [{"path": "a"}], "output": {"path": "out"}})
>>> from memreader.factory import MemReaderConfigFactory
>>> reader = MemReaderConfigFactory()
>>> fast = input_fingerprints(job, reader)
>>> fine = input_fingerprints(job.model_copy(update={"mode": "fine"}), reader)
>>> len(fast[0]), fast == fine
(64, False)
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from memreader._version import __version__
from memreader.batch.job import JobConfig
from memreader.stores.urls import public_url

if TYPE_CHECKING:
    from memreader.factory import MemReaderConfigFactory

__all__ = ["OPERATIONAL", "input_fingerprints"]

#: Keys of a reader config that say how to call a service, not what comes out of it.
OPERATIONAL = frozenset(
    {
        "llm_max_concurrency",
        "embedding_cache_size",
        "timeout",
        "max_retries",
        "backoff_base",
        "backoff_max",
        "extra_headers",
        "transport",
    }
)


def input_fingerprints(
    job: JobConfig, reader: MemReaderConfigFactory, *, refine: bool = False
) -> list[str]:
    """One fingerprint (sha256, hex) per entry of ``job.inputs``, in order; ``reader``: the
    job's reader config as validated (once for the run, by :func:`~memreader.batch.plan.plan_job`;
    without the output store the workers' copy is given)."""
    common: dict[str, Any] = {
        "memreader": __version__,
        "command": "refine" if refine else "ingest",
        "type": job.type,
        "mode": None if refine else job.mode,
        # JSON mode writes every secret as "**********".
        "reader": _shaping(reader.model_dump(mode="json", serialize_as_any=True)),
        "created_at": job.created_at.isoformat() if job.created_at is not None else None,
        "tags": list(job.tags),
        "output_format": job.output.format,
    }
    if job.output.store is not None:
        # Where the items go is part of what a store job made (a rerun into another store
        # reads everything again); as written, without its password.
        common["output_store"] = public_url(job.output.store.get_secret_value())
    return [
        _digest({**common, "input": spec.model_dump(mode="json", exclude={"path", "max_bytes"})})
        for spec in job.inputs
    ]


def _shaping(value: Any) -> Any:
    """``value`` without its :data:`OPERATIONAL` keys, at any depth."""
    if isinstance(value, dict):
        return {k: _shaping(v) for k, v in value.items() if k not in OPERATIONAL}
    if isinstance(value, list):
        return [_shaping(v) for v in value]
    return value


def _digest(data: dict[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
