"""Store URLs: how one may be shown (:func:`public_url`, its secrets masked), the SQLite file
one names (:func:`sqlite_file`) and one made relative to a config's folder
(:func:`resolve_store_url`)."""

from __future__ import annotations

import os
from urllib.parse import unquote_plus

from memreader.secret_masking import is_secret_key

__all__ = ["public_url", "resolve_store_url", "sqlite_file"]


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


def sqlite_file(url: str) -> str | None:
    """The file a ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URL names, as written;
    ``None`` for another scheme or ``sqlite://:memory:``.

    >>> sqlite_file("sqlite:///m.db"), sqlite_file("sqlite:////data/m.db")
    ('m.db', '/data/m.db')
    """
    scheme, _, rest = url.partition("://")
    if scheme.lower() != "sqlite" or not rest.startswith("/"):
        return None
    return rest[1:].partition("?")[0] or None


def resolve_store_url(url: str, base_dir: str | None) -> str:
    """``url`` with a relative SQLite file made relative to ``base_dir`` (the job file's
    folder), as ``output.path`` is; other URLs as they are.

    >>> resolve_store_url("sqlite:///m.db", "/jobs")
    'sqlite:////jobs/m.db'
    """
    file = sqlite_file(url)
    if file is None or os.path.isabs(file) or not base_dir:
        return url
    return "sqlite:///" + os.path.abspath(os.path.join(base_dir, os.path.expanduser(file)))
