"""Where batch jobs write: sinks registered by name (``jsonl``, ``parquet``, ``store``, and
whatever plugins register through the ``memreader.plugins`` entry points), each over the job's
output folder (a local folder or ``s3://bucket/prefix``) that holds the manifest, errors and
summary. See :mod:`~memreader.batch.sinks.base` for the base classes and
:mod:`~memreader.batch.sinks.files` for sinks that write files.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from memreader.batch.components import SINKS, check_sink_name
from memreader.batch.sinks.base import (
    InputWriter,
    Sink,
    output_stem,
    register_sink,
    sink_class,
)
from memreader.batch.sinks.folders import OutputFolder
from memreader.batch.sinks.local_folder import LocalFolder
from memreader.batch.sinks.s3_folder import S3Folder
from memreader.errors import ConfigError, SinkError
from memreader.transport.s3 import is_s3_url, parse_s3_url

if TYPE_CHECKING:
    from memreader.batch.job import OutputSpec
    from memreader.transport.s3 import S3Settings

__all__ = [
    "SINKS",
    "InputWriter",
    "OutputFolder",
    "Sink",
    "SinkError",
    "build_sink",
    "check_sink_name",
    "open_folder",
    "output_stem",
    "register_sink",
    "sink_class",
]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def build_sink(
    spec: OutputSpec, *, s3: S3Settings, base_dir: str | None = None, s3_client: Any = None
) -> Sink:
    """The sink ``spec.format`` names, over the output folder ``spec.path``.

    Args:
        spec: the job's ``output``.
        s3: the S3 endpoint, region and profile for an ``s3://`` folder (credentials come from
            the usual AWS chain).
        base_dir: the folder a relative ``spec.path`` is relative to (the job file's).
        s3_client: a boto3 S3 client to use instead of one built from ``s3``; never closed here.

    Raises:
        ConfigError: an unknown sink, one that cannot work here (``parquet`` without pyarrow),
            or a malformed ``s3://`` URL or other URL.
        SinkError: the local folder cannot be created.
    """
    cls = sink_class(spec.format)
    cls.check(spec)  # before anything is created
    if spec.store is not None:  # a relative SQLite file is relative to the job, as path is
        from pydantic import SecretStr

        from memreader.batch.job import resolve_store_url

        url = resolve_store_url(spec.store.get_secret_value(), base_dir)
        spec = spec.model_copy(update={"store": SecretStr(url)})
    folder = open_folder(spec.path, s3=s3, base_dir=base_dir, s3_client=s3_client)
    try:
        return cls(spec, folder)
    except BaseException:
        folder.close()
        raise


def open_folder(
    path: str, *, s3: S3Settings, base_dir: str | None = None, s3_client: Any = None
) -> OutputFolder:
    """The output folder ``path``: ``s3://bucket/prefix``, or a local folder (relative to
    ``base_dir``; created if missing).

    Args:
        path: the job's ``output.path``.
        s3: the S3 endpoint, region and profile (credentials come from the usual AWS chain).
        base_dir: the folder a relative ``path`` is relative to (the job file's).
        s3_client: a boto3 S3 client to use instead of one built from ``s3``; never closed here.

    Raises:
        ConfigError: a malformed ``s3://`` URL or another URL.
        SinkError: the local folder cannot be created.
    """
    if is_s3_url(path):
        try:
            url = parse_s3_url(path, prefix=True)
        except ConfigError as exc:
            raise ConfigError(f"output.path: {exc}") from None
        return S3Folder(url, s3=s3, client=s3_client)
    if _URL.match(path):
        raise ConfigError("output.path must be a local folder or an s3://bucket/prefix URL")
    path = os.path.expanduser(path)
    if not os.path.isabs(path) and base_dir:
        path = os.path.join(base_dir, path)
    return LocalFolder(os.path.abspath(path))
