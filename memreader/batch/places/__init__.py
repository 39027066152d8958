"""Places that hold files, one module per kind: :mod:`~memreader.batch.places.local` (the local
file system) and :mod:`~memreader.batch.places.s3` (S3 prefixes), each with a read side (the
inputs a spec names) and a write side (an output folder); :mod:`~memreader.batch.places.base`
holds what both kinds share, and :mod:`~memreader.batch.places.opened` one input opened for a
format. This module is the one spot that picks the local or the S3 place for a path.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from memreader.batch.places.base import FileSource, InputRef, OutputFolder, PlaceSettings
from memreader.batch.places.local import LocalFiles, LocalFolder
from memreader.batch.places.s3 import S3Files, S3Folder
from memreader.errors import ConfigError
from memreader.transport.s3 import is_s3_url, parse_s3_url

if TYPE_CHECKING:
    from memreader.transport.s3 import S3Settings

__all__ = [
    "FileSources",
    "PlaceSettings",
    "folder_path",
    "is_s3_url",
    "open_folder",
    "output_location",
]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def folder_path(path: str, base_dir: str | None) -> str:
    """The absolute local folder ``path`` names (``~`` expanded, relative to ``base_dir``)."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path) and base_dir:
        path = os.path.join(base_dir, path)
    return os.path.abspath(path)


def output_location(path: str, base_dir: str | None) -> str:
    """Where the output folder ``path`` is: ``s3://bucket/prefix`` (without outer slashes) or
    the absolute local folder (relative to ``base_dir``). Nothing is created.

    Raises:
        ConfigError: a malformed ``s3://`` URL.

    >>> output_location("s3://b/out/", None), output_location("out", "/jobs")
    ('s3://b/out', '/jobs/out')
    """
    if is_s3_url(path):
        try:
            return str(parse_s3_url(path, prefix=True))
        except ConfigError as exc:
            raise ConfigError(f"output.path: {exc}") from None
    return folder_path(path, base_dir)


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
    return LocalFolder(folder_path(path, base_dir))


class FileSources:
    """The read side of every place a job's inputs may be in: local files (relative to
    ``places.base_dir``) and S3 objects (one client, built from ``places.s3`` on first use, or
    ``s3_client``, never closed here); the files right in the job's output folder
    (``output_path``, its ``output.path``) are never inputs."""

    def __init__(self, places: PlaceSettings, output_path: str, *, s3_client: Any = None) -> None:
        self._base_dir = places.base_dir
        self._output_path = output_path
        self._local = LocalFiles(places.base_dir)
        self._s3 = S3Files(places.s3, client=s3_client)

    def discover(self, index: int, path: str, within: str | None) -> list[InputRef]:
        """The inputs ``path`` (the path of ``inputs.<index>``) names, from its place (see
        :meth:`FileSource.discover`), without the job's own output files.

        Raises:
            InputError: nothing matches (named: ``inputs.2: no file matches 'x/*.json'``).
            ConfigError: a malformed URL, or a malformed ``s3://`` output path.
            FetchError: S3 could not be listed.
        """
        output = output_location(self._output_path, self._base_dir)
        return self.of(path).discover(index, path, within, output)

    def of(self, location: str) -> FileSource:
        """The source of ``location`` (an ``s3://`` URL or a local path)."""
        return self._s3 if is_s3_url(location) else self._local

    @property
    def hidden(self) -> set[str]:
        """The hidden local files and folders passed over since :meth:`forget_hidden`."""
        return self._local.hidden

    def forget_hidden(self) -> None:
        """Start counting hidden files afresh (a new discovery)."""
        self._local.forget_hidden()

    def close(self) -> None:
        """Close the S3 client built here, if any (an injected one stays open)."""
        self._s3.close()
