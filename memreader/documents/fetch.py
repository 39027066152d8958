"""One place for every byte that comes from outside a call's input: URLs, S3 objects, data URLs
and local files named in parts.

Why one place
-------------
Documents, images and audio can all name their bytes by reference, and each reference is a way
in: a URL can point at the cloud metadata service or an internal host (SSRF), redirect there,
never end, trickle, or be larger than promised; a presigned URL carries its signature in the
query; an S3 key can be missing or refused. :class:`Fetcher` makes every one of those checks
once, for every kind of part:

* ``http(s)``: httpx over memreader's deadline transport (one deadline per attempt, connect to
  last byte, on every socket read), ``trust_env=False`` (no proxy from the environment: the
  address connected to must be the checked one), redirects followed here, each hop's scheme and
  host checked, and every connection made through
  :class:`~memreader.transport.guard.GuardedBackend` (resolve, check every address, connect to a
  checked one, check the peer). The size limit is enforced while streaming; transient failures
  (connection errors, timeouts, 408, 429, 5xx) are retried with backoff and jitter
  (``Retry-After`` honoured, capped).
* ``s3://bucket/key``: :class:`~memreader.documents.fetch_s3.S3Reader` (boto3, built lazily
  from :class:`~memreader.documents.sources_config.S3Config`). The endpoint is configured by
  the operator and trusted: it is not put through the SSRF check (MinIO on a private address is
  the common case).
* ``data:`` URLs and local paths reuse :mod:`memreader.documents.loader`'s decoding and its
  bounded regular-file reader.

Remote downloads share one budget of ``max_concurrency`` slots per :class:`Fetcher`; messages,
logs and :attr:`Fetched.source` name a source by its safe label (:func:`safe_label`), never by
its credentials or query.

Where the rest lives
--------------------
This module keeps the Fetcher itself: dispatch, the concurrency budget, local, inline and http
sources. The rules on names and types (:func:`check_content_type`, :func:`media_type_of`,
:func:`extension_for`, :func:`safe_label`, :func:`is_remote`) are in
:mod:`memreader.documents.fetch_types` and the S3 reading in
:mod:`memreader.documents.fetch_s3`; both are re-exported or used from here, and neither
imports this module.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import os
import posixpath
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from memreader._version import __version__
from memreader.documents.fetch_s3 import S3Reader
from memreader.documents.fetch_types import (
    FetchKind,
    check_content_type,
    disposition_name,
    extension_for,
    is_remote,
    media_type_of,
    safe_label,
)
from memreader.documents.loader import check_local_path, decode_file_data, read_local_file
from memreader.documents.sources_config import FetchConfig
from memreader.errors import BlockedAddressError, DocumentError, FetchError
from memreader.transport import (
    RetryPolicy,
    classify,
    deadline_transport,
    http_lib,
    split_credentials,
)
from memreader.transport.failures import Failure, parse_retry_after
from memreader.transport.guard import AddressPolicy, GuardedBackend, Resolver

__all__ = [
    "FetchKind",
    "Fetched",
    "Fetcher",
    "check_content_type",
    "extension_for",
    "is_remote",
    "media_type_of",
    "safe_label",
]

logger = logging.getLogger(__name__)

_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: 4xx answers worth another request; every 5xx is too.
_RETRY_STATUSES = frozenset({408, 429})
#: The longest wait between attempts, ``Retry-After`` included.
_BACKOFF_MAX_S = 10.0
_WHERE_KEYS = ("scene_index", "message_index", "part_index")


@dataclass(frozen=True)
class Fetched:
    """Bytes fetched from a reference, and what is known about them.

    Attributes:
        data: the bytes.
        source: a safe label: a local path as the caller gave it; a URL without userinfo,
            query and fragment; ``s3://bucket/key``; ``inline`` for data URLs.
        name: the base file name, for format detection (``""`` if unknown).
        extension: ``.pdf`` etc.: from ``name``, else from the media type, else ``""``.
        media_type: the response's ``Content-Type`` without parameters (http), the object's
            ``ContentType`` (S3), the data URL's type; ``None`` for local files.
        markdown: the host is in ``direct_markdown_hostnames``: the text is Markdown already.
        digest: the sha256 (hex) of ``data``.
    """

    data: bytes
    source: str
    name: str
    extension: str
    media_type: str | None
    markdown: bool
    digest: str


class _StatusError(Exception):
    """An HTTP error answer, raised inside an attempt so the retry policy sees it."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class _Redirect:
    location: str


