"""The reader the service runs: the config's, with what content may reach switched off unless
the service's ``content`` settings switch it on (content over HTTP is not the operator), and
no index repair on open (the service repairs under its maintain lease, in one worker:
:mod:`memreader.service.index_repair`)."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from memreader.factory import MemReaderConfigFactory
from memreader.service.config import ContentAccess

__all__ = ["http_reader_config"]


def http_reader_config(
    factory: MemReaderConfigFactory, content: ContentAccess, store_url: str | None
) -> MemReaderConfigFactory:
    """``factory`` with local paths, URLs and ``s3://`` refused unless ``content`` allows
    them, ``store`` set to ``store_url`` (resolved against the service config's folder), and
    ``index: {on_open: repair}`` turned into ``warn``: every worker opens the store, and one
    repairs it, under the lease.

    >>> from memreader.steps.parts import PartsSettings
    >>> cfg = MemReaderConfigFactory(config={"allow_local_paths": True})
    >>> http_reader_config(cfg, ContentAccess(), None).config.allow_local_paths
    False
    """
    config = factory.config
    update: dict[str, Any] = {
        "allow_local_paths": config.allow_local_paths and content.allow_local_paths,
        "store": None if store_url is None else SecretStr(store_url),
    }
    if config.index.on_open == "repair":
        update["index"] = config.index.model_copy(update={"on_open": "warn"})
    fetch = getattr(config, "fetch", None)
    if fetch is not None:
        schemes = [
            scheme
            for scheme in fetch.allowed_schemes
            if (content.allow_s3 if scheme == "s3" else content.allow_urls)
        ]
        s3 = fetch.s3 if content.allow_s3 else fetch.s3.model_copy(update={"allow_buckets": []})
        update["fetch"] = fetch.model_copy(update={"allowed_schemes": schemes, "s3": s3})
    return factory.model_copy(update={"config": config.model_copy(update=update)})
