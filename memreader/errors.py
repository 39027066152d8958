"""The exception hierarchy: every error memreader raises on purpose is a ``MemReaderError``.

Input errors carry where they happened (``scene_index``, ``message_index``, ``part_index``) so a
caller, a batch job or the CLI can say exactly what was wrong without parsing the message. The
whole tree, drawn once (classes defined elsewhere say where; ``tests/test_errors.py`` holds this
drawing to the classes)::

    MemReaderError
    ├── ConfigError (ValueError)
    │   ├── PipelineError
    │   ├── MissingEmbedderError
    │   ├── RegistryError                     registry.py
    │   ├── MemOSConfigError
    │   └── LLMCheckError                     cli/llm_check.py
    ├── InputError (ValueError)
    │   ├── InvalidSceneError
    │   ├── InvalidMessageError
    │   │   ├── UnknownRoleError
    │   │   └── InvalidChatTimeError
    │   ├── InvalidInfoError
    │   ├── InvalidCursorError
    │   ├── MemOSItemError
    │   ├── ForbiddenUserError
    │   ├── ForbiddenScopeError
    │   ├── AgentsMemoryError                 integrations/openai_agents/binding.py
    │   ├── UnknownResourceError              mcp/resources.py
    │   └── DocumentError
    │       ├── FetchError
    │       │   └── BlockedAddressError
    │       │       └── BlockedBucketError
    │       ├── ImageError
    │       └── TranscriptionError
    ├── UnsupportedModeError (ValueError)
    │   └── LLMRequiredError
    ├── LLMError                              llms/errors.py
    │   ├── LLMTimeoutError
    │   ├── LLMConnectionError
    │   ├── LLMRateLimitError
    │   ├── LLMServerError
    │   ├── LLMRequestError
    │   ├── LLMParseError
    │   │   └── LLMReplyRejected
    │   ├── LLMEmptyResponseError
    │   └── LLMCallBlocked
    │       └── LLMRateLimitExceeded
    ├── EmbeddingError
    ├── StoreError
    │   ├── UnknownMemoryError (KeyError)
    │   └── ConflictError
    ├── SinkError
    │   └── ForeignFilesError                 categories/markdown_files.py
    ├── SkillWriteError
    ├── ResponseTooLargeError                 transport/body.py
    ├── UnreadableResponseError               transport/body.py
    ├── OutputError                           cli/output.py
    ├── UnauthorizedError                     mcp/users.py
    ├── DeadlineExceeded
    └── InternalError
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class MemReaderError(Exception):
    """Base class of every error memreader raises on purpose."""


class ConfigError(MemReaderError, ValueError):
    """A configuration is invalid: unknown backend, bad value, unreadable YAML, missing env var."""


class PipelineError(ConfigError):
    """A pipeline is not well formed: a step requires what no earlier step produces, two steps
    share a name, or a change names a step that is not there. Raised when the pipeline is built
    or changed, never while data flows."""


class MissingEmbedderError(ConfigError):
    """A memory store was opened without an embedder and without ``text_only=True``: its
    search would silently compare words only (see :mod:`memreader.stores.embedder_rules`)."""


class MemOSConfigError(ConfigError):
    """A MemOS-shaped config (:mod:`memreader.memos`) holds a setting memreader cannot honour
    and that would change results if it were ignored (an LLM or embedder backend memreader has
    no counterpart for, ``memory_version_switch: on`` without a store); the message names the
    setting and what to do instead."""


def config_error_from(what: str, exc: ValidationError) -> ConfigError:
    """A :class:`ConfigError` naming each invalid field of ``exc``, never the input values
    (they may be secrets). Raise it after the ``except`` block (``raise error from None``): the
    pydantic error echoes the values, and must be neither the cause nor the context.

    Errors of nested config models that raised a ``ConfigError`` themselves are flattened, so
    the message names the full path, e.g. ``general_llm.temperature``.
    """
    problems: list[tuple[str, str]] = []
    errors = exc.errors(include_input=False, include_url=False)
    only = (errors[0].get("ctx") or {}).get("error") if len(errors) == 1 else None
    if isinstance(only, MemOSConfigError):
        # Raised while a MemOS config was translated: its own message names the setting.
        return only
    for err in errors:
        loc = ".".join(str(part) for part in err["loc"])
        inner = (err.get("ctx") or {}).get("error")
        nested: list[tuple[str, str]] | None = getattr(inner, "config_problems", None)
        if isinstance(inner, ConfigError) and nested:
            problems.extend(
                (f"{loc}.{sub}" if loc and sub != "(root)" else loc or sub, msg)
                for sub, msg in nested
            )
        else:
            problems.append((loc or "(root)", err["msg"]))
    error = ConfigError(f"invalid {what}: " + "; ".join(f"{loc}: {msg}" for loc, msg in problems))
    error.config_problems = problems  # type: ignore[attr-defined]
    return error


class InputError(MemReaderError, ValueError):
    """The caller's input has the wrong shape or content.

    The location attributes are ``None`` where they do not apply, and the message names them.
    """

    def __init__(
        self,
        message: str,
        *,
        scene_index: int | None = None,
        message_index: int | None = None,
        part_index: int | None = None,
    ) -> None:
        self.scene_index = scene_index
        self.message_index = message_index
        self.part_index = part_index
        if not message.isascii():
            # A message quoting the caller's text must itself be writable as UTF-8 (a batch
            # records it): a lone surrogate in it is written as its escape.
            message = message.encode("utf-8", "backslashreplace").decode("utf-8")
        self.reason = message
        where = _location(scene_index, message_index, part_index)
        super().__init__(f"{where}: {message}" if where else message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments need help to survive pickling (multiprocessing, Ray).
        return (
            _rebuild_input_error,
            (type(self), self.reason, self.scene_index, self.message_index, self.part_index),
        )


def _rebuild_input_error(
    cls: type[InputError],
    reason: str,
    scene_index: int | None,
    message_index: int | None,
    part_index: int | None,
) -> InputError:
    return cls(reason, scene_index=scene_index, message_index=message_index, part_index=part_index)


def _location(scene: int | None, message: int | None, part: int | None) -> str:
    bits = []
    if scene is not None:
        bits.append(f"scene {scene}")
    if message is not None:
        bits.append(f"message {message}")
    if part is not None:
        bits.append(f"part {part}")
    return ", ".join(bits)


class InvalidCursorError(InputError):
    """A listing's ``cursor`` is not one a listing gave (``Memory.get_all``, ``GET
    /v1/memories``, ``memreader list``): pass the ``next_cursor`` of the page before."""


class ForbiddenUserError(InputError):
    """A call named a user its caller may not touch: another user than the one an MCP server
    (stdio) or an adapter serves, or one an HTTP key is not limited to (HTTP: 403
    ``forbidden-user``)."""


class ForbiddenScopeError(InputError):
    """A call named an agent or a task its key (or adapter) is not limited to, changed a memory
    outside them, or asked for what spans every task of the owner (HTTP: 403
    ``forbidden-scope``)."""


class MemOSItemError(InputError):
    """A MemOS-shaped memory item (:mod:`memreader.memos`) cannot be read: the message names
    the field and why."""


class InvalidSceneError(InputError):
    """A scene is not a list of messages or a string, or it is empty."""


class InvalidMessageError(InputError):
    """A message is malformed: not a mapping, missing or wrong-typed fields."""


class UnknownRoleError(InvalidMessageError):
    """A message's role is not one of system, user, assistant, tool (or function)."""