@dataclass(frozen=True)
class _Body:
    data: bytes
    name: str
    media_type: str | None


class Fetcher:
    """Fetches the bytes a part refers to, with every check in one place (see the module).

    Args:
        config: how downloads are made.
        max_bytes: the most bytes of one fetch (a call's ``max_bytes`` overrides it).
        allow_local_paths: whether local paths may be read at all.
        allowed_roots: when given, local paths must resolve under one of them.
        base_dir: what relative local paths are relative to (default: the working directory).
        transport: an httpx transport to use instead of the network. The deadline between body
            chunks, the size limit and the checks of each hop's scheme and host still apply;
            the check of the addresses connected to does not (the transport owns the sockets).
        s3_client: a boto3 S3 client to use instead of one built from ``config.s3``.
        resolve: the host resolver of the address check (a seam for tests).

    Thread-safe: one instance serves a thread pool. :attr:`stats` counts ``fetched`` refs,
    their ``bytes`` and ``retries`` (http retries and botocore's own).
    """

    def __init__(
        self,
        config: FetchConfig,
        *,
        max_bytes: int,
        allow_local_paths: bool = False,
        allowed_roots: Sequence[str] = (),
        base_dir: str | None = None,
        transport: Any = None,
        s3_client: Any = None,
        resolve: Resolver | None = None,
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self._config = config
        self._max_bytes = max_bytes
        self._allow_local = allow_local_paths
        self._roots = tuple(allowed_roots)
        self._base_dir = base_dir
        self._transport = transport
        self._resolve = resolve
        self._policy = AddressPolicy(config.allow_hosts)
        self._markdown_hosts = frozenset(config.direct_markdown_hostnames)
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._lock = threading.Lock()
        self._client: Any = None  # the HTTP transport, built on first use
        self._s3 = S3Reader(config, client=s3_client, on_retries=self._count_retries)
        self._retry = RetryPolicy(
            max_retries=config.max_retries,
            backoff_base=config.backoff_base_s,
            backoff_max=_BACKOFF_MAX_S,
            sleep=self._backoff,
        )
        self.stats: dict[str, int] = {"fetched": 0, "bytes": 0, "retries": 0}

    def fetch(
        self,
        ref: str,
        *,
        kind: FetchKind = "document",
        max_bytes: int | None = None,
        name: str | None = None,
        where: Mapping[str, int | None] | None = None,
    ) -> Fetched:
        """The bytes ``ref`` refers to: an ``http(s)`` URL, ``s3://bucket/key``, a ``data:`` URL
        or a local path.

        Args:
            kind: what the part holds; remote content types must fit it.
            max_bytes: this call's byte limit instead of the instance's.
            name: a file name hint (a part's ``filename``), preferred for format detection.
            where: ``scene_index``/``message_index``/``part_index`` for the error.

        Raises:
            BlockedAddressError: a scheme not allowed, or an address that is not public.
            FetchError: the source could not be fetched (status, timeout, size, redirects,
                content type, missing key or file, refused credentials).
            DocumentError: local paths are disabled or outside the roots; a bad data URL.
        """
        loc = {key: (where or {}).get(key) for key in _WHERE_KEYS}
        limit = self._max_bytes if max_bytes is None else max_bytes
        hint = posixpath.basename(name.replace("\\", "/")) if name else ""
        try:
            fetched = self._dispatch(ref, kind, limit, hint)
        except DocumentError as exc:
            located = (exc.scene_index, exc.message_index, exc.part_index) != (None, None, None)
            if located or not any(value is not None for value in loc.values()):
                raise
            raise type(exc)(exc.reason, **loc) from None
        self._count(fetched=1, bytes=len(fetched.data))
        logger.debug("fetched %s (%d bytes)", fetched.source, len(fetched.data))
        return fetched

    def close(self) -> None:
        """Close the HTTP connections and the S3 client built here (a later fetch reopens)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
        self._s3.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- dispatch --

    def _dispatch(self, ref: str, kind: FetchKind, limit: int, hint: str) -> Fetched:
        if ref[:5].lower() == "data:":
            return self._inline(ref, limit, hint)
        match = _URL_SCHEME.match(ref)
        if match is None:
            return self._local(ref, limit, hint)
        scheme = match.group(1).lower()
        label = f"s3://{ref[5:]}" if scheme == "s3" else safe_label(ref)
        if scheme not in self._config.allowed_schemes:
            raise BlockedAddressError(f"{label}: the {scheme!r} scheme is not allowed")
        wait = self._config.timeout_s * (self._config.max_retries + 1)
        if not self._slots.acquire(timeout=wait):
            raise FetchError(f"{label}: download budget busy (no slot within {wait:g}s)")
        try:
            if scheme == "s3":
                got = self._s3.get(ref[5:], kind, limit, hint)
                return _fetched(got.data, got.label, got.name, got.media_type)
            return self._http(ref, kind, limit, hint)
        finally:
            self._slots.release()

    def _inline(self, ref: str, limit: int, hint: str) -> Fetched:
        data = decode_file_data("data:" + ref[5:], limit, {})
        header = ref[5:].partition(",")[0]
        media_type = header.partition(";")[0].strip().lower() or "text/plain"
        return _fetched(data, "inline", hint, media_type)

    def _local(self, ref: str, limit: int, hint: str) -> Fetched:
        if not self._allow_local:
            raise DocumentError("local paths are disabled (allow_local_paths=False)")
        path = ref
        if self._base_dir is not None and not os.path.isabs(ref):
            path = os.path.join(self._base_dir, ref)
        name = os.path.basename(ref) or ref
        resolved = check_local_path(path, allowed_roots=self._roots)
        try:
            data = read_local_file(resolved, name, limit, {})
        except FileNotFoundError:
            raise FetchError(f"file {name!r} does not exist") from None
        except OSError as exc:
            raise FetchError(f"cannot read file {name!r}: {exc.strerror}") from None
        fetched = _fetched(data, ref, hint or name, None)
        return fetched

    # -- http --

    def _http(self, url: str, kind: FetchKind, limit: int, hint: str) -> Fetched:
        try:
            current, credentials = split_credentials(url.strip())
        except ValueError:
            raise FetchError(f"{safe_label(url)}: not a valid URL") from None
        first = urlsplit(current)
        origin = (first.scheme.lower(), first.hostname, first.port)
        markdown = kind == "document" and (first.hostname or "") in self._markdown_hosts
        for _ in range(self._config.max_redirects + 1):
            label = safe_label(current)
            parts = self._check_hop(current, label)
            # Credentials go only to the origin they were given for, never to a redirect target.
            same = (parts.scheme.lower(), parts.hostname, parts.port) == origin
            attempt = functools.partial(
                self._attempt, current, credentials if same else None, kind, limit, hint, markdown
            )
            outcome = self._retry.run(
                attempt,
                self._classify,
                functools.partial(self._give_up, label),
                label=label,
                passthrough=(FetchError,),
            )
            if isinstance(outcome, _Redirect):
                current = outcome.location
                continue
            if markdown:
                try:
                    outcome.data.decode("utf-8")
                except UnicodeDecodeError:
                    raise FetchError(
                        f"{label}: a Markdown host sent text that is not UTF-8"
                    ) from None
            return _fetched(outcome.data, label, outcome.name, outcome.media_type, markdown)
        raise FetchError(
            f"{safe_label(url)}: more than {self._config.max_redirects} redirects (max_redirects)"
        )

    def _check_hop(self, url: str, label: str) -> Any:
        """Refuse a hop before connecting: its scheme, and a host that is plainly not public."""
        try:
            parts = urlsplit(url)
            host = parts.hostname
            parts.port  # noqa: B018 - validates the port
        except ValueError:
            raise FetchError(f"{label}: not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or scheme not in self._config.allowed_schemes:
            raise BlockedAddressError(f"{label}: the {scheme!r} scheme is not allowed")
        if not host:
            raise FetchError(f"{label}: the URL has no host")
        self._policy.check_host(host, label)
        return parts

    def _attempt(
        self,
        url: str,
        credentials: tuple[str, str] | None,
        kind: FetchKind,
        limit: int,
        hint: str,
        markdown: bool,
    ) -> _Redirect | _Body:
        """One request; an error status raises :class:`_StatusError` for the retry policy.

        The transport is driven directly, without an httpx ``Client``: no proxy can come from
        the environment (``trust_env`` is a client feature), redirects are not followed behind
        this loop's back, and no request log line shows the URL's query.
        """
        httpx = http_lib().httpx
        headers = {"User-Agent": _user_agent(), "Accept": "*/*"}
        if credentials is not None:
            token = base64.b64encode(":".join(credentials).encode("utf-8")).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        request = httpx.Request("GET", url, headers=headers)
        response = self._http_transport().handle_request(request)
        response.request = request
        try:
            label = safe_label(url)
            status = response.status_code
            if status in _REDIRECTS:
                location = response.headers.get("location")
                if not location:
                    raise FetchError(f"{label}: HTTP {status} without a Location")
                return _Redirect(str(response.url.join(location)))
            if status >= 400:
                raise _StatusError(status, parse_retry_after(response.headers))
            if not 200 <= status < 300:
                raise FetchError(f"{label}: unexpected HTTP {status}")
            media_type = media_type_of(response.headers.get("content-type"))
            name = (
                hint or disposition_name(response.headers) or posixpath.basename(response.url.path)
            )
            if not markdown:
                check_content_type(kind, media_type, name, label, self._config)
            length = response.headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > limit:
                raise FetchError(f"{label}: {length} bytes, over the limit of {limit} bytes")
            chunks: list[bytes] = []
            total = 0
            for chunk in response.iter_bytes():
                total += len(chunk)
                if total > limit:
                    raise FetchError(f"{label}: the body is over the limit of {limit} bytes")
                chunks.append(chunk)
            return _Body(b"".join(chunks), name, media_type)
        finally:
            response.close()

    def _http_transport(self) -> Any:
        """memreader's deadline transport over the address guard, built once."""
        with self._lock:
            if self._client is None:
                lib = http_lib()
                backend = None
                if self._transport is None:
                    core = lib.httpcore
                    backend = GuardedBackend(core.SyncBackend(), core, self._policy, self._resolve)
                self._client = deadline_transport(
                    lib,
                    timeout=self._config.timeout_s,
                    max_response_bytes=None,  # per call, enforced while streaming
                    inner=self._transport,
                    network_backend=backend,
                )
            return self._client

    def _classify(self, exc: Exception) -> Failure:
        if isinstance(exc, _StatusError):
            retryable = exc.status in _RETRY_STATUSES or exc.status >= 500
            return Failure(
                "status", str(exc), retryable, status_code=exc.status, retry_after=exc.retry_after
            )
        failure = classify(exc)
        # Only the exception's type: library messages may quote the URL.
        return Failure(failure.kind, type(exc).__name__, failure.retryable)

    def _give_up(self, label: str, failure: Failure) -> FetchError:
        if failure.kind == "status":
            return FetchError(f"{label}: HTTP {failure.status_code}")
        if failure.kind == "timeout":
            return FetchError(
                f"{label}: no complete answer within {self._config.timeout_s:g}s ({failure.detail})"
            )
        if failure.kind == "connection":
            return FetchError(f"{label}: connection failed ({failure.detail})")
        return FetchError(f"{label}: download failed ({failure.detail})")

    # -- bookkeeping --

    def _backoff(self, seconds: float) -> None:
        self._count(retries=1)
        time.sleep(seconds)

    def _count_retries(self, retries: int) -> None:
        self._count(retries=retries)

    def _count(self, **counts: int) -> None:
        with self._lock:
            for key, value in counts.items():
                self.stats[key] += value


def _fetched(
    data: bytes, source: str, name: str, media_type: str | None, markdown: bool = False
) -> Fetched:
    extension = ".md" if markdown else extension_for(name, media_type)
    digest = hashlib.sha256(data).hexdigest()
    return Fetched(data, source, name, extension, media_type, markdown, digest)


@functools.cache
def _user_agent() -> str:
    return f"memreader/{__version__}"
