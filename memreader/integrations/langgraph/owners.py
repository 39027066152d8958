"""Whose memories a LangGraph namespace reaches: the user wall of
:class:`~memreader.integrations.langgraph.store.MemReaderStore`.

Two ways to bind a store, chosen when it is built:

- ``user_id="ana"``: every namespace is a path inside Ana's memories; no namespace names a
  user, so none can reach another's.
- ``user_label=1, users=["ana", "bob"]``: the namespace's label at position 1 is the user, as
  LangGraph's and LangMem's examples build namespaces (``("memories", user_id)``); only the
  users named are served, any other is refused with LangGraph's ``InvalidNamespaceError``.
  ``any_user=True`` serves whichever user a namespace names: the caller's explicit opt-in, for
  a graph whose namespaces come from an authenticated source.

>>> wall = Owners.of(user_label=1, users=["ana"])
>>> wall.owner(("memories", "ana"))
'ana'
>>> wall.owner(("memories", "eve"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
langgraph.store.base.InvalidNamespaceError: namespace ('memories', 'eve') names user 'eve', ...
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from langgraph.store.base import InvalidNamespaceError

from memreader.errors import InputError
from memreader.front.inputs import check_user

__all__ = ["Owners"]

#: LangGraph's wildcard label in a namespace pattern (``list_namespaces``).
WILDCARD = "*"


@dataclass(frozen=True)
class Owners:
    """The users a store serves and where a namespace names one (see the module docstring)."""

    user_id: str | None
    user_label: int | None
    users: frozenset[str]
    any_user: bool

    @classmethod
    def of(
        cls,
        *,
        user_id: str | None = None,
        user_label: int | None = None,
        users: Collection[str] | None = None,
        any_user: bool = False,
    ) -> Owners:
        """The wall a store's constructor arguments build.

        Raises:
            InputError: neither or both of ``user_id`` and ``user_label``; ``user_label`` not a
                non-negative integer; ``users`` or ``any_user`` without ``user_label``, or
                neither with it; a user that is not a non-empty string.
        """
        if (user_id is None) == (user_label is None):
            raise InputError(
                "MemReaderStore needs exactly one of user_id= (one user's store) and "
                "user_label= (the namespace position that names the user)"
            )
        if user_id is not None:
            if users is not None or any_user:
                raise InputError("MemReaderStore: users= and any_user= go with user_label=")
            return cls(check_user(user_id, "MemReaderStore"), None, frozenset(), False)
        if isinstance(user_label, bool) or not isinstance(user_label, int) or user_label < 0:
            raise InputError(f"user_label must be a non-negative integer, got {user_label!r}")
        if isinstance(users, str):
            raise InputError("users= must be a collection of user ids, not one string")
        named = frozenset(check_user(user, "MemReaderStore users") for user in users or ())
        if not named and any_user is not True:
            raise InputError(
                "MemReaderStore with user_label= needs users= (the users it serves) or "
                "any_user=True (serve whichever user a namespace names)"
            )
        return cls(None, user_label, named, any_user is True)

    def owner(self, namespace: Sequence[str]) -> str:
        """The user whose memories ``namespace`` (a whole one: a put's, a get's) is in.

        Raises:
            InvalidNamespaceError: it is too short to name the user, or names one this store
                does not serve.
        """
        if self.user_id is not None:
            return self.user_id
        assert self.user_label is not None
        if len(namespace) <= self.user_label:
            raise InvalidNamespaceError(
                f"namespace {tuple(namespace)!r} has no label at position {self.user_label}, "
                "where this store reads the user"
            )
        return self._served(namespace[self.user_label], namespace)

    def owners_under(self, prefix: Sequence[str]) -> list[str]:
        """The users a search or a listing of namespaces under ``prefix`` (labels or
        ``"*"``) reaches: the one it names, or every user this store names.

        Raises:
            InvalidNamespaceError: it names a user this store does not serve, or names none
                while the store serves any user (memreader searches one owner at a time).
        """
        if self.user_id is not None:
            return [self.user_id]
        assert self.user_label is not None
        if len(prefix) > self.user_label and prefix[self.user_label] != WILDCARD:
            return [self._served(prefix[self.user_label], prefix)]
        if self.any_user:
            raise InvalidNamespaceError(
                f"namespace prefix {tuple(prefix)!r} names no user (position "
                f"{self.user_label}); a store serving any user searches one user at a time"
            )
        return sorted(self.users)

    def _served(self, user: str, namespace: Sequence[str]) -> str:
        if self.any_user or user in self.users:
            return user
        served = ", ".join(repr(name) for name in sorted(self.users))
        raise InvalidNamespaceError(
            f"namespace {tuple(namespace)!r} names user {user!r}, whom this store does not "
            f"serve (it serves: {served}); name the user in users= or pass any_user=True"
        )
