"""Credentials kept out of URLs; the libraries' log records are scrubbed by
:mod:`memreader.transport.log_scrub` (:func:`install_log_redaction`, re-exported here)."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

from memreader.transport.log_scrub import install_log_redaction

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
