"""An S3-compatible server for tests: moto in server mode on 127.0.0.1, started once for the run
(``moto_server``, registered in tests/conftest.py: stopping one takes half a second), and for
each test module that uses it fake credentials in the environment (and no real AWS
configuration read) and moto's state emptied.

Use the ``moto_s3`` fixture (``from tests.s3_server import moto_s3``); it yields the endpoint URL.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator

import pytest

__all__ = ["moto_s3", "moto_server"]


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """The endpoint of one moto server for the whole run (it needs no credentials itself)."""
    server_mod = pytest.importorskip("moto.server")
    moto = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        moto.stop()


@pytest.fixture(scope="module")
def moto_s3(moto_server: str) -> Iterator[str]:
    """The run's moto server, emptied, with fake credentials in the environment for this
    module."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
            patch.delenv(name, raising=False)
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        patch.setenv("AWS_CONFIG_FILE", os.devnull)
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        patch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        # moto keeps its buckets in process-wide state: start each module from none, so one
        # module's objects never show up in another's listings.
        urllib.request.urlopen(
            urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=30
        ).close()
        yield moto_server
