"""memreader.fetch.fetcher: every byte from outside, against a real HTTP server on 127.0.0.1
and a moto S3 server; the address guard through a resolver seam (no global patching)."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memreader.errors import BlockedAddressError, DocumentError, FetchError
from memreader.fetch.fetcher import Fetcher, is_remote, safe_label
from memreader.fetch.local_files import DocumentAccess
from memreader.fetch.settings import FetchConfig
from memreader.transport import deadline_transport, http_lib
from memreader.transport.addresses import embedded_ipv4
from memreader.transport.guard import AddressPolicy, GuardedBackend, parse_ip
from tests.fetch.fetchers import LOCAL, PDF, PNG, make, s3_endpoint, s3_fetcher
from tests.http_fixtures import (
    FetchTestServer,
    answer,
    chunked_forever,
    endless,
    redirect,
    sequence,
    trickle,
)
from tests.s3_server import moto_s3

__all__ = ["moto_s3", "s3_endpoint"]  # the fixtures, imported for pytest

# Every test here talks to a server: none may hang the suite (the fetcher's own deadlines end
# them well before this).
pytestmark = pytest.mark.timeout(60)

CSV = b"a,b\n1,2\n"
PUBLIC_IP = "93.184.216.34"


@pytest.fixture(scope="module")
def server() -> Iterator[FetchTestServer]:
    with FetchTestServer() as srv:
        srv.route("/doc.pdf", answer(PDF, "application/pdf"))
        srv.route("/data.csv", answer(CSV, "text/csv; charset=utf-8"))
        srv.route("/pic.png", answer(PNG, "image/png"))
        srv.route("/page.html", answer(b"<html></html>", "text/html"))
        yield srv


def resolver(table: dict[str, list[str]], calls: list[str] | None = None) -> Any:
    def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise socket.gaierror(f"unknown test host {host}")
        return table[host]

    return resolve


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- labels and refs -------------------------------------------------------------------------------


def test_safe_label_and_is_remote() -> None:
    assert safe_label("https://u:p@Host.example:8443/a/b.pdf?X-Amz-Signature=s#f") == (
        "https://host.example:8443/a/b.pdf"
    )
    assert safe_label("http://[::1]:80/x?y") == "http://[::1]:80/x"
    assert "secret" not in safe_label("http://a:secret@[bad/")
    assert is_remote("HTTPS://x/y") and is_remote("s3://b/k") and is_remote("http://x")
    assert not is_remote("data:,x") and not is_remote("/tmp/x") and not is_remote("ftp://x")


# -- http: success ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind", "body", "media_type", "extension"),
    [
        ("/doc.pdf", "document", PDF, "application/pdf", ".pdf"),
        ("/data.csv", "document", CSV, "text/csv", ".csv"),
        ("/pic.png", "image", PNG, "image/png", ".png"),
    ],
)
def test_fetch_http(
    server: FetchTestServer, path: str, kind: Any, body: bytes, media_type: str, extension: str
) -> None:
    with make() as fetcher:
        fetched = fetcher.fetch(server.url(path), kind=kind)
        assert fetcher.stats == {"fetched": 1, "bytes": len(body), "retries": 0}
    assert fetched.data == body
    assert fetched.source == server.url(path)
    assert fetched.name == path[1:]
    assert (fetched.extension, fetched.media_type, fetched.markdown) == (
        extension,
        media_type,
        False,
    )
    assert fetched.digest == hashlib.sha256(body).hexdigest()
    assert server.headers[-1]["user-agent"].startswith("memreader/")


def test_name_from_hint_disposition_or_type(server: FetchTestServer) -> None:
    plain = server.route("/download", answer(PDF, "application/pdf"))
    named = server.route(
        "/get",
        answer(
            PDF,
            "application/octet-stream",
            headers={"Content-Disposition": 'attachment; filename="../r.pdf"'},
        ),
    )
    with make() as fetcher:
        assert (fetcher.fetch(plain).name, fetcher.fetch(plain).extension) == ("download", ".pdf")
        assert fetcher.fetch(named).name == "r.pdf"  # a base name, never a path
        hinted = fetcher.fetch(plain, name="dir/given.pdf")
    assert (hinted.name, hinted.extension) == ("given.pdf", ".pdf")


# -- http: redirects -------------------------------------------------------------------------------


def test_redirect_chain_is_followed(server: FetchTestServer) -> None:
    server.route("/r1", redirect("/data.csv"))
    server.route("/r2", redirect(server.url("/r1"), status=301))
    start = server.route("/r3", redirect("r2", status=307))
    with make(max_redirects=3) as fetcher:
        fetched = fetcher.fetch(start)
    assert fetched.data == CSV
    assert fetched.source == server.url("/data.csv")


def test_too_many_redirects(server: FetchTestServer) -> None:
    start = server.route("/loop", redirect("/loop"))
    before = server.hits["/loop"]
    with make(max_redirects=2) as fetcher, pytest.raises(FetchError, match="more than 2 redirects"):
        fetcher.fetch(start)
    assert server.hits["/loop"] - before == 3


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[::ffff:127.0.0.2]/",
        "http://localhost6/",
        "http://localhost/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://10.0.0.1/",
        "http://0.0.0.0/",
        "http://127.0.0.2/",  # loopback, but not the allowed address
        "file:///etc/passwd",
    ],
)
def test_redirect_to_private_address_is_refused(server: FetchTestServer, target: str) -> None:
    # 127.0.0.1 is allowed (the test server): the refusal is the hop check's, before connecting.
    start = server.route("/to-private", redirect(target))
    calls: list[str] = []
    with make(resolve=resolver({}, calls)) as fetcher, pytest.raises(BlockedAddressError):
        fetcher.fetch(start)
    assert calls == []  # refused before any lookup


def test_redirect_to_name_resolving_private_is_refused_by_guard(server: FetchTestServer) -> None:
    # A name that looks public: only the connect-time guard, which resolves it, can refuse it.
    start = server.route("/to-rebind", redirect(f"http://rebind.example:{server.port}/data.csv"))
    calls: list[str] = []
    resolve = resolver({"rebind.example": ["10.0.0.1"]}, calls)
    with make(resolve=resolve) as fetcher, pytest.raises(BlockedAddressError) as caught:
        fetcher.fetch(start)
    assert calls == ["rebind.example"]
    assert "resolves to 10.0.0.1" in str(caught.value)


def test_credentials_stay_with_their_origin(server: FetchTestServer) -> None:
    server.route("/plain", answer(b"plain", "text/plain"))
    start = server.route("/auth-redirect", redirect(f"http://other.example:{server.port}/plain"))
    user_url = start.replace("http://", "http://user:pw@")
    resolve = resolver({"other.example": ["127.0.0.1"]})
    with make(allow=[*LOCAL, "other.example"], resolve=resolve) as fetcher:
        assert fetcher.fetch(user_url).data == b"plain"
    first, second = server.headers[-2:]
    assert first["authorization"] == "Basic " + base64.b64encode(b"user:pw").decode()
    assert "authorization" not in second
    assert second["host"] == f"other.example:{server.port}"


# -- the address guard -----------------------------------------------------------------------------


def test_public_name_resolving_to_loopback_is_refused_at_connect(server: FetchTestServer) -> None:
    before = sum(server.hits.values())
    resolve = resolver({"public.example": ["127.0.0.1"]})
    url = f"http://public.example:{server.port}/data.csv"
    with make(allow=[], resolve=resolve) as fetcher, pytest.raises(BlockedAddressError):
        fetcher.fetch(url)
    assert sum(server.hits.values()) == before  # never connected


def test_allowed_name_connects_to_the_checked_address(server: FetchTestServer) -> None:
    # public.example exists only in the test resolver: the request reaching the server proves
    # the socket went to the address that was checked, not to a second lookup.
    calls: list[str] = []
    resolve = resolver({"public.example": ["127.0.0.1"]}, calls)
    with make(allow=["public.example"], resolve=resolve) as fetcher:
        fetched = fetcher.fetch(f"http://public.example:{server.port}/data.csv")
    assert fetched.data == CSV and calls == ["public.example"]
    assert server.headers[-1]["host"] == f"public.example:{server.port}"


def test_one_private_address_among_public_ones_is_refused() -> None:
    resolve = resolver({"mixed.example": [PUBLIC_IP, "10.1.2.3"]})
    with make(allow=[], resolve=resolve) as fetcher, pytest.raises(BlockedAddressError):
        fetcher.fetch("http://mixed.example/x.pdf")


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:1/x", "http://localhost:1/", "http://[::1]:1/", "http://127.1:1/"],
)
def test_direct_private_urls_are_refused(url: str) -> None:
    with make(allow=[], timeout_s=1.0) as fetcher, pytest.raises(BlockedAddressError):
        fetcher.fetch(url)


@pytest.mark.parametrize(
    ("ref", "schemes"),
    [
        ("ftp://example.com/x", ["http", "https", "s3"]),
        ("file:///etc/passwd", ["http", "https", "s3"]),
        ("gopher://example.com/", ["http", "https", "s3"]),
        ("http://example.com/x", ["https"]),
        ("s3://bucket/key", ["http", "https"]),
    ],
)
def test_schemes_not_allowed(ref: str, schemes: list[str]) -> None:
    with (
        make(allowed_schemes=schemes) as fetcher,
        pytest.raises(BlockedAddressError, match="scheme"),
    ):
        fetcher.fetch(ref)


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("127.0.0.1", True),
        ("10.0.0.1", True),
        ("172.16.5.4", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),
        ("100.64.0.1", True),
        ("0.0.0.0", True),
        ("224.0.0.1", True),
        ("255.255.255.255", True),
        ("::1", True),
        ("::", True),
        ("fe80::1", True),
        ("fc00::1", True),
        ("ff02::1", True),
        ("::ffff:127.0.0.1", True),
        ("::ffff:169.254.169.254", True),
        ("64:ff9b::a9fe:a9fe", True),  # NAT64 of 169.254.169.254
        ("2002:a00:1::", True),  # 6to4 of 10.0.0.1
        ("8.8.8.8", False),
        ("2002:808:808::1", False),  # 6to4 of 8.8.8.8
        ("64:ff9b::808:808", False),  # NAT64 of 8.8.8.8
        ("2606:4700::1111", False),
        ("::ffff:8.8.8.8", False),
    ],
)
def test_address_policy(address: str, blocked: bool) -> None:
    ip = parse_ip(address)
    assert ip is not None
    assert AddressPolicy().address_allowed(ip) is not blocked


@pytest.mark.parametrize(
    "address",
    [
        "::7f00:1",  # IPv4-compatible 127.0.0.1
        "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
        "::a00:1",  # IPv4-compatible 10.0.0.1
        "::ffff:0:a9fe:a9fe",  # SIIT 169.254.169.254
        "::ffff:0:7f00:1",  # SIIT 127.0.0.1
        "64:ff9b:1::a9fe:a9fe",  # RFC 8215 NAT64 of 169.254.169.254
        "64:ff9b:1::808:808",  # RFC 8215 local use: never public, whatever it embeds
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "::ffff:7f00:1",  # IPv4-mapped 127.0.0.1
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "2001:0:808:808::1",  # Teredo, a public server: the client behind it is unknown
        "3fff::1",  # documentation (RFC 9637)
        "5f00::1",  # SRv6 SIDs
        "fec0::1",  # site-local
        "100::1",  # discard
    ],
)
def test_ipv6_forms_carrying_a_private_ipv4_are_refused(address: str) -> None:
    ip = parse_ip(address)
    assert ip is not None
    assert not AddressPolicy().address_allowed(ip)
    with pytest.raises(BlockedAddressError, match="not public"):
        AddressPolicy().check_host(f"[{address}]", "x")


def test_embedded_ipv4_is_extracted_from_every_form() -> None:
    expected = ipaddress.IPv4Address("169.254.169.254")
    for text in (
        "::a9fe:a9fe",
        "::ffff:a9fe:a9fe",
        "::ffff:0:a9fe:a9fe",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a9fe:a9fe",
        "2002:a9fe:a9fe::",
        "2001:0:a9fe:a9fe::1",
    ):
        assert embedded_ipv4(ipaddress.IPv6Address(text)) == expected, text
    assert embedded_ipv4(ipaddress.IPv6Address("2606:4700::1111")) is None


def test_resolved_ipv4_compatible_address_is_refused_at_connect() -> None:
    resolve = resolver({"sneaky.example": ["::7f00:1"]})
    with make(allow=[], resolve=resolve) as fetcher, pytest.raises(BlockedAddressError):
        fetcher.fetch("http://sneaky.example/x.pdf")


def test_address_policy_allow_list() -> None:
    policy = AddressPolicy(["10.0.0.0/8", "fd00::1", "intranet.local", "127.0.0.1"])
    for text in ("10.9.8.7", "fd00::1", "::ffff:10.1.1.1", "127.0.0.1"):
        ip = parse_ip(text)
        assert ip is not None and policy.address_allowed(ip)
    ip = parse_ip("127.0.0.2")
    assert ip is not None and not policy.address_allowed(ip)
    policy.check_host("intranet.local", "x")
    with pytest.raises(BlockedAddressError):
        policy.check_host("localhost", "x")
    with pytest.raises(BlockedAddressError):
        policy.check_host("foo.localhost", "x")


class _FakeStream:
    def __init__(self, peer: tuple[str, int], log: dict[str, Any]) -> None:
        self._peer = peer
        self._log = log

    def get_extra_info(self, info: str) -> Any:
        return self._peer if info == "server_addr" else None

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: Any = None
    ) -> Any:
        self._log["server_hostname"] = server_hostname
        raise http_lib().httpcore.ConnectError("stop here: the test only records the TLS name")

    def close(self) -> None:
        self._log["closed"] = True


class _RecordingBackend:
    """Records where the guard connects; never touches the network."""

    def __init__(self, peer: tuple[str, int] | None = None) -> None:
        self.log: dict[str, Any] = {}
        self._peer = peer

    def connect_tcp(self, host: str, port: int, **kwargs: Any) -> _FakeStream:
        self.log["host"] = host
        return _FakeStream(self._peer or (host, port), self.log)

    def sleep(self, seconds: float) -> None:
        pass


def _guarded(inner: _RecordingBackend, resolve: Any) -> GuardedBackend:
    return GuardedBackend(inner, http_lib().httpcore, AddressPolicy(), resolve)


def test_tls_verifies_the_host_name_not_the_pinned_ip() -> None:
    inner = _RecordingBackend()
    backend = _guarded(inner, resolver({"public.example": [PUBLIC_IP]}))
    lib = http_lib()
    transport = deadline_transport(lib, timeout=2.0, network_backend=backend)
    with pytest.raises(lib.httpx.ConnectError):
        transport.handle_request(lib.httpx.Request("GET", "https://public.example/doc.pdf"))
    assert inner.log["host"] == PUBLIC_IP  # connected to the checked address
    assert inner.log["server_hostname"] == "public.example"  # TLS checks the name


def test_peer_address_is_checked_after_connecting() -> None:
    inner = _RecordingBackend(peer=("10.0.0.5", 80))
    backend = _guarded(inner, resolver({"public.example": [PUBLIC_IP]}))
    with pytest.raises(BlockedAddressError, match=r"connected to 10\.0\.0\.5"):
        backend.connect_tcp("public.example", 80, timeout=1.0)
    assert inner.log["closed"] is True


def test_stuck_resolver_ends_at_the_connect_timeout() -> None:
    release = threading.Event()
    answered: list[str] = []

    def stuck(host: str, port: int) -> list[str]:
        release.wait(50)  # until released: only the connect timeout can end the wait sooner
        answered.append(host)
        return [PUBLIC_IP]

    backend = _guarded(_RecordingBackend(), stuck)
    with pytest.raises(http_lib().httpcore.ConnectTimeout):
        backend.connect_tcp("slow.example", 80, timeout=0.2)
    # The timeout ended it, not the resolver's answer (none came): checked, not timed.
    assert answered == []
    release.set()


def test_injected_transport_still_gets_the_hop_checks() -> None:
    httpx = http_lib().httpx
    seen: list[str] = []

    def handler(request: Any) -> Any:
        seen.append(str(request.url))
        return httpx.Response(200, headers={"Content-Type": "text/csv"}, content=CSV)

    config = FetchConfig(backoff_base_s=0.0)
    with Fetcher(config, max_bytes=1000, transport=httpx.MockTransport(handler)) as fetcher:
        assert fetcher.fetch("http://files.example/a.csv").data == CSV
        with pytest.raises(BlockedAddressError):
            fetcher.fetch("http://169.254.169.254/latest/meta-data")
        with pytest.raises(FetchError, match="over the limit of 5 bytes"):
            fetcher.fetch("http://files.example/a.csv", max_bytes=5)
    assert seen == ["http://files.example/a.csv"] * 2


# -- http: statuses and retries --------------------------------------------------------------------


def test_404_is_not_retried(server: FetchTestServer) -> None:
    with make(max_retries=3) as fetcher, pytest.raises(FetchError, match="HTTP 404") as caught:
        fetcher.fetch(server.url("/missing.pdf"), where={"scene_index": 0, "part_index": 2})
    assert server.hits["/missing.pdf"] == 1
    assert (caught.value.scene_index, caught.value.part_index) == (0, 2)


def test_500_then_200_is_retried(server: FetchTestServer) -> None:
    url = server.route(
        "/flaky.csv", sequence(answer(b"boom", "text/plain", status=500), answer(CSV, "text/csv"))
    )
    with make(max_retries=2) as fetcher:
        assert fetcher.fetch(url).data == CSV
        assert fetcher.stats["retries"] == 1
    assert server.hits["/flaky.csv"] == 2


def test_429_retry_after_is_honoured_and_capped(server: FetchTestServer) -> None:
    url = server.route(
        "/busy.csv",
        sequence(
            answer(b"", "text/plain", status=429, headers={"Retry-After": "1000"}),
            answer(CSV, "text/csv"),
        ),
    )
    waits: list[float] = []
    with make(max_retries=1) as fetcher:
        fetcher._http._retry.sleep = waits.append  # record instead of sleeping
        assert fetcher.fetch(url).data == CSV
    assert waits == [10.0]


def test_5xx_exhausts_retries(server: FetchTestServer) -> None:
    url = server.route("/down.csv", answer(b"", "text/plain", status=503))
    with make(max_retries=1) as fetcher, pytest.raises(FetchError, match="HTTP 503"):
        fetcher.fetch(url)
    assert server.hits["/down.csv"] == 2


def test_connection_refused_is_retried_then_fails() -> None:
    with make(max_retries=2) as fetcher:
        with pytest.raises(FetchError, match="connection failed"):
            fetcher.fetch(f"http://127.0.0.1:{closed_port()}/x.pdf")
        assert fetcher.stats["retries"] == 2


# -- http: content types ---------------------------------------------------------------------------


def test_wrong_content_type_for_an_image(server: FetchTestServer) -> None:
    with make() as fetcher, pytest.raises(FetchError, match="'text/html' is not an image"):
        fetcher.fetch(server.url("/page.html"), kind="image")


@pytest.mark.parametrize(
    ("kind", "content_type", "path", "ok"),
    [
        ("document", "image/png", "/t1/a.png", False),
        ("document", "application/octet-stream", "/t2/a.pdf", True),
        ("document", "application/octet-stream", "/t3/a.exe", False),
        ("document", None, "/t4/a.docx", True),
        (
            "document",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "/t5/x",
            True,
        ),
        ("document", "application/x-msdownload", "/t6/a.pdf", False),
        ("audio", "audio/mpeg", "/t7/x", True),
        ("audio", "application/octet-stream", "/t8/a.mp3", True),
        ("audio", "application/octet-stream", "/t9/a.pdf", False),
        ("image", "application/octet-stream", "/t10/a.png", False),
    ],
)
def test_content_type_rules(
    server: FetchTestServer, kind: Any, content_type: str | None, path: str, ok: bool
) -> None:
    url = server.route(path, answer(b"bytes", content_type))
    with make() as fetcher:
        if ok:
            assert fetcher.fetch(url, kind=kind).data == b"bytes"
        else:
            with pytest.raises(FetchError, match="content type"):
                fetcher.fetch(url, kind=kind)


def test_configured_content_types_replace_the_default(server: FetchTestServer) -> None:
    json_url = server.route("/cfg.json", answer(b"{}", "application/json"))
    csv_url = server.url("/data.csv")
    with make(allowed_content_types=["text/*"]) as fetcher:
        assert fetcher.fetch(csv_url).data == CSV
        with pytest.raises(FetchError, match="'application/json' is not a document"):
            fetcher.fetch(json_url)


# -- http: size limit and deadline -----------------------------------------------------------------


def test_content_length_over_the_limit_is_refused_before_reading(server: FetchTestServer) -> None:
    url = server.route("/big.csv", answer(b"x" * 200_000, "text/csv"))
    with make(max_bytes=1000) as fetcher, pytest.raises(FetchError, match="200000 bytes, over"):
        fetcher.fetch(url)
    with make(max_bytes=10**6) as fetcher, pytest.raises(FetchError, match="over the limit of 10 "):
        fetcher.fetch(url, max_bytes=10)  # the call's limit wins


def test_chunked_body_past_the_limit_stops(server: FetchTestServer) -> None:
    url = server.route("/chunked.txt", chunked_forever())
    before = server.hits["/chunked.txt"]
    # The body never ends: only the size cap can end the fetch (the test's timeout bounds a
    # hang), with the typed error naming it; one request.
    with make(max_bytes=100_000) as fetcher, pytest.raises(FetchError, match="body is over"):
        fetcher.fetch(url)
    assert server.hits["/chunked.txt"] - before == 1


@pytest.mark.parametrize(
    "route", [endless(), trickle(b"x" * 200, every=0.05)], ids=["endless", "trickle"]
)
def test_slow_bodies_end_at_the_deadline(server: FetchTestServer, route: Any) -> None:
    url = server.route("/slow.txt", route)
    before = server.hits["/slow.txt"]
    # Each byte comes within any read timeout, and the bodies end in 10 s or never: only the
    # 0.5 s deadline ends the fetch, as the typed error says (the test's timeout bounds a hang).
    with (
        make(timeout_s=0.5, max_retries=0, max_bytes=2 * 10**9) as fetcher,
        pytest.raises(FetchError, match=r"within 0\.5s"),
    ):
        fetcher.fetch(url)
    assert server.hits["/slow.txt"] - before == 1


# -- secrets ---------------------------------------------------------------------------------------


def test_labels_errors_and_logs_hold_no_secrets(
    server: FetchTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.route("/secret.csv", answer(CSV, "text/csv"))
    base = f"user:hunter2@127.0.0.1:{server.port}"
    query = "?X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA"
    caplog.set_level(logging.DEBUG)
    with make(max_retries=0) as fetcher:
        fetched = fetcher.fetch(f"http://{base}/secret.csv{query}#frag")
        with pytest.raises(FetchError) as caught:
            fetcher.fetch(f"http://{base}/nothing.pdf{query}")
    assert fetched.source == server.url("/secret.csv")
    # What memreader and the HTTP libraries logged (the test server logs its own requests).
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("tests"))
    assert "secret.csv" in logged  # the fetch was logged, by its label
    for text in (str(caught.value), logged, fetched.source):
        assert "hunter2" not in text and "deadbeef" not in text and "AKIA" not in text


# -- markdown hosts --------------------------------------------------------------------------------


def test_direct_markdown_hosts(server: FetchTestServer) -> None:
    server.route("/notes", answer("# Notes\nhé".encode(), "text/plain"))
    server.route("/bad-notes", answer(b"\xff\xfe", "text/plain"))
    resolve = resolver({"md.example": ["127.0.0.1"]})
    with make(
        allow=["md.example", *LOCAL], resolve=resolve, direct_markdown_hostnames=["md.example"]
    ) as fetcher:
        fetched = fetcher.fetch(f"http://md.example:{server.port}/notes")
        assert (fetched.markdown, fetched.extension) == (True, ".md")
        with pytest.raises(FetchError, match="not UTF-8"):
            fetcher.fetch(f"http://md.example:{server.port}/bad-notes")
        # Another host is not Markdown.
        assert fetcher.fetch(server.url("/notes")).markdown is False


# -- the concurrency budget ------------------------------------------------------------------------


def test_downloads_share_one_budget(server: FetchTestServer) -> None:
    state = {"now": 0, "max": 0}
    lock = threading.Lock()

    def slow(handler: Any) -> None:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        answer(CSV, "text/csv")(handler)

    url = server.route("/slow-ok.csv", slow)
    with make(max_concurrency=2) as fetcher, ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: fetcher.fetch(url).data, range(6)))
    assert results == [CSV] * 6
    assert state["max"] <= 2


def test_budget_busy_and_inline_refs_take_no_slot(server: FetchTestServer) -> None:
    with make(max_concurrency=1, timeout_s=0.2, max_retries=0) as fetcher:
        assert fetcher._slots.acquire(timeout=30)  # someone holds the only slot
        try:
            with pytest.raises(FetchError, match="download budget busy"):
                fetcher.fetch(server.url("/data.csv"))
            assert fetcher.fetch("data:text/plain,hi").data == b"hi"
        finally:
            fetcher._slots.release()


# -- data URLs and local paths ---------------------------------------------------------------------


def test_data_urls() -> None:
    with make() as fetcher:
        b64 = fetcher.fetch("data:image/png;base64," + base64.b64encode(PNG).decode(), kind="image")
        assert (b64.data, b64.media_type, b64.extension, b64.source) == (
            PNG,
            "image/png",
            ".png",
            "inline",
        )
        text = fetcher.fetch("data:,a%20b", name="notes.md")
        assert (text.data, text.media_type, text.name, text.extension) == (
            b"a b",
            "text/plain",
            "notes.md",
            ".md",
        )
        with pytest.raises(DocumentError, match="over the max_file_bytes limit"):
            fetcher.fetch("data:;base64," + base64.b64encode(b"x" * 100).decode(), max_bytes=10)
        with pytest.raises(DocumentError, match="not valid base64"):
            fetcher.fetch("data:;base64,!!!")


def test_local_paths(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_bytes(b"hello")
    (tmp_path / "outside.txt").write_bytes(b"no")
    config = FetchConfig()
    where = {"scene_index": 1, "message_index": 2, "part_index": 3}
    with Fetcher(config, max_bytes=100) as disabled:
        with pytest.raises(DocumentError, match="local paths are disabled") as caught:
            disabled.fetch(str(root / "a.txt"), where=where)
        assert not isinstance(caught.value, FetchError) and caught.value.part_index == 3
    fetcher = Fetcher(
        config,
        access=DocumentAccess(allow_local_paths=True, allowed_roots=[str(root)]),
        max_bytes=100,
        base_dir=str(root),
    )
    fetched = fetcher.fetch("a.txt")  # relative to base_dir
    assert (fetched.data, fetched.source, fetched.name, fetched.extension) == (
        b"hello",
        "a.txt",
        "a.txt",
        ".txt",
    )
    assert fetched.media_type is None
    with pytest.raises(DocumentError, match="outside the allowed roots") as outside:
        fetcher.fetch(str(tmp_path / "outside.txt"), where=where)
    assert outside.value.part_index == 3
    with pytest.raises(FetchError, match=r"'gone\.txt' does not exist"):
        fetcher.fetch("gone.txt")
    with pytest.raises(DocumentError, match="over the max_file_bytes limit"):
        fetcher.fetch("a.txt", max_bytes=2)


# -- S3 (moto in server mode) ----------------------------------------------------------------------


def test_s3_get(s3_endpoint: str) -> None:
    with s3_fetcher(s3_endpoint) as fetcher:
        fetched = fetcher.fetch("s3://docs/dir/report.pdf")
        image = fetcher.fetch("s3://docs/pic.png", kind="image")  # decided by the extension
    assert (fetched.data, fetched.source, fetched.name) == (
        PDF,
        "s3://docs/dir/report.pdf",
        "report.pdf",
    )
    assert (fetched.media_type, fetched.extension) == ("application/pdf", ".pdf")
    assert image.data == PNG


def test_s3_injected_client(s3_endpoint: str) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    config = FetchConfig(s3={"allow_buckets": ["docs"]})
    fetcher = Fetcher(config, max_bytes=1000, s3_client=client)
    assert fetcher.fetch("s3://docs/dir/report.pdf").data == PDF
    fetcher.close()


@pytest.mark.parametrize(
    ("ref", "kind", "message"),
    [
        ("s3://docs/nope.pdf", "document", "s3://docs/nope.pdf: no such key"),
        ("s3://no-such-bucket/a.pdf", "document", "no such bucket 'no-such-bucket'"),
        ("s3://docs/big.txt", "document", "5000 bytes, over the limit of 1000"),
        ("s3://docs/dir/report.pdf", "image", "is not an image"),
        ("s3://docs", "document", "needs a bucket and a key"),
    ],
)
def test_s3_failures(s3_endpoint: str, ref: str, kind: Any, message: str) -> None:
    with s3_fetcher(s3_endpoint) as fetcher, pytest.raises(FetchError, match=message):
        fetcher.fetch(ref, kind=kind)


def test_s3_wrong_credentials(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # moto checks credentials only once its "no auth" request budget is spent: set it to 0
    # through the server's own API, and restore it afterwards.
    def set_auth_budget(value: str) -> None:
        request = urllib.request.Request(
            f"{s3_endpoint}/moto-api/reset-auth",
            data=value.encode(),
            method="POST",
            headers={"Content-Type": "text/plain"},  # a form body would be parsed away
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
    set_auth_budget("0")
    try:
        with s3_fetcher(s3_endpoint) as fetcher, pytest.raises(FetchError) as caught:
            fetcher.fetch("s3://docs/dir/report.pdf")
    finally:
        set_auth_budget("inf")
    message = str(caught.value)
    assert "access refused (InvalidAccessKeyId)" in message
    assert "AKIAWRONG" not in message and "wrong-secret" not in message


def test_s3_without_credentials(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with (
        s3_fetcher(s3_endpoint) as fetcher,
        pytest.raises(FetchError, match="no usable AWS credentials"),
    ):
        fetcher.fetch("s3://docs/dir/report.pdf")


def test_s3_unreachable_endpoint(s3_endpoint: str) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    with (
        s3_fetcher(endpoint, timeout_s=1.0) as fetcher,
        pytest.raises(FetchError, match="cannot reach the S3 endpoint"),
    ):
        fetcher.fetch("s3://docs/dir/report.pdf")
