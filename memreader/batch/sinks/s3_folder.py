"""An S3 output prefix: temporary files live in the system's temporary folder and are uploaded
on publish (an object only exists once its upload finished); small text files are one
PutObject. Failures are worded by their code or type, never their message (which may quote a
presigned URL or the request's credentials)."""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING, Any

from memreader.batch.sinks.folders import OutputFolder, check_name, remove_quietly, text_type
from memreader.errors import SinkError
from memreader.transport.s3 import LazyS3Client, S3Url, s3_code, s3_problem

if TYPE_CHECKING:
    from memreader.transport.s3 import S3Settings

__all__ = ["S3Folder"]


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