class InvalidChatTimeError(InvalidMessageError):
    """A message's ``chat_time`` is not a string, or names a time outside years 1 to 9999 in
    UTC."""


class InvalidInfoError(InputError):
    """The ``info`` mapping lacks a string ``user_id`` or ``session_id``."""


class DocumentError(InputError):
    """A document part cannot be read or converted to text."""


class FetchError(DocumentError):
    """Bytes from outside (a URL, an S3 object, a local file named in a part) could not be
    fetched: a status, a timeout, a size or redirect limit, a content type that is not what the
    part should hold, a missing key or refused credentials. The message names the source as a
    safe label (never a URL's credentials or query)."""


class BlockedAddressError(FetchError):
    """A URL was refused before (or while) connecting: a scheme that is not allowed, or a host
    that is or resolves to a private, loopback, link-local, multicast or metadata address not on
    the allow-list (checked for every redirect hop and for the address actually connected)."""


class BlockedBucketError(BlockedAddressError):
    """An ``s3://bucket/key`` named in content was refused before any request: the bucket (or
    the key's prefix) is not listed in ``fetch.s3.allow_buckets``, or the key holds ``.`` or
    ``..`` segments. Content is not the operator: it never reaches a bucket the operator did
    not name, whatever the credentials could read."""


class ImageError(DocumentError):
    """An image cannot be used: not an allowed format, truncated or corrupt, over the pixel
    limit (a decompression bomb) or over the byte limit."""


