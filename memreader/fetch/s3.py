"""Reading ``s3://bucket/key`` objects for :class:`~memreader.fetch.fetcher.Fetcher`.

The S3 half of fetching lives here because it shares nothing with the http path but the
content-type rules (:mod:`memreader.fetch.media_types`): boto3 is built lazily from
:class:`~memreader.fetch.settings.S3Config` (boto3 is imported only when an ``s3://``
reference is fetched), botocore retries transient failures itself, and its errors are put into
words here by their code and type, never by their message (which may quote a presigned URL or
the request's credentials).

The endpoint is configured by the operator and trusted: it is not put through the SSRF check
(MinIO on a private address is the common case). The size limit is checked against the
object's ``ContentLength`` and again while reading; the whole read has the ``timeout_s``
deadline, checked between chunks.

:class:`S3Reader` does no slot accounting and builds no :class:`~memreader.fetch.fetcher.Fetched`:
the Fetcher does both, so this module never imports it.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memreader.errors import BlockedBucketError, ConfigError, FetchError
from memreader.fetch.media_types import FetchKind, check_content_type, media_type_of
from memreader.fetch.settings import FetchConfig, FetchS3Config, has_dot_segments
from memreader.transport.s3 import LazyS3Client, parse_s3_url

__all__ = ["S3Object", "S3Reader", "check_bucket_allowed"]

_CHUNK = 64 * 1024

_S3_MISSING_KEY = frozenset({"NoSuchKey", "404", "NotFound"})
_S3_REFUSED = frozenset(
    {
        "AccessDenied",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "403",
        "Forbidden",
        "AllAccessDisabled",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
    }
)


@dataclass(frozen=True)
class S3Object:
    """An object read from S3.

    Attributes:
        data: the bytes.
        label: ``s3://bucket/key``.
        name: the name hint, else the key's base name.
        media_type: the object's ``ContentType`` without parameters (``None`` if unset).
    """

    data: bytes
    label: str
    name: str
    media_type: str | None


class S3Reader:
    """Gets S3 objects with a size limit, through one client built once (or injected).

    Args:
        config: how downloads are made (``s3``, ``timeout_s``, ``max_retries``,
            ``max_concurrency``; ``allowed_content_types`` for documents).
        client: a boto3 S3 client to use instead of one built from ``config.s3``; it is never
            closed here.
        on_retries: called with botocore's retry count of each answered request.

    Thread-safe.
    """

    def __init__(
        self,
        config: FetchConfig,
        *,
        client: Any = None,
        on_retries: Callable[[int], None] | None = None,
    ) -> None:
        self._config = config
        self._clients = LazyS3Client(
            config.s3,
            client=client,
            connect_timeout=config.timeout_s,
            read_timeout=config.timeout_s,
            attempts=config.max_retries + 1,
            pool=config.max_concurrency,
        )
        self._on_retries = on_retries

    def get(self, path: str, kind: FetchKind, limit: int, hint: str) -> S3Object:
        """``s3://`` + ``path``: one GetObject, read in chunks up to ``limit + 1`` bytes.

        botocore retries transient failures itself (standard mode, ``max_retries``); its
        errors are worded here by their code, never with the request's credentials.

        Raises:
            FetchError: no bucket or key, a missing key or bucket, refused credentials, an
                unreachable endpoint, a timeout, a content type that does not fit ``kind``, or
                an object over ``limit`` bytes.
            BlockedBucketError: not a bucket name, or a bucket or key that
                ``fetch.s3.allow_buckets`` does not allow.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            url = parse_s3_url(f"s3://{path}")
        except ConfigError as exc:  # content named something that is not a bucket: refused
            raise BlockedBucketError(f"s3://{path}: {exc}") from None
        bucket, key = url.bucket, url.key
        label = f"s3://{bucket}/{key}"
        if not key:
            raise FetchError(f"{label}: an s3:// URL needs a bucket and a key")
        check_bucket_allowed(bucket, key, self._config.s3, label)
        try:
            response = self._s3().get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            raise _s3_refusal(exc, label, bucket) from None
        except BotoCoreError as exc:
            raise FetchError(f"{label}: {_botocore_problem(exc)}") from None
        if self._on_retries is not None:
            self._on_retries(int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0)))
        body = response["Body"]
        try:
            length = response.get("ContentLength")
            if isinstance(length, int) and length > limit:
                raise FetchError(f"{label}: {length} bytes, over the limit of {limit} bytes")
            media_type = media_type_of(response.get("ContentType"))
            name = hint or posixpath.basename(key)
            check_content_type(kind, media_type, name, label, self._config, lenient=True)
            data = self._read(body, limit, label)
        finally:
            body.close()
        return S3Object(data, label, name, media_type)

    def close(self) -> None:
        """Close the client built here, if any; an injected client is left open."""
        self._clients.close()

    def _read(self, body: Any, limit: int, label: str) -> bytes:
        """The object's bytes; each read is bounded by botocore's read timeout, and the whole
        by ``timeout_s`` checked between chunks."""
        from botocore.exceptions import BotoCoreError

        end = time.monotonic() + self._config.timeout_s
        chunks: list[bytes] = []
        total = 0
        try:
            while total <= limit:
                if time.monotonic() > end:
                    raise FetchError(
                        f"{label}: no complete answer within {self._config.timeout_s:g}s"
                    )
                chunk = body.read(min(_CHUNK, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except (BotoCoreError, OSError) as exc:
            raise FetchError(f"{label}: {_botocore_problem(exc)}") from None
        if total > limit:
            raise FetchError(f"{label}: the object is over the limit of {limit} bytes")
        return b"".join(chunks)

    def _s3(self) -> Any:
        """The S3 client: the injected one, or one built once from ``config.s3``."""
        from botocore.exceptions import BotoCoreError

        try:
            return self._clients.get()
        except BotoCoreError as exc:
            raise FetchError(f"cannot set up S3: {_botocore_problem(exc)}") from None


def _s3_refusal(exc: Any, label: str, bucket: str) -> FetchError:
    """An S3 error answer in words: by its code and status, never its request."""
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in _S3_MISSING_KEY:
        return FetchError(f"{label}: no such key")
    if code == "NoSuchBucket":
        return FetchError(f"{label}: no such bucket {bucket!r}")
    if code in _S3_REFUSED:
        return FetchError(f"{label}: access refused ({code})")
    return FetchError(f"{label}: S3 error {code or 'unknown'} (HTTP {status})")


def _botocore_problem(exc: BaseException) -> str:
    """A botocore failure in words, without its message (which may quote a presigned URL)."""
    from botocore.exceptions import (
        ConnectionError as BotoConnectionError,
    )
    from botocore.exceptions import (
        NoCredentialsError,
        PartialCredentialsError,
        ProfileNotFound,
        ReadTimeoutError,
    )

    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return "no usable AWS credentials were found"
    if isinstance(exc, ProfileNotFound):
        return "the configured AWS profile does not exist"
    if isinstance(exc, ReadTimeoutError):
        return f"the S3 endpoint timed out ({type(exc).__name__})"
    if isinstance(exc, BotoConnectionError):
        return f"cannot reach the S3 endpoint ({type(exc).__name__})"
    return f"S3 request failed ({type(exc).__name__})"


def check_bucket_allowed(bucket: str, key: str, config: FetchS3Config, label: str) -> None:
    """Refuse ``s3://bucket/key`` unless ``config.allow_buckets`` (``fetch.s3.allow_buckets``)
    lists the bucket, or a prefix of the key in it (see :class:`FetchS3Config`).

    Raises:
        BlockedBucketError: naming the object and the setting to change.
    """
    if has_dot_segments(key):
        raise BlockedBucketError(f"{label}: an s3:// key with '.' or '..' segments is refused")
    if config.allows(bucket, key):
        return
    prefixes = [entry for entry in config.allow_buckets if entry.partition("/")[0] == bucket]
    if prefixes:
        raise BlockedBucketError(
            f"{label}: the key is outside the prefixes fetch.s3.allow_buckets allows in bucket "
            f"{bucket!r} ({', '.join(repr(p) for p in prefixes)})"
        )
    raise BlockedBucketError(
        f"{label}: bucket {bucket!r} is not in fetch.s3.allow_buckets; s3:// references in "
        f"content are read only from buckets the operator lists there (add {bucket!r}, or "
        f"'{bucket}/prefix/' for part of it)"
    )
