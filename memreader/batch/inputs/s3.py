"""Inputs in S3: ``s3://bucket/prefix`` is the object ``prefix`` and the objects under
``prefix/`` (so ``s3://b/chats`` does not take ``chats-old/``); with a trailing slash, or at the
bucket's root, every object under it. Keys ending in ``/`` are folder markers, not inputs."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from memreader.batch.inputs.storage import InputRef, InputStorage, Read
from memreader.errors import ConfigError, FetchError, InputError
from memreader.transport.s3 import LazyS3Client, parse_s3_url

if TYPE_CHECKING:
    from memreader.batch.job import InputSpec, JobConfig

__all__ = ["S3Storage"]

_T = TypeVar("_T")


class S3Storage(InputStorage):
    """The S3 inputs of ``job``, through one client built from ``job.s3`` (or ``client``, an
    injected boto3 client that is never closed here)."""

    def __init__(self, job: JobConfig, *, client: Any = None) -> None:
        self._job = job
        self._s3 = LazyS3Client(job.s3, client=client)

    def discover(self, index: int, spec: InputSpec) -> list[InputRef]:
        """The objects ``spec`` names; the objects right under the job's output prefix are
        left out.

        Raises:
            ConfigError: a malformed ``s3://`` URL.
            InputError: nothing matches, or only the job's own output.
            FetchError: S3 could not be listed.
        """
        where = f"inputs.{index}"
        try:
            url = parse_s3_url(spec.path, prefix=True)
        except ConfigError as exc:
            raise ConfigError(f"{where}.path: {exc}") from None
        bucket, prefix = url.bucket, url.key
        # A trailing slash names a folder: everything under it (and not an object "prefix").
        folder = not prefix or spec.path.endswith("/")
        listed = f"{prefix}/" if prefix and folder else prefix

        def listing() -> list[tuple[str, int | None]]:
            pages = (
                self._s3.get()
                .get_paginator("list_objects_v2")
                .paginate(Bucket=bucket, Prefix=listed)
            )
            return [
                (obj["Key"], obj.get("Size")) for page in pages for obj in page.get("Contents", ())
            ]

        objects = self._call(f"{where}: listing s3://{bucket}/{listed}", listing)
        refs = [
            InputRef(f"s3://{bucket}/{key}", index, f"s3://{bucket}/{key}", size)
            for key, size in sorted(objects)
            if not key.endswith("/") and (folder or key == prefix or key.startswith(prefix + "/"))
        ]
        if not refs:
            raise InputError(f"{where}: no object matches {spec.path!r}")
        output = self._job.output_location()
        if output.startswith("s3://"):
            out = parse_s3_url(output, prefix=True)
            refs = [
                ref
                for ref in refs
                if bucket != out.bucket
                or posixpath.dirname(ref.location[len(f"s3://{bucket}/") :]) != out.key
            ]
            if not refs:
                raise InputError(f"{where}: {spec.path!r} holds only the job's own output")
        return refs

    @contextmanager
    def open(self, ref: InputRef) -> Iterator[Read]:
        """A read over the body of the object ``ref`` (one GetObject)."""
        url = parse_s3_url(ref.location)
        response = self._call(
            f"{ref.key}: reading",
            lambda: self._s3.get().get_object(Bucket=url.bucket, Key=url.key),
        )
        body = response["Body"]

        def read_s3(size: int) -> bytes:
            data: bytes = self._call(f"{ref.key}: reading", lambda: body.read(size))
            return data

        try:
            yield read_s3
        finally:
            body.close()

    def close(self) -> None:
        """Close the S3 client built here, if any (an injected one stays open)."""
        self._s3.close()

    def _call(self, what: str, call: Callable[[], _T]) -> _T:
        """``call()``, with S3's failures (boto3 missing, botocore or connection errors) as a
        :class:`FetchError` that names ``what`` and the error code, never the endpoint."""
        try:
            return call()
        except ImportError:
            raise InputError(f"{what}: reading s3:// inputs needs boto3") from None
        except Exception as exc:
            module = type(exc).__module__
            if not module.startswith(("botocore", "boto3", "urllib3")) and not isinstance(
                exc, OSError
            ):
                raise
            response = getattr(exc, "response", None)
            code = (response or {}).get("Error", {}).get("Code") if response else None
            raise FetchError(f"{what}: {code or type(exc).__name__}") from exc
