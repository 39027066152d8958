"""Credentials kept out of URLs, and URL credentials masked in the HTTP libraries' log records."""

from __future__ import annotations

import logging
from urllib.parse import unquote, urlsplit, urlunsplit

from memreader.redact import mask_url

__all__ = ["install_log_redaction", "split_credentials"]


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that part (percent-decoded) if any."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return bare, (unquote(parts.username or ""), unquote(parts.password or ""))


class _RedactCredentials(logging.Filter):
    """Masks URL credentials in a library's log records (its request lines show URLs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logging module's to report, not ours
            return True
        redacted = mask_url(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


_FILTER = _RedactCredentials()
#: Loggers on which the HTTP libraries and SDKs log request lines (filters do not inherit).
_REDACTED_LOGGERS = ("httpx", "httpx2", "openai._base_client", "ollama")


def install_log_redaction() -> None:
    """Add the URL-credential filter to the HTTP libraries' loggers (idempotent)."""
    for name in _REDACTED_LOGGERS:
        log = logging.getLogger(name)
        if _FILTER not in log.filters:
            log.addFilter(_FILTER)
