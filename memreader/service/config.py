"""The service's settings: the ``service:`` section of a reader YAML.

One file configures both: the reader (``backend``, ``config``, its ``store``) exactly as the
library reads it, and how it is served::

    backend: simple_struct
    config:
      store: sqlite:///memories.db
    service:
      host: 127.0.0.1
      keys_file: keys.yaml          # or keys: [...] inline; hashed keys only
      max_request_bytes: 8388608
      request_timeout_s: 120
      max_concurrent_per_key: 4
      header_timeout_s: 10          # slow clients are cut off (408)
      body_timeout_s: 60
      max_connections: 1024         # one more is 503; per client address, 429
      max_connections_per_client: 64
      content: {allow_local_paths: false, allow_urls: false, allow_s3: false}
      jobs: {input_roots: [data/], state_dir: service-jobs}

A reader YAML without ``service:`` serves with the defaults (loopback only, no keys).
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from memreader.config_files import interpolate_env, read_yaml_config
from memreader.config_model import ConfigModel
from memreader.errors import ConfigError
from memreader.factory import MemReaderConfigFactory
from memreader.service.keys import ApiKey, load_keys_file

__all__ = [
    "ContentAccess",
    "JobsSettings",
    "ServiceConfig",
    "ServiceSettings",
    "is_loopback",
    "load_service_config",
]


class ContentAccess(ConfigModel):
    """What content arriving over HTTP may reach. Each switch is off by default, whatever the
    reader config says; on, the reader config's own settings (``allowed_roots``,
    ``fetch.allow_hosts``, ``fetch.s3.allow_buckets``) still apply.

    - ``allow_local_paths``: document strings and file parts may name files on the server.
    - ``allow_urls``: parts may name ``http(s)://`` URLs, which the server fetches.
    - ``allow_s3``: parts may name ``s3://`` objects (of ``fetch.s3.allow_buckets``).
    """

    allow_local_paths: bool = False
    allow_urls: bool = False
    allow_s3: bool = False


class JobsSettings(ConfigModel):
    """Batch jobs over HTTP (``POST /v1/jobs``).

    - ``input_roots`` (default none: jobs are refused): folders a job's inputs may name, by a
      path relative to one of them (``{"root": 0, "path": "chats/"}``, root 0 by default);
      the resolved path (symlinks followed) must stay inside it, and hidden names are refused.
    - ``state_dir`` (``service-jobs``): where each job's manifest, errors and summary go
      (``<state_dir>/<job id>``); items go to the service's store.
    - ``max_running_per_key`` (1): jobs one key may run at once; another is 429.
    - ``keep_finished`` (100): finished jobs remembered for ``GET /v1/jobs/{id}``.
    """

    input_roots: list[str] = Field(default_factory=list)
    state_dir: str = "service-jobs"
    max_running_per_key: int = Field(default=1, ge=1, le=64)
    keep_finished: int = Field(default=100, ge=1, le=100_000)

    @field_validator("input_roots")
    @classmethod
    def _local_roots(cls, roots: list[str]) -> list[str]:
        for root in roots:
            if not root.strip() or "\0" in root or "://" in root:
                raise ValueError("input_roots entries must be local folders")
        return roots


class ServiceSettings(ConfigModel):
    """The ``service:`` section (see the module docstring).

    - ``host`` (``127.0.0.1``) and ``port`` (8765): where to listen. Without keys the service
      refuses to listen anywhere but a loopback address.
    - ``keys`` / ``keys_file``: the API keys (:class:`~memreader.service.keys.ApiKey`: a name,
      the SHA-256 of the key, the users it may read and write or ``*``); make one with
      ``memreader key --name NAME --users alice``.
    - ``max_request_bytes`` (8 MiB): the largest request body; larger is 413.
    - ``request_timeout_s`` (120): the deadline of one request, from its first byte; past it,
      504, once its work has stopped (nothing a 504 answers is stored).
    - ``header_timeout_s`` (10): the time a connection has to send a request's headers, from
      its opening or the previous answer's end; past it, 408 and the connection is closed.
    - ``body_timeout_s`` (60): the time a request's body may take to arrive once its headers
      are in; past it, 408 and the connection is closed.
    - ``max_connections`` (1024) and ``max_connections_per_client`` (64): open connections in
      all and from one client address; one more is answered 503 / 429 and closed.
    - ``max_concurrent_per_key`` (4): requests one key may have in flight; another is 429 with
      ``Retry-After``.
    - ``requests_per_minute_per_key`` (none): requests to ``/v1/`` one key may send per
      minute (refilled evenly, counted over every worker and replica); one more is 429 with
      ``Retry-After``.
    - ``max_concurrent_reads`` (the worker's share of the cores): reads and refinements one
      worker runs at once; one more waits for a turn, within its deadline (504 when none
      comes).
    - ``idempotency_ttl_s`` (86400) and ``idempotency_max_entries`` (10,000): how long and how
      many answers to ``Idempotency-Key`` requests are kept for retries.
    - ``content``: :class:`ContentAccess`; ``jobs``: :class:`JobsSettings`.
    - ``ui`` (true): serve the web page at ``/ui``.
    - ``search_cache_s`` (1): the same search of the same user within this many seconds is
      answered from the first, unless the store changed since (a SQLite store; 0: off).
    - ``workers`` (the cores available): processes ``memreader serve`` runs, each with all of
      the above; ``--workers`` overrides it.
    - ``pin_workers`` (auto): give each worker cores of its own (CPU affinity; a job's
      processes share their worker's). Auto: when there are several workers and no more than
      the cores, each on its own slice; ``true``: also beyond the cores (worker ``i`` on core
      ``i mod cores``); ``false``: the kernel moves them. A search hops between a worker's
      threads: pinned, the hops stay on one core's cache (0-10% less CPU a search on a
      2-core VM, :mod:`memreader.cores`); ``--pin-workers`` / ``--no-pin-workers``
      override it.
    - ``state`` (the store's place): where the workers and replicas share per-key slots,
      ``Idempotency-Key`` answers and jobs (:mod:`memreader.service.shared`): ``memory``,
      ``sqlite:///FILE`` or ``postgresql://...``; by default a SQLite store's
      ``STORE.service-state`` file beside it, a PostgreSQL store's own database.
    - ``maintain_every_s`` (none: off): run ``maintain`` on the store this often (purge,
      budgets, index repair: :mod:`memreader.service.maintenance`), one worker at a time.
    - ``repair_index_on_start`` (true): once started, count the store's memories missing from
      its vector index and, when there are some, embed them again in the background, in the
      one worker that takes the maintain lease (:mod:`memreader.service.index_repair`), even
      with ``maintain_every_s`` off; its outcome is in ``/metrics``.
    """

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    keys: list[ApiKey] = Field(default_factory=list)
    keys_file: str | None = None
    max_request_bytes: int = Field(default=8 * 1024 * 1024, gt=0, le=1024**3)
    request_timeout_s: float = Field(default=120.0, gt=0, le=86_400)
    max_concurrent_per_key: int = Field(default=4, ge=1, le=1024)
    max_concurrent_reads: int | None = Field(default=None, ge=1, le=1024)
    requests_per_minute_per_key: int | None = Field(default=None, ge=1, le=1_000_000)
    header_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    body_timeout_s: float = Field(default=60.0, gt=0, le=86_400)
    max_connections: int = Field(default=1024, ge=1, le=1_000_000)
    max_connections_per_client: int = Field(default=64, ge=1, le=1_000_000)
    idempotency_ttl_s: float = Field(default=86_400.0, gt=0)
    idempotency_max_entries: int = Field(default=10_000, ge=1, le=10_000_000)
    content: ContentAccess = Field(default_factory=ContentAccess)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    ui: bool = True
    search_cache_s: float = Field(default=1.0, ge=0, le=3600)
    workers: int | None = Field(default=None, ge=1, le=256)
    pin_workers: bool | None = None
    state: str | None = None
    maintain_every_s: float | None = Field(default=None, gt=0, le=30 * 86_400)
    repair_index_on_start: bool = True

    @model_validator(mode="after")
    def _unique_key_names(self) -> ServiceSettings:
        names = [key.name for key in self.keys]
        if len(names) != len(set(names)):
            raise ValueError("keys: two keys share a name")
        if self.max_connections_per_client > self.max_connections:
            raise ValueError("max_connections_per_client must not be over max_connections")
        return self


class ServiceConfig:
    """A validated reader config and its service settings, with relative paths (keys file,
    job roots, state folder) resolved against the YAML's folder."""

    def __init__(
        self,
        reader: MemReaderConfigFactory,
        settings: ServiceSettings | None = None,
        *,
        base_dir: str | None = None,
    ) -> None:
        self.reader = reader
        self.settings = settings if settings is not None else ServiceSettings()
        self.base_dir = base_dir or os.getcwd()
        self.keys: list[ApiKey] = list(self.settings.keys)
        if self.settings.keys_file is not None:
            self.keys.extend(load_keys_file(self.resolve(self.settings.keys_file)))
        names = [key.name for key in self.keys]
        if len(names) != len(set(names)):
            raise ConfigError("service keys: two keys share a name (keys and keys_file)")

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, base_dir: str | None = None) -> ServiceConfig:
        """Split ``data`` into the reader config and the ``service:`` section."""
        data = dict(interpolate_env(data))
        service = data.pop("service", None) or {}
        if not isinstance(service, dict):
            raise ConfigError("service: must be a mapping")
        reader = MemReaderConfigFactory.from_dict(data)
        return cls(reader, ServiceSettings.model_validate(service), base_dir=base_dir)

    def resolve(self, path: str) -> str:
        """``path`` relative to the config file's folder (absolute paths as they are)."""
        expanded = os.path.expanduser(path)
        return os.path.abspath(os.path.join(self.base_dir, expanded))

    @property
    def store_url(self) -> str | None:
        """The reader's ``store`` URL (a relative SQLite file made relative to the config's
        folder), or ``None``."""
        from memreader.stores.urls import resolve_store_url

        store = self.reader.config.store
        if store is None:
            return None
        return resolve_store_url(store.get_secret_value(), self.base_dir)

    @property
    def state_url(self) -> str:
        """Where this service's shared state lives: ``service.state`` (a relative SQLite
        file made relative to the config's folder), the one ``memreader serve --workers``
        gave its workers, else the store's place (:func:`~memreader.service.shared.state_url_for`).
        """
        from memreader.service.shared import STATE_ENV, state_url_for
        from memreader.stores.urls import resolve_store_url

        if self.settings.state is not None:
            return resolve_store_url(self.settings.state, self.base_dir)
        given = os.environ.get(STATE_ENV)
        return given if given else state_url_for(self.store_url)

    def or_home_store(self) -> ServiceConfig:
        """This config, serving the data folder's store (``memories.db`` in
        ``$MEMREADER_HOME``, else the XDG data folder: :mod:`memreader.front.home`, as
        ``Memory()`` and ``memreader mcp`` use) when it names no store of its own; the folder is
        made. ``memreader serve`` serves this.

        >>> import os, tempfile
        >>> from memreader.factory import MemReaderConfigFactory
        >>> os.environ["MEMREADER_HOME"] = home = tempfile.mkdtemp()
        >>> url = ServiceConfig(MemReaderConfigFactory()).or_home_store().store_url
        >>> url == f"sqlite:///{home}/memories.db"
        True
        >>> del os.environ["MEMREADER_HOME"]
        """
        from pydantic import SecretStr

        from memreader.front.home import data_home, default_store_url

        if self.reader.config.store is not None:
            return self
        data_home().mkdir(parents=True, exist_ok=True)
        settings = self.reader.config.model_copy(update={"store": SecretStr(default_store_url())})
        reader = self.reader.model_copy(update={"config": settings})
        return ServiceConfig(reader, self.settings, base_dir=self.base_dir)

    def job_roots(self) -> list[Path]:
        """The resolved ``jobs.input_roots``."""
        return [Path(self.resolve(root)).resolve() for root in self.settings.jobs.input_roots]

    def check_listen(self, host: str) -> None:
        """Refuse to listen on ``host`` when no key is configured and it is not loopback.

        Raises:
            ConfigError: keys are needed on that address.
        """
        if not self.keys and not is_loopback(host):
            raise ConfigError(
                f"refusing to listen on {host!r} without API keys: anyone who can reach it "
                "could read every user's memories. Add service.keys (memreader key) or "
                "listen on 127.0.0.1"
            )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_service_config(path: str | os.PathLike[str]) -> ServiceConfig:
    """The reader and service settings in the YAML file ``path`` (``${ENV}`` interpolated).

    Raises:
        ConfigError: the file cannot be read, or a key is wrong (named by its path).
    """
    data = read_yaml_config(path)
    return ServiceConfig.from_dict(data, base_dir=os.path.dirname(os.path.abspath(path)))
