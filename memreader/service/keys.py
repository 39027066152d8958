"""API keys: each names the users whose memories it may read and write.

Keys are stored as their SHA-256 (a key is 32 random bytes, so a fast hash is enough: there
is nothing to guess); a request's key is hashed and looked up, and the plain key is never kept.

>>> key = ApiKey(name="app", sha256=hash_key("mr_secret"), users=["alice"])
>>> ring = KeyRing([key])
>>> ring.find("mr_secret").may_use("alice"), ring.find("mr_secret").may_use("bob")
(True, False)
>>> ring.find("wrong") is None
True
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import Field, ValidationInfo, field_validator

from memreader.config_files import read_yaml_config
from memreader.config_model import ConfigModel
from memreader.errors import ConfigError
from memreader.scopes import check_scope_id

__all__ = [
    "ANY_USER",
    "ApiKey",
    "KeyRing",
    "Principal",
    "hash_key",
    "load_keys_file",
    "new_key",
]

#: The ``users`` entry of an admin key: every user.
ANY_USER = "*"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def hash_key(key: str) -> str:
    """The SHA-256 of ``key``, as stored in the config (hex)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random key (``mr_`` and 43 URL-safe characters: 256 bits)."""
    return "mr_" + secrets.token_urlsafe(32)


class ApiKey(ConfigModel):
    """One key of the config: ``name`` (in logs, metrics and job ownership), ``sha256`` (of
    the key, hex) and ``users`` (the ``user_id`` values it may read and write, or ``["*"]``);
    ``agents`` and ``tasks``, when given, limit it to those agents' and tasks' memories
    (:mod:`memreader.service.scope_walls`)."""

    name: str = Field(min_length=1, max_length=128)
    sha256: str
    users: list[str] = Field(min_length=1)
    agents: list[str] | None = Field(default=None, min_length=1)
    tasks: list[str] | None = Field(default=None, min_length=1)

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, value: str) -> str:
        value = value.strip().lower()
        if not _HEX64.match(value):
            raise ValueError(
                "sha256 must be the 64 hex digits of the key's SHA-256 (memreader key prints "
                "it); plain keys are not accepted in configs"
            )
        return value

    @field_validator("users")
    @classmethod
    def _user_ids(cls, users: list[str]) -> list[str]:
        if any(not user or "\0" in user for user in users):
            raise ValueError("users entries must be non-empty user ids (or '*')")
        return users

    @field_validator("agents", "tasks")
    @classmethod
    def _scope_ids(cls, names: list[str] | None, info: ValidationInfo) -> list[str] | None:
        for name in names or []:
            check_scope_id(name, f"{info.field_name} entry")
        return names


@dataclass(frozen=True)
class Principal:
    """Who a request is: the key's name, the users it may touch, and the agents and tasks it
    is limited to (``None``: not limited)."""

    name: str
    users: frozenset[str]
    agents: frozenset[str] | None = None
    tasks: frozenset[str] | None = None

    @property
    def is_admin(self) -> bool:
        """Whether the key may touch every user."""
        return ANY_USER in self.users

    def may_use(self, user_id: str) -> bool:
        """Whether this key may read and write ``user_id``'s memories."""
        return self.is_admin or user_id in self.users

    def only_user(self) -> str | None:
        """The one user a non-admin key names, else ``None`` (the default ``user_id``)."""
        if self.is_admin or len(self.users) != 1:
            return None
        return next(iter(self.users))


#: Who a request is when the service has no keys (it then listens on loopback only).
LOCAL_PRINCIPAL = Principal("local", frozenset({ANY_USER}))


class KeyRing:
    """The configured keys, by hash."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        # Each key's principal made once (it is frozen): every request looks one up.
        self._by_hash = {key.sha256: _principal_of(key) for key in keys}

    def __bool__(self) -> bool:
        return bool(self._by_hash)

    def find(self, presented: str) -> Principal | None:
        """The principal of the key ``presented``, or ``None`` when no key matches."""
        digest = hash_key(presented)
        for stored, principal in self._by_hash.items():
            # Compare every entry in constant time: no early exit tells how close a guess was.
            if hmac.compare_digest(stored, digest):
                return principal
        return None


def _principal_of(key: ApiKey) -> Principal:
    return Principal(
        key.name,
        frozenset(key.users),
        None if key.agents is None else frozenset(key.agents),
        None if key.tasks is None else frozenset(key.tasks),
    )


def load_keys_file(path: str | os.PathLike[str]) -> list[ApiKey]:
    """The keys of a YAML file holding ``keys: [{name, sha256, users}, ...]`` (each may also
    hold ``agents`` and ``tasks``).

    Raises:
        ConfigError: the file cannot be read or an entry is wrong.
    """
    data = read_yaml_config(path)
    entries = data.get("keys")
    if not isinstance(entries, list) or set(data) - {"keys"}:
        raise ConfigError(f"keys file {os.fspath(path)!r} must hold only `keys:`, a list")
    return [ApiKey.model_validate(entry) for entry in entries]
