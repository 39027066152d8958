"""Secrets kept out of the HTTP and S3 libraries' own log records.

httpx, httpcore, botocore and urllib3 log at DEBUG what they send and receive: httpcore the
response headers (a redirect's ``Location`` with a presigned URL's ``X-Amz-Signature``),
botocore the endpoint URL (with its ``user:password@``), the ``Authorization`` header and the
request signature. :func:`install_log_redaction` adds one filter to those loggers that rewrites
each record through :func:`scrub_log_text` before any handler sees it:

* URL credentials are masked (:func:`memreader.secret_masking.mask_url`);
* URL query strings are cut to ``?***`` (presigned URLs carry their signature there), in full
  URLs and in request lines (``"GET /key?X-Amz-Signature=... HTTP/1.1"``);
* secret-looking parameters (``Signature=``, ``Credential=``, ``X-Amz-Security-Token=``,
  ``token=``, ...) and secret header values (``Authorization``, ``Cookie``, ``X-Api-Key``, by
  :func:`memreader.secret_masking.is_secret_header`), in ``name: value`` lines and in the
  tuple and dict reprs the libraries print, become ``***``.

A logging filter runs only for records of the logger it is added to (not its children), so the
filter is added to each library logger by name, and again to any new one under the libraries'
prefixes whenever :func:`install_log_redaction` is called (cheap when nothing changed).
"""

from __future__ import annotations

import logging
import re
import threading

from memreader.secret_masking import is_secret_header, mask_url

__all__ = ["install_log_redaction", "scrub_log_text"]

_HIDDEN = "***"
# A URL's query: from "?" to the end of the URL (whitespace, a quote or a bracket).
_URL_QUERY = re.compile(r"(?P<base>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>?#]*)\?[^\s'\"<>#]+")
# A request line's target: "GET /path?query HTTP/1.1".
_TARGET_QUERY = re.compile(r"(?P<base>\b[A-Z]{3,7} /[^\s?]*)\?\S+")
_SECRET_PARAM = re.compile(
    r"(?P<name>\b(?:x-amz-signature|x-amz-credential|x-amz-security-token|signature|credential"
    r"|awsaccesskeyid|access_token|refresh_token|id_token|token|password|passwd|api_key|apikey)"
    r")(?P<sep>\s*[=:]\s*)(?P<value>[^\s&,;'\"\\]+)",
    re.IGNORECASE,
)
# ('Name', 'value') and 'Name': 'value' (bytes or text, as the libraries print headers).
_QUOTED_PAIR = re.compile(
    r"(?P<key>b?(?P<q1>['\"])(?P<name>[A-Za-z0-9_.-]+)(?P=q1)\s*[:,]\s*)"
    r"(?P<open>b?(?P<q2>['\"]))(?P<value>(?:\\.|(?!(?P=q2)).)*)(?P=q2)"
)
# Name: value, one header per line (botocore's canonical request).
_HEADER_LINE = re.compile(r"^(?P<name>[A-Za-z0-9-]+):(?P<value>.+)$", re.MULTILINE)

#: Loggers that print URLs or headers; a filter does not reach a logger's children.
_CORE_LEAVES = ("connection", "connection_pool", "http11", "http2", "proxy", "socks")
_LOGGERS = (
    "httpx",
    "httpx2",
    *(f"{core}.{leaf}" for core in ("httpcore", "httpcore2") for leaf in _CORE_LEAVES),
    "openai._base_client",
    "ollama",
    "urllib3.connectionpool",
    "botocore.endpoint",
    "botocore.auth",
    "botocore.regions",
    "botocore.parsers",
    "botocore.hooks",
    "botocore.httpsession",
    "botocore.retryhandler",
    "botocore.retries.standard",
)
#: Any logger under these is filtered too, once it exists.
_PREFIXES = ("httpx", "httpcore", "botocore", "boto3", "s3transfer", "urllib3", "openai", "ollama")


def scrub_log_text(text: str) -> str:
    """``text`` without URL credentials, URL queries, secret parameters or header values.

    >>> scrub_log_text("GET http://u:pw@h/k?X-Amz-Signature=abc ok")
    'GET http://***@h/k?*** ok'
    >>> scrub_log_text("[(b'Authorization', b'Basic dTpw'), (b'Server', b'x')]")
    "[(b'Authorization', b'***'), (b'Server', b'x')]"
    """
    text = mask_url(text)
    text = _URL_QUERY.sub(rf"\g<base>?{_HIDDEN}", text)
    text = _TARGET_QUERY.sub(rf"\g<base>?{_HIDDEN}", text)
    text = _QUOTED_PAIR.sub(_mask_pair, text)
    text = _HEADER_LINE.sub(_mask_line, text)
    return _SECRET_PARAM.sub(rf"\g<name>\g<sep>{_HIDDEN}", text)


def _mask_pair(match: re.Match[str]) -> str:
    if not is_secret_header(match.group("name")):
        return match.group(0)
    quote = match.group("q2")
    return f"{match.group('key')}{match.group('open')}{_HIDDEN}{quote}"


def _mask_line(match: re.Match[str]) -> str:
    if not is_secret_header(match.group("name")):
        return match.group(0)
    return f"{match.group('name')}:{_HIDDEN}"


class _ScrubSecrets(logging.Filter):
    """Rewrites a record's message (and its formatted exception) by :func:`scrub_log_text`."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logging module's to report, not ours
            return True
        scrubbed = scrub_log_text(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub_log_text(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub_log_text(record.stack_info)
        return True


_FILTER = _ScrubSecrets()
_LOCK = threading.Lock()
_seen = -1  # how many loggers existed at the last install


def install_log_redaction() -> None:
    """Add the scrubbing filter to the HTTP and S3 libraries' loggers (idempotent; cheap when
    no logger was created since the last call)."""
    global _seen
    manager = logging.Logger.manager
    with _LOCK:
        if len(manager.loggerDict) == _seen:
            return
        names = set(_LOGGERS)
        names.update(
            name
            for name, log in list(manager.loggerDict.items())
            if isinstance(log, logging.Logger) and name.partition(".")[0].startswith(_PREFIXES)
        )
        for name in sorted(names):
            log = logging.getLogger(name)
            if _FILTER not in log.filters:
                log.addFilter(_FILTER)
        _seen = len(manager.loggerDict)
