"""The base of batch input formats: how one input's bytes become scenes.

A format is a class on :class:`Format` registered by name (``@register_format("csv")``); a job
names it as an input's ``format``. It gets the input opened
(:class:`~memreader.batch.places.opened.OpenedInput`: its bytes, within the spec's
``max_bytes``, streamed or whole) and the input's spec, and yields :class:`Scene` and
:class:`BadRecord` in input order; the job batches the scenes for ``get_memory``. Where the
input is (a local file, an S3 object) is not the format's business.

A malformed record (a line that is not JSON, a scene that is not a scene, a missing id field)
becomes a :class:`BadRecord` and reading goes on; a problem with the whole input raises a typed
:class:`~memreader.errors.InputError` that names it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from memreader.batch.registries import FORMATS
from memreader.errors import ConfigError, InputError, InvalidInfoError, InvalidSceneError
from memreader.scenes.scene import normalize_chat
from memreader.scenes.text_checks import printable

if TYPE_CHECKING:
    from memreader.batch.job import IdSpec, InputSpec
    from memreader.batch.places.opened import OpenedInput

__all__ = [
    "BadRecord",
    "Format",
    "JsonShapedFormat",
    "Scene",
    "checked_scene",
    "format_class",
    "input_ids",
    "register_format",
]

_F = TypeVar("_F", bound="type[Format]")


def register_format(name: str) -> Callable[[_F], _F]:
    """Class decorator registering an input format (a subclass of :class:`Format`) under
    ``name``; plugins call it from a module named in the ``memreader.plugins`` entry points.

    Raises:
        RegistryError: ``name`` is registered to a different class.
    """

    def decorator(cls: _F) -> _F:
        FORMATS.register(name, cls)
        return cls

    return decorator


def format_class(name: str) -> type[Format]:
    """The input format class registered as ``name``.

    Raises:
        ConfigError: no format of that name is known, or what is registered under it is not a
            :class:`Format` subclass.
    """
    cls = FORMATS.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Format)):
        raise ConfigError(f"input format {name!r} is registered as {cls!r}, not a Format class")
    return cls


@dataclass(frozen=True)
class Scene:
    """One checked scene of an input: its index in the input, where it is (``line 12``,
    ``user Alice, day 2023-05-01``), its data (a list of OpenAI-style messages; for documents a
    list of one ``file`` part) and the ``user_id`` and ``session_id`` it is read with."""

    index: int
    label: str
    data: Any
    info: dict[str, str]


@dataclass(frozen=True)
class BadRecord:
    """A malformed part of an input, recorded while the rest is read.

    ``scene``: the index it would have had (``None`` when it is not one scene, e.g. a LoCoMo
    sample without a conversation); ``reason``: the typed error's class name
    (``InvalidSceneError``, ``InvalidMessageError``, ``InvalidInfoError``...).
    """

    scene: int | None
    label: str
    reason: str
    message: str

    @classmethod
    def of(cls, scene: int | None, label: str, exc: InputError) -> BadRecord:
        """The record of ``exc``; its scene location is dropped (it is always scene 0 of the
        one scene checked), the message and part are kept."""
        where = []
        if exc.message_index is not None:
            where.append(f"message {exc.message_index}")
        if exc.part_index is not None:
            where.append(f"part {exc.part_index}")
        text = f"{', '.join(where)}: {exc.reason}" if where else exc.reason
        return cls(scene=scene, label=label, reason=type(exc).__name__, message=text)


class Format(ABC):
    """How the bytes of one input become scenes (see the module docstring).

    Subclasses implement :meth:`read` and are registered with :func:`register_format`; they are
    built with no arguments, once per input read.
    """

    #: The job types (``type: chat`` or ``type: doc``) whose inputs this format reads.
    job_types: ClassVar[tuple[str, ...]] = ("chat",)

    @abstractmethod
    def read(self, opened: OpenedInput, spec: InputSpec) -> Iterator[Scene | BadRecord]:
        """The scenes and bad records of ``opened``, in input order, read lazily.

        Raises (while iterating):
            InputError: the input as a whole cannot be read (over ``max_bytes``, not the shape
                this format reads: :class:`~memreader.errors.InvalidSceneError`).
            FetchError: the S3 object cannot be read.
        """


class JsonShapedFormat(Format):
    """A format whose input is one JSON document: read whole (up to ``max_bytes``), parsed,
    then taken apart by :meth:`scenes`. ``auto`` picks one for a ``.json`` file by
    :meth:`fits`."""

    def read(self, opened: OpenedInput, spec: InputSpec) -> Iterator[Scene | BadRecord]:
        """The scenes of the parsed document (see :meth:`scenes`)."""
        yield from self.scenes(opened.load_json(), opened, spec)

    @abstractmethod
    def scenes(
        self, data: Any, opened: OpenedInput, spec: InputSpec
    ) -> Iterator[Scene | BadRecord]:
        """The scenes and bad records of the parsed ``data``."""

    @classmethod
    def fits(cls, data: Any) -> bool:
        """Whether ``data`` has this format's shape (for ``auto``)."""
        return True


def check_chat_scene(scene: Any) -> None:
    """Refuse what ``get_memory`` would refuse, so one bad scene is a record of its own instead
    of failing the call that carries its batch. Unknown part types are let through: whether
    they are kept is the reader's setting."""
    if isinstance(scene, Mapping) or not isinstance(scene, str | list):
        raise InvalidSceneError(
            f"a scene must be a list of messages (or a string), got {type(scene).__name__}"
        )
    normalize_chat([scene], unknown_parts="keep")


def checked_scene(
    index: int, label: str, make: Callable[[], tuple[Any, dict[str, str]]]
) -> Scene | BadRecord:
    """The chat scene ``make`` builds (with its info) and checks, or the bad record of why it
    could not."""
    try:
        scene, info = make()
        check_chat_scene(scene)
    except InputError as exc:
        return BadRecord.of(index, label, exc)
    return Scene(index, label, scene, info)


def input_ids(
    spec: InputSpec,
    opened: OpenedInput,
    record: Mapping[str, Any] | None,
    defaults: tuple[str, str] | None = None,
) -> dict[str, str]:
    """``user_id`` and ``session_id`` by the spec's :class:`~memreader.batch.job.IdSpec`:
    ``from: file_name`` (the input's name without extension), ``from: constant``, or ``from:
    field`` (a key of ``record``). ``defaults`` stand for an id the spec does not set (a
    format's own, as MemoryBank's and LoCoMo's); without them it is the file name.

    Raises:
        InvalidInfoError: ``from: field`` and ``record`` has no usable value there.
    """
    info = {}
    for i, which in enumerate(("user_id", "session_id")):
        id_spec: IdSpec | None = getattr(spec, which)
        if id_spec is None and defaults is not None:
            info[which] = defaults[i]
        elif id_spec is None or id_spec.source == "file_name":
            # A name that is not valid UTF-8 (lone surrogates from ``os``) is written with
            # escapes: the id must be writable like every text of an item.
            info[which] = printable(PurePosixPath(opened.location.replace("\\", "/")).stem)
        elif id_spec.source == "constant":
            info[which] = id_spec.value or ""
        else:
            info[which] = _field_id(id_spec, which, record)
    return info


def _field_id(spec: IdSpec, which: str, record: Mapping[str, Any] | None) -> str:
    field = spec.field or ""
    value = record.get(field) if record is not None else None
    if value is None:
        raise InvalidInfoError(f"{which}: the record has no {field!r} field")
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise InvalidInfoError(f"{which}: field {field!r} must be a non-empty string or integer")
    return str(value)
