"""A job's settings split for the components that use them, once, at the top of a run: the
reader config (read from the job or its file and validated, once), the inputs' spec, the
workers' spec (which the engine hands to every worker it makes), the engine's and the output's
(its store URL resolved once, for the sink and the reader's ``dedup`` alike). Below this module
no component sees the whole :class:`~memreader.batch.job.JobConfig`: each gets what it needs.

>>> job = JobConfig.model_validate({"inputs": [{"path": "a"}], "output": {"path": "out"}})
>>> plan = plan_job(job, refine=True)
>>> plan.inputs.type, plan.worker.calls.refine, plan.engine.kind
('chat', True, 'local')
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

from memreader.batch.inputs import InputsSpec
from memreader.batch.job import EngineSpec, JobConfig, OutputSpec
from memreader.batch.places import PlaceSettings
from memreader.batch.worker import CallSpec, WorkerSpec
from memreader.factory import MemReaderConfigFactory

__all__ = ["JobPlan", "inputs_spec", "plan_job", "with_store"]


@dataclass(frozen=True)
class JobPlan:
    """Each component's part of one job (see the module docstring): ``reader``, the reader
    config as the job gives it, validated (the fingerprint digests it); ``inputs``; ``worker``
    (its ``reader`` is the same config with the output store set); ``engine``; ``output`` (its
    store resolved) and the ``places`` settings the sink is built with."""

    reader: MemReaderConfigFactory
    inputs: InputsSpec
    worker: WorkerSpec
    engine: EngineSpec
    output: OutputSpec
    places: PlaceSettings


def inputs_spec(job: JobConfig) -> InputsSpec:
    """What the inputs of ``job`` need (see :class:`~memreader.batch.inputs.InputsSpec`)."""
    return InputsSpec(
        specs=tuple(job.inputs),
        type=job.type,
        scenes_per_call=job.scenes_per_call,
        places=PlaceSettings(job.base_dir, job.s3),
        output_path=job.output.path,
    )


def plan_job(job: JobConfig, *, refine: bool = False) -> JobPlan:
    """The parts of ``job`` for a run (``refine``: a refinement run).

    Raises:
        ConfigError: the reader config is not valid (or its file cannot be read).
    """
    inputs = inputs_spec(job)
    calls = CallSpec(
        type=job.type,
        mode=job.mode,
        tags=tuple(job.tags),
        created_at=job.created_at,
        refine=refine,
        scenes_per_call=job.scenes_per_call,
    )
    reader = MemReaderConfigFactory.from_dict(job.reader_config())
    store = job.store_url()
    output = job.output
    if store is not None:  # a relative SQLite file is relative to the job, as output.path is
        output = output.model_copy(update={"store": SecretStr(store)})
    worker = WorkerSpec(with_store(reader, store), calls, inputs, output, inputs.places)
    return JobPlan(reader, inputs, worker, job.engine, output, inputs.places)


def with_store(reader: MemReaderConfigFactory, store: str | None) -> MemReaderConfigFactory:
    """``reader`` with its ``store`` set to ``store`` (the job's output store: the reader looks
    its items up there before embedding, the ``dedup`` step); ``reader`` itself when ``store``
    is ``None``. The URL was checked with the job's output, so nothing is validated again."""
    if store is None:
        return reader
    config = reader.config.model_copy(update={"store": SecretStr(store)})
    return reader.model_copy(update={"config": config})
