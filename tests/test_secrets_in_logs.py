"""Issue 17, item 15: no URL query, signature or credential in any log line of a fetch (DEBUG
records of httpx, httpcore, botocore and urllib3 included), nor in a config's repr, ``str()`` or
dumps (``fetch.s3.endpoint_url`` and ``transcription.base_url`` with a password)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest

from memreader.fetch.settings import FetchConfig
from memreader.parts.settings import TranscriptionConfig
from memreader.readers import MultiModalStructMemReaderConfig
from memreader.transport.log_scrub import install_log_redaction, scrub_log_text
from tests.fetch.fetchers import PDF, make, s3_endpoint, s3_fetcher
from tests.http_fixtures import FetchTestServer, answer, redirect
from tests.s3_server import moto_s3

__all__ = ["moto_s3", "s3_endpoint"]  # fixtures, imported for pytest

pytestmark = pytest.mark.timeout(60)

SECRETS = ("PWSECRET", "QSECRET", "SIGSECRET", "CREDSECRET", "TOKSECRET")
# A botocore signature: 64 hex digits after "Signature" (a header value or its own log line).
SIGNATURE = re.compile(r"Signature\W{0,3}[0-9a-f]{64}")


@pytest.fixture(scope="module")
def server() -> Iterator[FetchTestServer]:
    with FetchTestServer() as srv:
        srv.route("/data.csv", answer(b"a,b\n1,2\n", "text/csv"))
        yield srv


def library_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every record but the test servers' own request logs, formatted as a handler would."""
    formatter = logging.Formatter("%(name)s %(message)s")
    return [formatter.format(r) for r in caplog.records if not r.name.startswith("tests.")]


def test_debug_logs_of_a_redirected_presigned_fetch_show_no_secret(
    server: FetchTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    signed = server.url("/data.csv") + "?X-Amz-Signature=SIGSECRET&X-Amz-Credential=CREDSECRET"
    start = server.route("/signed", redirect(signed))
    url = start.replace("http://", "http://user:PWSECRET@") + "?token=QSECRET"
    caplog.set_level(logging.DEBUG)
    with make() as fetcher:
        assert fetcher.fetch(url).data == b"a,b\n1,2\n"
    lines = library_lines(caplog)
    assert any(line.startswith("httpcore.") for line in lines)  # DEBUG lines were logged
    assert any("Location" in line and "?***" in line for line in lines)  # ...and scrubbed
    leaked = [line for line in lines if any(secret in line for secret in SECRETS)]
    assert leaked == []


def test_debug_logs_of_an_s3_fetch_show_no_endpoint_password_or_signature(
    s3_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with s3_fetcher(s3_endpoint.replace("http://", "http://user:PWSECRET@")) as fetcher:
        assert fetcher.fetch("s3://docs/dir/report.pdf").data == PDF
    lines = library_lines(caplog)
    assert any(line.startswith("botocore.") for line in lines)
    assert [line for line in lines if "PWSECRET" in line] == []
    assert [line for line in lines if SIGNATURE.search(line)] == []
    assert not any("Credential=AKIA" in line or "Credential=test" in line for line in lines)


def test_the_filter_reaches_loggers_created_later_and_exceptions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    late = logging.getLogger("botocore.made_up_later")
    install_log_redaction()
    caplog.set_level(logging.DEBUG)
    try:
        raise ValueError("GET https://h/k?X-Amz-Signature=SIGSECRET failed")
    except ValueError:
        late.debug("url=%s", "http://u:PWSECRET@h/x?a=QSECRET", exc_info=True)
    (record,) = [r for r in caplog.records if r.name == "botocore.made_up_later"]
    assert record.getMessage() == "url=http://***@h/x?***"
    text = logging.Formatter().format(record)
    assert not any(secret in text for secret in SECRETS)


@pytest.mark.parametrize(
    ("line", "scrubbed"),
    [
        (
            "[(b'Location', b'https://b.s3.amazonaws.com/k?X-Amz-Signature=SIGSECRET')]",
            "[(b'Location', b'https://b.s3.amazonaws.com/k?***')]",
        ),
        ("{'Authorization': b'AWS4-HMAC-SHA256 Credential=A/B'}", "{'Authorization': b'***'}"),
        (
            '"GET /docs/k?X-Amz-Signature=SIGSECRET HTTP/1.1" 200 4',
            '"GET /docs/k?*** HTTP/1.1" 200 4',
        ),
        ("x-amz-security-token:TOKSECRET\nhost:h", "x-amz-security-token:***\nhost:h"),
        ("Signature:\n" + "ab" * 32, "Signature:\n***"),
        ("Cookie: session=QSECRET", "Cookie:***"),
        ("max_tokens=3 keep-alive: 5", "max_tokens=3 keep-alive: 5"),  # not secrets
    ],
)
def test_scrub_log_text(line: str, scrubbed: str) -> None:
    assert scrub_log_text(line) == scrubbed


def test_config_dumps_show_no_endpoint_password() -> None:
    fetch = FetchConfig(s3={"endpoint_url": "http://user:PWSECRET@minio:9000"})
    reader = MultiModalStructMemReaderConfig(
        fetch=fetch, transcription={"model": "w", "base_url": "http://u:PWSECRET@asr/v1"}
    )
    transcription = reader.transcription
    assert isinstance(transcription, TranscriptionConfig)
    for text in (
        repr(fetch),
        str(fetch),
        repr(fetch.s3),
        str(fetch.s3),
        fetch.model_dump_json(),
        str(fetch.model_dump()),
        repr(reader),
        str(reader),
        reader.model_dump_json(),
        str(reader.model_dump()),
        repr(transcription),
    ):
        assert "PWSECRET" not in text, text
    assert fetch.model_dump(mode="json")["s3"]["endpoint_url"] == "http://***@minio:9000"
    # The values stay usable, and a python dump validates back to the same secrets.
    assert fetch.s3.endpoint_url == "http://user:PWSECRET@minio:9000"
    again = MultiModalStructMemReaderConfig.model_validate(reader.model_dump())
    assert again.fetch.s3.endpoint_url == "http://user:PWSECRET@minio:9000"
    assert again.transcription is not None
    assert again.transcription.base_url == "http://u:PWSECRET@asr/v1"
