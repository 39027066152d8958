"""Settings of downloads: how ``http(s)`` URLs and ``s3://`` objects are fetched
(:class:`FetchConfig`), the S3 endpoint (:class:`S3Config`) and which buckets content may name
(:class:`FetchS3Config`). Leaf config models (no I/O, no heavy imports), used by
:class:`~memreader.steps.parts.PartsSettings` (the multimodal reader's), by
:mod:`memreader.fetch.fetcher`, :mod:`memreader.fetch.http` and :mod:`memreader.fetch.s3`, and
(:class:`S3Config`) by the batch job and the skill writer. The settings of local files are in
:mod:`memreader.fetch.local_files`; those of images and audio in :mod:`memreader.parts.settings`.

>>> FetchConfig().max_redirects
5
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator

from memreader.config_model import ConfigModel
from memreader.secret_masking import HidesSecrets

__all__ = ["FetchConfig", "FetchS3Config", "S3Config", "has_dot_segments"]

Scheme = Literal["http", "https", "s3"]
ALL_SCHEMES: tuple[Scheme, ...] = ("http", "https", "s3")


class S3Config(ConfigModel, HidesSecrets):
    """Where ``s3://bucket/key`` is read from. Credentials come from the usual AWS chain
    (environment, shared files, instance roles); only the endpoint and region are set here, so
    MinIO, OSS, COS and GCS interoperability endpoints work with ``endpoint_url``. A password
    in ``endpoint_url`` (``http://user:pass@host``) never shows in a repr, ``str()`` or dump
    (:class:`~memreader.secret_masking.HidesSecrets`: JSON dumps mask it, python dumps keep it as a
    ``SecretUrl`` that validates back)."""

    endpoint_url: str | None = None
    region_name: str | None = None
    profile_name: str | None = None
    addressing_style: Literal["auto", "virtual", "path"] = "auto"

    @field_validator("endpoint_url", "region_name", "profile_name")
    @classmethod
    def _empty_is_unset(cls, value: str | None) -> str | None:
        # ``${VAR:-}`` in YAML gives "" for an unset variable: the default, not a bad value.
        return value if value is None or value.strip() else None

    @field_validator("endpoint_url")
    @classmethod
    def _check_endpoint(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("endpoint_url must be an http(s) URL")
        return value


#: What a bucket name may look like (S3, MinIO, OSS, COS and GCS names all fit).
_BUCKET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


class FetchS3Config(S3Config):
    """The S3 endpoint of downloads (see :class:`S3Config`), and which buckets content may name.

    ``allow_buckets`` (default empty: none). An ``s3://`` reference that arrives as content (a
    chat's file, image or audio part, a document string or part) would be read with the
    operator's credentials, which can often read far more than the caller should see. So such a
    reference is read only when listed here:

    - ``"bucket"``: any key of that bucket;
    - ``"bucket/prefix"``: keys that start with ``prefix`` (a plain string prefix, as in S3:
      end it with ``/`` to mean a folder, ``"bucket/docs/"``).

    ``s3://`` before an entry is accepted. Anything else, and any key with ``.`` or ``..``
    segments, is a :class:`~memreader.errors.BlockedBucketError` before any request. A batch
    job's own inputs and outputs and the skill writer's ``output`` are the operator's words and
    are not held to this list; neither is the document named on the command line.

    >>> FetchS3Config(allow_buckets=["s3://docs/team/"]).allows("docs", "team/a.pdf")
    True
    >>> FetchS3Config(allow_buckets=["docs/team/"]).allows("docs", "other/a.pdf")
    False
    """

    allow_buckets: list[str] = Field(default_factory=list)

    @field_validator("allow_buckets")
    @classmethod
    def _check_allow_buckets(cls, entries: list[str]) -> list[str]:
        cleaned = []
        for entry in entries:
            text = entry.strip()
            if text[:5].lower() == "s3://":
                text = text[5:]
            bucket, _, prefix = text.partition("/")
            if not _BUCKET_NAME.match(bucket):
                raise ValueError(
                    f"{entry!r} does not start with a bucket name; entries are 'bucket' or "
                    "'bucket/prefix' (no wildcards: name each bucket)"
                )
            if has_dot_segments(prefix):
                raise ValueError(f"{entry!r}: a prefix must not hold '.' or '..' segments")
            cleaned.append(f"{bucket}/{prefix}" if prefix else bucket)
        return cleaned

    def allows(self, bucket: str, key: str) -> bool:
        """Whether content may name ``s3://bucket/key``: the bucket is listed whole, or the
        key starts with one of its listed prefixes (keys with ``.``/``..`` segments never)."""
        if has_dot_segments(key):
            return False
        for entry in self.allow_buckets:
            name, _, prefix = entry.partition("/")
            if name == bucket and key.startswith(prefix):
                return True
        return False


def has_dot_segments(key: str) -> bool:
    """Whether ``key`` has a ``.`` or ``..`` segment, which a server or proxy that normalises
    paths could resolve to a key (or, path-style, a bucket) outside the one named."""
    return any(segment in (".", "..") for segment in key.replace("\\", "/").split("/"))


class FetchConfig(ConfigModel):
    """How URLs and S3 objects are downloaded (see :mod:`memreader.fetch.fetcher`).

    - ``timeout_s`` (30): the deadline of one download attempt, connect to last byte.
    - ``max_redirects`` (5): redirects followed; each hop is checked like the first URL.
    - ``max_retries`` (2) and ``backoff_base_s`` (0.5): retries of transient failures
      (connection errors, timeouts, 429 and 5xx), with exponential backoff and jitter.
    - ``max_concurrency`` (4): downloads in flight at once, for the whole reader.
    - ``allowed_schemes`` (``http``, ``https``, ``s3``): URL schemes that may be fetched at all.
    - ``allow_hosts`` (empty): host names, IP addresses or networks (CIDR) that may be fetched
      even though they are private, loopback, link-local or metadata addresses (refused by
      default, for every redirect hop and for the address actually connected).
    - ``direct_markdown_hostnames`` (empty): hosts whose responses are Markdown already, kept
      as they are instead of converted.
    - ``allowed_content_types`` (empty: a built-in list per kind): response types accepted for
      documents; images must be ``image/*`` and audio ``audio/*`` whatever this says.
    - ``s3``: the S3 endpoint, and the buckets content may name (``s3.allow_buckets``, empty
      by default: none; see :class:`FetchS3Config`).

    The byte limit of a download is the reader's ``max_file_bytes`` (images: ``images.max_bytes``).
    """

    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    max_redirects: int = Field(default=5, ge=0, le=50)
    max_retries: int = Field(default=2, ge=0, le=10)
    backoff_base_s: float = Field(default=0.5, ge=0, le=60)
    max_concurrency: int = Field(default=4, ge=1, le=256)
    allowed_schemes: list[Scheme] = Field(default_factory=lambda: list(ALL_SCHEMES))
    allow_hosts: list[str] = Field(default_factory=list)
    direct_markdown_hostnames: list[str] = Field(default_factory=list)
    allowed_content_types: list[str] = Field(default_factory=list)
    s3: FetchS3Config = Field(default_factory=FetchS3Config)

    @field_validator("s3", mode="before")
    @classmethod
    def _plain_s3_config(cls, value: object) -> object:
        # A plain S3Config (the batch job's, the skill writer's) is an endpoint without
        # allowed buckets: take its settings, and allow none.
        if isinstance(value, S3Config) and not isinstance(value, FetchS3Config):
            return value.model_dump()
        return value

    @field_validator("allow_hosts", "direct_markdown_hostnames")
    @classmethod
    def _check_hosts(cls, hosts: list[str]) -> list[str]:
        cleaned = []
        for host in hosts:
            host = host.strip().lower().rstrip(".")
            if not host or (any(c in host for c in "/\\@ \0") and not _is_network(host)):
                raise ValueError(f"{host!r} is not a host name, IP address or network")
            cleaned.append(host)
        return cleaned


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True
