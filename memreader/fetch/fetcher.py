"""One place for every byte that comes from outside a call's input: URLs, S3 objects, data URLs
and local files named in parts.

Why one place
-------------
Documents, images and audio can all name their bytes by reference, and each reference is a way
in: a URL can point at the cloud metadata service or an internal host (SSRF), redirect there,
never end, trickle, or be larger than promised; a presigned URL carries its signature in the
query; an S3 key can be missing or refused. :class:`Fetcher` makes every one of those checks
once, for every kind of part:

* ``http(s)``: :class:`~memreader.fetch.http.HTTPReader`: httpx over memreader's
  deadline transport (one deadline per attempt, connect to last byte, on every socket read),
  no proxy from the environment (the address connected to must be the checked one), redirects
  followed there with each hop's scheme and host checked, and every connection made through
  :class:`~memreader.transport.guard.GuardedBackend` (resolve, check every address, connect to
  a checked one, check the peer). The size limit is enforced while streaming; transient
  failures (connection errors, timeouts, 408, 429, 5xx) are retried with backoff and jitter
  (``Retry-After`` honoured, capped).
* ``s3://bucket/key``: :class:`~memreader.fetch.s3.S3Reader` (boto3, built lazily
  from :class:`~memreader.fetch.settings.S3Config`). The endpoint is configured by
  the operator and trusted: it is not put through the SSRF check (MinIO on a private address is
  the common case). The buckets are not: a reference here comes from content and would be read
  with the operator's credentials, so only buckets (or key prefixes) listed in
  ``s3.allow_buckets`` are read, anything else is a
  :class:`~memreader.errors.BlockedBucketError` before any request.
* ``data:`` URLs go through the one inline decoder (:mod:`memreader.fetch.data_urls`),
  local paths through the path checks and bounded regular-file reader of
  :mod:`memreader.fetch.local_files`. Local paths are read only with ``allow_local_paths``,
  under ``allowed_roots``, and never through a hidden file or folder below the root unless
  ``allow_hidden_files``.

Remote downloads share one budget of ``max_concurrency`` slots per :class:`Fetcher`; messages,
logs and :attr:`Fetched.source` name a source by its safe label (:func:`safe_label`), never by
its credentials or query.

Where the rest lives
--------------------
This module keeps the Fetcher itself: dispatch, the concurrency budget, the counters, local
and inline sources, and the :class:`Fetched` it returns. The rules on names and types
(:func:`check_content_type`, :func:`media_type_of`, :func:`extension_for`, :func:`safe_label`,
:func:`is_remote`) are in :mod:`memreader.fetch.media_types`, the http reading in
:mod:`memreader.fetch.http`, the S3 reading in :mod:`memreader.fetch.s3` and the local-file
checks in :mod:`memreader.fetch.local_files`; they are re-exported or used from here, and none
of them imports this module.
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memreader.errors import BlockedAddressError, DocumentError, FetchError
from memreader.fetch.data_urls import decode_inline, is_data_url
from memreader.fetch.http import HTTPReader
from memreader.fetch.local_files import (
    NO_LOCAL_ACCESS,
    DocumentAccess,
    check_local_path,
    read_local_file,
)
from memreader.fetch.media_types import (
    FetchKind,
    check_content_type,
    extension_for,
    is_remote,
    media_type_of,
    safe_label,
)
from memreader.fetch.s3 import S3Reader
from memreader.fetch.settings import FetchConfig
from memreader.transport.guard import Resolver

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


class Fetcher:
    """Fetches the bytes a part refers to, with every check in one place (see the module).

    Args:
        config: how downloads are made.
        access: which local paths may be read (``allow_local_paths``, ``allowed_roots``,
            ``allow_hidden_files``: see :func:`~memreader.fetch.local_files.check_local_path`)
            and the most bytes of one fetch (``max_file_bytes``); a reader passes its config.
            Default: no local paths, the default limits.
        max_bytes: the most bytes of one fetch instead of ``access.max_file_bytes`` (a call's
            ``max_bytes`` overrides both).
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
        access: DocumentAccess = NO_LOCAL_ACCESS,
        max_bytes: int | None = None,
        base_dir: str | None = None,
        transport: Any = None,
        s3_client: Any = None,
        resolve: Resolver | None = None,
    ) -> None:
        max_bytes = access.max_file_bytes if max_bytes is None else max_bytes
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self._config = config
        self._max_bytes = max_bytes
        self._access = access
        self._base_dir = base_dir
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._lock = threading.Lock()
        self._http = HTTPReader(
            config, transport=transport, resolve=resolve, on_retries=self._count_retries
        )
        self._s3 = S3Reader(config, client=s3_client, on_retries=self._count_retries)
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
            BlockedAddressError: a scheme not allowed, or an address that is not public;
                :class:`~memreader.errors.BlockedBucketError` for an ``s3://`` bucket or prefix
                not in ``s3.allow_buckets``.
            FetchError: the source could not be fetched (status, timeout, size, redirects,
                content type, missing key or file, refused credentials).
            DocumentError: local paths are disabled, outside the roots or hidden; a bad data
                URL.
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
        self._http.close()
        self._s3.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- dispatch --

    def _dispatch(self, ref: str, kind: FetchKind, limit: int, hint: str) -> Fetched:
        if is_data_url(ref):
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
            page = self._http.get(ref, kind, limit, hint)
            return _fetched(page.data, page.label, page.name, page.media_type, page.markdown)
        finally:
            self._slots.release()

    def _inline(self, ref: str, limit: int, hint: str) -> Fetched:
        inline = decode_inline(ref, limit, what="data: URL")
        return _fetched(inline.data, "inline", hint, inline.media_type)

    def _local(self, ref: str, limit: int, hint: str) -> Fetched:
        if not self._access.allow_local_paths:
            raise DocumentError("local paths are disabled (allow_local_paths=False)")
        path = ref
        if self._base_dir is not None and not os.path.isabs(ref):
            path = os.path.join(self._base_dir, ref)
        name = os.path.basename(ref) or ref
        resolved = check_local_path(path, self._access)
        try:
            data = read_local_file(resolved, name, limit, {})
        except FileNotFoundError:
            raise FetchError(f"file {name!r} does not exist") from None
        except OSError as exc:
            raise FetchError(f"cannot read file {name!r}: {exc.strerror}") from None
        fetched = _fetched(data, ref, hint or name, None)
        return fetched

    # -- bookkeeping --

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