class TranscriptionError(DocumentError):
    """Audio could not be transcribed (the transcription endpoint failed or answered
    nonsense)."""


class SkillWriteError(MemReaderError):
    """A skill bundle could not be written: the folder cannot be created or written, a symlink
    stands where the bundle goes, or S3 refused the object. The message names the destination
    (a path or ``s3://bucket/key``), never credentials or the endpoint."""


class SinkError(MemReaderError):
    """A batch output could not be written or read: the folder cannot be created or written,
    S3 refused or could not be reached, or the bucket does not exist. The message names the
    location (a path or ``s3://bucket/key``), never credentials or the endpoint."""


class StoreError(MemReaderError):
    """A memory store failed: its file or server cannot be opened or is not a memory store
    (a corrupt or foreign file), a write or a read failed, or a lock was not granted before the
    store's timeout. The message names the store (a path, or the URL without credentials)."""


class UnknownMemoryError(StoreError, KeyError):
    """The owner has no memory with this id (unknown, or another owner's: the two are not told
    apart). A ``KeyError`` too, so ``except KeyError`` catches it; its message names the id and the
    owner."""

    def __str__(self) -> str:
        # KeyError's str() quotes its argument; this error's message is a sentence.
        return str(self.args[0]) if self.args else ""


class ConflictError(StoreError):
    """A change lost to another made meanwhile: an update of a memory that another update (or
    a delete) retired after it was read. Nothing of the losing change was stored; read the
    memory again (its ``superseded_by`` names the version that won) and decide anew."""


class UnsupportedModeError(MemReaderError, ValueError):
    """The requested mode or input type is not available with this reader's configuration."""


class LLMRequiredError(UnsupportedModeError):
    """Fine mode, or an LLM rerank (``search(..., rerank=True)``), was asked for but no LLM
    is configured."""


class EmbeddingError(MemReaderError):
    """An embedder failed to produce vectors (model missing, remote error, wrong shape)."""


class InternalError(MemReaderError):
    """An unexpected failure inside memreader (a bug, or a plugin that broke its contract).

    Public calls raise it instead of the untyped exception, which is kept as ``__cause__``; a
    failure inside one window never raises it: that window falls back instead.
    """


class DeadlineExceeded(MemReaderError):
    """A call was stopped because its :class:`~memreader.calls.deadlines.Deadline` passed or was
    cancelled. The whole call stops (it is not one window's fallback) and nothing it was
    writing is stored. ``where`` names the point where the work stopped, ``cancelled`` says
    whether the caller cancelled it (else its time ran out)."""

    def __init__(self, message: str, *, where: str = "", cancelled: bool = False) -> None:
        super().__init__(message)
        self.where = where
        self.cancelled = cancelled

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps the keywords across pickling (a process pool, a batch worker).
        return (_deadline_exceeded, (str(self), self.where, self.cancelled))


def _deadline_exceeded(message: str, where: str, cancelled: bool) -> DeadlineExceeded:
    return DeadlineExceeded(message, where=where, cancelled=cancelled)
