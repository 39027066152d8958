"""S3 for everyone who reads or writes ``s3://``: the fetcher (objects named in content), batch
jobs (inputs and outputs) and the skill writer (bundles). One URL parser, one lazily built
client, and S3 failures put into words without their messages.

The parser keeps one set of rules for every ``s3://`` URL an operator writes (a batch input or
output, the skills folder), the strictest of those the callers used to have:

* the scheme is ``s3://`` in any case;
* the bucket is a bucket name (``[A-Za-z0-9][A-Za-z0-9._-]{0,254}``: S3, MinIO, OSS, COS and GCS
  names all fit; ``user:secret@host`` does not);
* a prefix loses its outer slashes and may not hold ``.``, ``..`` or empty segments, nor a
  backslash (a server or proxy that normalises paths could resolve them elsewhere).

An object named in content (:func:`parse_s3_url` without ``prefix``) keeps its key as written:
whether such a key is allowed is the fetcher's rule (``fetch.s3.allow_buckets``).

Messages never quote the URL: it may carry credentials.

>>> parse_s3_url("S3://bucket/a/b/", prefix=True)
S3Url(bucket='bucket', key='a/b')
>>> str(parse_s3_url("s3://bucket", prefix=True))
's3://bucket'
>>> parse_s3_url("s3://bucket/a/../b", prefix=True)
Traceback (most recent call last):
memreader.errors.ConfigError: an s3:// prefix must not hold '.', '..', empty or '\\' segments
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from memreader.errors import ConfigError
from memreader.transport.log_scrub import install_log_redaction

__all__ = [
    "LazyS3Client",
    "S3Settings",
    "S3Url",
    "is_s3_url",
    "parse_s3_url",
    "s3_code",
    "s3_problem",
]

_SCHEME = "s3://"
_BUCKET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


def is_s3_url(text: str) -> bool:
    """Whether ``text`` starts with ``s3://`` (in any case)."""
    return text[: len(_SCHEME)].lower() == _SCHEME


@dataclass(frozen=True)
class S3Url:
    """A parsed ``s3://bucket/key``: ``key`` is an object's key, or a prefix without outer
    slashes (``""`` for the bucket's root)."""

    bucket: str
    key: str

    def __str__(self) -> str:
        return f"{_SCHEME}{self.bucket}/{self.key}" if self.key else f"{_SCHEME}{self.bucket}"

    def child(self, name: str) -> str:
        """The key of ``name`` under this prefix."""
        return f"{self.key}/{name}" if self.key else name


def parse_s3_url(url: str, *, prefix: bool = False) -> S3Url:
    """The bucket and key of ``url`` (see the module docstring for the rules).

    Args:
        url: ``s3://bucket/key``.
        prefix: ``url`` names a folder (a batch input or output, the skills folder): its outer
            slashes are dropped and its segments checked. Without it, the key is an object's,
            kept as written.

    Raises:
        ConfigError: not ``s3://``, no bucket, not a bucket name, or (``prefix``) a bad segment.
            The message never quotes ``url``; callers put the setting's name before it.
    """
    if not is_s3_url(url):
        raise ConfigError("not an s3:// URL")
    bucket, _, key = url[len(_SCHEME) :].partition("/")
    if not bucket:
        raise ConfigError("an s3:// URL needs a bucket: s3://bucket/prefix")
    if not _BUCKET_NAME.match(bucket):
        raise ConfigError("the s3:// URL's bucket is not a valid bucket name")
    if prefix:
        key = key.strip("/")
        if "\\" in key or (key and any(part in (".", "..", "") for part in key.split("/"))):
            raise ConfigError("an s3:// prefix must not hold '.', '..', empty or '\\' segments")
    return S3Url(bucket, key)


class S3Settings(Protocol):
    """Where a client connects (:class:`~memreader.fetch.settings.S3Config` is one);
    credentials come from the usual AWS chain."""

    @property
    def endpoint_url(self) -> str | None: ...

    @property
    def region_name(self) -> str | None: ...

    @property
    def profile_name(self) -> str | None: ...

    @property
    def addressing_style(self) -> str: ...


class LazyS3Client:
    """An S3 client built on first :meth:`get`, thread-safe; boto3 is imported only then.

    Args:
        settings: where the client connects.
        client: a boto3 S3 client to use instead; it is never closed here.
        connect_timeout, read_timeout: seconds, per socket operation.
        attempts: botocore's ``max_attempts`` (standard retry mode: first try included).
        pool: the most connections kept open.
    """

    def __init__(
        self,
        settings: S3Settings,
        *,
        client: Any = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        attempts: int = 3,
        pool: int = 10,
    ) -> None:
        self._settings = settings
        self._client = client
        self._built = False
        self._limits = (connect_timeout, read_timeout, attempts, pool)
        self._lock = threading.Lock()

    def get(self) -> Any:
        """The client. Raises ``ImportError`` without boto3, and botocore's errors when the
        settings cannot make a client; callers word them as their own typed errors."""
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                connect_timeout, read_timeout, attempts, pool = self._limits
                session = boto3.Session(profile_name=self._settings.profile_name)
                self._client = session.client(
                    "s3",
                    endpoint_url=self._settings.endpoint_url,
                    region_name=self._settings.region_name,
                    config=Config(
                        connect_timeout=connect_timeout,
                        read_timeout=read_timeout,
                        retries={"max_attempts": attempts, "mode": "standard"},
                        s3={"addressing_style": self._settings.addressing_style},
                        max_pool_connections=pool,
                    ),
                )
                self._built = True
            install_log_redaction()  # botocore's loggers print endpoints and signatures
            return self._client

    def get_or_raise(self, error: Callable[[str], Exception], what: str) -> Any:
        """:meth:`get`, with a missing boto3 or settings that cannot make a client raised as
        ``error("<what>: <reason>")`` (worded by type, never the exception's message)."""
        try:
            return self.get()
        except ImportError:
            raise error(f"{what}: S3 needs boto3 (pip install boto3)") from None
        except Exception as exc:  # botocore's configuration errors, worded by type
            raise error(f"{what}: cannot set up S3 ({s3_problem(exc, '')})") from None

    def close(self) -> None:
        """Close the client built here, if any (a later :meth:`get` builds a new one); an
        injected client is left open."""
        with self._lock:
            client, built, self._built = self._client, self._built, False
            if built:
                self._client = None
        if built and client is not None:
            client.close()


def s3_code(exc: BaseException) -> str:
    """The error code of an S3 answer behind ``exc`` (boto3's upload wraps it), or ``""``."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            break
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            return str(response.get("Error", {}).get("Code", "")) or "unknown"
        seen = seen.__cause__ or seen.__context__
    return ""


def s3_problem(exc: BaseException, bucket: str) -> str:
    """An S3 failure in words: the code of an answer, else the exception's type; never its
    message, which may quote a presigned URL or the request's credentials."""
    code = s3_code(exc)
    if code == "NoSuchBucket":
        return f"no such bucket {bucket!r}"
    if code in ("AccessDenied", "403", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        return f"access refused ({code})"
    if code:
        return f"S3 error {code}"
    name = type(exc).__name__
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return "no usable AWS credentials were found"
    if name == "ProfileNotFound":
        return "the configured AWS profile does not exist"
    if name in ("EndpointConnectionError", "ConnectionClosedError", "ConnectTimeoutError"):
        return f"cannot reach the S3 endpoint ({name})"
    return f"S3 request failed ({name})"
