"""How a store URL may be shown: :func:`public_url`, its secrets masked."""

from __future__ import annotations

from urllib.parse import unquote_plus

from memreader.secret_masking import is_secret_key

__all__ = ["public_url"]


def public_url(url: str) -> str:
    """``url`` as logs, errors, manifests and reprs may show it: its password (and any query
    parameter whose name looks secret, such as ``password``) replaced by ``***``; the scheme,
    user, host, port, path and other parameters kept.

    >>> public_url("postgresql://ana:s3cret@db:5432/mem?sslmode=require&password=x")
    'postgresql://ana:***@db:5432/mem?sslmode=require&password=***'
    >>> public_url("sqlite:////data/m.db")
    'sqlite:////data/m.db'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    head, mark, query = rest.partition("?")
    authority, slash, path = head.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if at and ":" in userinfo:
        authority = f"{userinfo.partition(':')[0]}:***@{host}"
    if query:
        pairs = [pair.partition("=") for pair in query.split("&")]
        query = "&".join(
            f"{k}{eq}{'***' if eq and is_secret_key(unquote_plus(k)) else v}" for k, eq, v in pairs
        )
    return f"{scheme}{sep}{authority}{slash}{path}{mark}{query}"
