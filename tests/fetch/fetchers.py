"""Fetchers the fetch tests build (``make``: only the local test server allowed; ``s3_fetcher``:
the moto S3 server's ``docs`` bucket), the bytes they serve, and the ``s3_endpoint`` fixture (a
moto S3 server with ``docs`` filled): shared by tests/fetch and the log-secrets tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from memreader.fetch.fetcher import Fetcher
from memreader.fetch.settings import FetchConfig

PDF = b"%PDF-1.4\n% fake pdf body\n%%EOF\n"


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


LOCAL = ["127.0.0.1"]  # the test server, and nothing else


def make(
    *,
    allow: Sequence[str] = LOCAL,
    resolve: Callable[[str, int], Sequence[str]] | None = None,
    max_bytes: int = 1_000_000,
    **settings: Any,
) -> Fetcher:
    settings.setdefault("timeout_s", 5.0)
    settings.setdefault("backoff_base_s", 0.0)
    config = FetchConfig(allow_hosts=list(allow), **settings)
    return Fetcher(config, max_bytes=max_bytes, resolve=resolve)


@pytest.fixture(scope="module")
def s3_endpoint(moto_s3: str) -> str:
    import boto3

    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="docs")
    client.put_object(Bucket="docs", Key="dir/report.pdf", Body=PDF, ContentType="application/pdf")
    client.put_object(Bucket="docs", Key="pic.png", Body=PNG)  # binary/octet-stream
    client.put_object(Bucket="docs", Key="big.txt", Body=b"x" * 5000, ContentType="text/plain")
    return moto_s3


def s3_fetcher(endpoint: str, **settings: Any) -> Fetcher:
    settings.setdefault("max_retries", 0)
    config = FetchConfig(
        s3={
            "endpoint_url": endpoint,
            "region_name": "us-east-1",
            "addressing_style": "path",
            "allow_buckets": ["docs", "no-such-bucket"],
        },
        **settings,
    )
    return Fetcher(config, max_bytes=1000)
