"""S3 places: inputs in S3 (:class:`S3Files`: ``s3://bucket/prefix`` is the object ``prefix`` and
the objects under ``prefix/``, so ``s3://b/chats`` does not take ``chats-old/``; with a trailing
slash, or at the bucket's root, every object under it; keys ending in ``/`` are folder markers,
not inputs) and an S3 output prefix (:class:`S3Folder`: temporary files live in the system's
temporary folder and are uploaded on publish, so an object only exists once its upload
finished; small text files are one PutObject).

Failures are worded by their code or type, never their message (which may quote a presigned
URL or the request's credentials)."""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from memreader.batch.places.base import (
    FileSource,
    InputRef,
    OutputFolder,
    Read,
    check_name,
    remove_quietly,
    text_type,
)
from memreader.errors import ConfigError, FetchError, InputError, SinkError
from memreader.transport.s3 import LazyS3Client, S3Url, parse_s3_url, s3_code, s3_problem

if TYPE_CHECKING:
    from memreader.transport.s3 import S3Settings

__all__ = ["S3Files", "S3Folder"]

_T = TypeVar("_T")


class S3Files(FileSource):
    """The S3 inputs of a job, through one client built from ``s3`` (or ``client``, an injected
    boto3 client that is never closed here)."""

    def __init__(self, s3: S3Settings, *, client: Any = None) -> None:
        self._s3 = LazyS3Client(s3, client=client)

    def discover(self, index: int, path: str, within: str | None, output: str) -> list[InputRef]:
        """The objects ``path`` names (``within`` is for local inputs); the objects right under
        the job's output prefix are left out.

        Raises:
            ConfigError: a malformed ``s3://`` URL.
            InputError: nothing matches, or only the job's own output.
            FetchError: S3 could not be listed.
        """
        where = f"inputs.{index}"
        try:
            url = parse_s3_url(path, prefix=True)
        except ConfigError as exc:
            raise ConfigError(f"{where}.path: {exc}") from None
        bucket, prefix = url.bucket, url.key
        # A trailing slash names a folder: everything under it (and not an object "prefix").
        folder = not prefix or path.endswith("/")
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
            raise InputError(f"{where}: no object matches {path!r}")
        if output.startswith("s3://"):
            out = parse_s3_url(output, prefix=True)
            refs = [
                ref
                for ref in refs
                if bucket != out.bucket
                or posixpath.dirname(ref.location[len(f"s3://{bucket}/") :]) != out.key
            ]
            if not refs:
                raise InputError(f"{where}: {path!r} holds only the job's own output")
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


class S3Folder(OutputFolder):
    """The prefix ``url``, through one client built from ``s3`` (or ``client``, an injected
    boto3 client that is never closed here)."""

    def __init__(self, url: S3Url, *, s3: S3Settings, client: Any = None) -> None:
        self.url = url
        self._clients = LazyS3Client(s3, client=client)

    def location(self, name: str) -> str:
        """``s3://bucket/prefix/name``."""
        return f"s3://{self.url.bucket}/{self.url.child(name)}"

    def temp_dir(self) -> str:
        """The system's temporary folder."""
        return tempfile.gettempdir()

    def publish(self, temp: str, name: str, content_type: str) -> str:
        """Upload ``temp`` as ``name``, then remove ``temp``."""
        location = self.location(name)
        client = self._s3(name)
        try:
            client.upload_file(
                temp, self.url.bucket, self.url.child(name), ExtraArgs={"ContentType": content_type}
            )
        except Exception as exc:
            raise SinkError(f"cannot write {location}: {self._problem(exc)}") from None
        remove_quietly(temp)
        return location

    def names_like(self, start: str) -> list[str]:
        """The names under the prefix that start with ``start`` (one listing)."""
        client = self._s3(start)
        folder = self.url.child("")  # "prefix/" or ""
        try:
            paginator = client.get_paginator("list_objects_v2")
            pages = paginator.paginate(Bucket=self.url.bucket, Prefix=self.url.child(start))
            return [obj["Key"][len(folder) :] for page in pages for obj in page.get("Contents", [])]
        except Exception as exc:
            raise SinkError(
                f"cannot remove stale outputs under {self.location(start)}: {self._problem(exc)}"
            ) from None

    def remove(self, name: str) -> None:
        """Delete the object ``name``."""
        client = self._s3(name)
        try:
            client.delete_object(Bucket=self.url.bucket, Key=self.url.child(name))
        except Exception as exc:
            raise SinkError(
                f"cannot remove the stale {self.location(name)}: {self._problem(exc)}"
            ) from None

    def write_text(self, name: str, text: str) -> str:
        """One PutObject."""
        check_name(name)
        client = self._s3(name)
        try:
            client.put_object(
                Bucket=self.url.bucket,
                Key=self.url.child(name),
                Body=text.encode("utf-8"),
                ContentType=text_type(name),
            )
        except Exception as exc:  # an injected client may raise anything: word it by type
            raise SinkError(f"cannot write {self.location(name)}: {self._problem(exc)}") from None
        return self.location(name)

    def read_text(self, name: str) -> str | None:
        """One GetObject; ``None`` for a missing key."""
        check_name(name)
        client = self._s3(name)
        try:
            answer = client.get_object(Bucket=self.url.bucket, Key=self.url.child(name))
            data: bytes = answer["Body"].read()
        except Exception as exc:
            if s3_code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise SinkError(f"cannot read {self.location(name)}: {self._problem(exc)}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SinkError(f"cannot read {self.location(name)}: not UTF-8 text") from None

    def close(self) -> None:
        """Close the S3 client built here, if any (an injected one is left open)."""
        self._clients.close()

    def _s3(self, name: str) -> Any:
        """The S3 client (built once); its setup failures worded as :class:`SinkError`."""
        return self._clients.get_or_raise(SinkError, f"cannot write {self.location(name)}")

    def _problem(self, exc: BaseException) -> str:
        return s3_problem(exc, self.url.bucket)
