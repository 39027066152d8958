"""Batch ingestion: YAML jobs over whole corpora, streaming, resumable, on one machine or Ray.

How a job's settings flow, top down: :mod:`~memreader.batch.job` (the job file's models,
``load_job``) -> :mod:`~memreader.batch.plan` (the job split once per run into each component's
spec) -> :mod:`~memreader.batch.job_run` (``run_job``, ``dry_run``: discovery, the manifest,
the summary) -> :mod:`~memreader.batch.engines` (where workers run) ->
:mod:`~memreader.batch.worker` (one input at a time through the reader) ->
:mod:`~memreader.batch.inputs` (through :mod:`~memreader.batch.formats`) and
:mod:`~memreader.batch.sinks`, both over :mod:`~memreader.batch.places` (a local folder or an
S3 prefix, read side and write side). :mod:`~memreader.batch.results` is what an input
became, :mod:`~memreader.batch.registries` the formats and sinks by name.
"""
