"""One lazily built S3 client, shared by whoever reads or writes ``s3://`` (the fetcher, the
skill bundle writer): built once from an :class:`~memreader.documents.sources_config.S3Config`
(credentials from the usual AWS chain, the endpoint and region from the config), or an injected
client used as it is. boto3 is imported only when a client is first needed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from memreader.documents.sources_config import S3Config
from memreader.transport.log_scrub import install_log_redaction

__all__ = ["LazyS3Client", "s3_code", "s3_problem"]


class LazyS3Client:
    """An S3 client built on first :meth:`get`, thread-safe.

    Args:
        config: where the client connects.
        client: a boto3 S3 client to use instead; it is never closed here.
        connect_timeout, read_timeout: seconds, per socket operation.
        attempts: botocore's ``max_attempts`` (standard retry mode: first try included).
        pool: the most connections kept open.
    """

    def __init__(
        self,
        config: S3Config,
        *,
        client: Any = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        attempts: int = 3,
        pool: int = 10,
    ) -> None:
        self._config = config
        self._client = client
        self._built = False
        self._settings = (connect_timeout, read_timeout, attempts, pool)
        self._lock = threading.Lock()

    def get(self) -> Any:
        """The client. Raises ``ImportError`` without boto3, and botocore's errors when the
        configuration cannot make a client; callers word them as their own typed errors."""
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                connect_timeout, read_timeout, attempts, pool = self._settings
                session = boto3.Session(profile_name=self._config.profile_name)
                self._client = session.client(
                    "s3",
                    endpoint_url=self._config.endpoint_url,
                    region_name=self._config.region_name,
                    config=Config(
                        connect_timeout=connect_timeout,
                        read_timeout=read_timeout,
                        retries={"max_attempts": attempts, "mode": "standard"},
                        s3={"addressing_style": self._config.addressing_style},
                        max_pool_connections=pool,
                    ),
                )
                self._built = True
            install_log_redaction()  # botocore's loggers print endpoints and signatures
            return self._client

    def get_or_raise(self, error: Callable[[str], Exception], what: str) -> Any:
        """:meth:`get`, with a missing boto3 or a configuration that cannot make a client raised
        as ``error("<what>: <reason>")`` (worded by type, never the exception's message)."""
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
