"""Skill bundles: a reusable procedure, distilled elsewhere from a successful tool trajectory,
written as a ``SKILL.md`` bundle (the Agent Skills layout: one folder per skill holding
``SKILL.md``, YAML front matter with ``name`` and ``description``, then Markdown).

Everything in a :class:`Skill` comes from a model and is untrusted. So the folder name is a
slug that can only be ``[a-z0-9-]`` (:func:`skill_slug`): no input can name a path outside the
configured folder, a hidden file or a reserved Windows device. Skills are kept per owner
(``<output>/<owner folder>/<slug>/SKILL.md``, :func:`owner_folder`), so two users' skills never
share a path, whatever their names. Local writes check the resolved
target all the same, refuse to write through a symlink planted in the folder, and replace the
file atomically, so a reader never sees half a bundle. The text is rendered deterministically
(:func:`render_skill_md`): writing the same skill twice gives the same bytes.

>>> skill_slug("Deploy the service (with rollback)!")
'deploy-the-service-with-rollback'
>>> skill_slug("../../etc/passwd")
'etc-passwd'
>>> skill_slug("con")
'skill-con'
>>> owner_folder("alice")
'alice-2bd806c97f0e'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import Field, field_validator

from memreader.config_model import ConfigModel
from memreader.errors import SkillWriteError
from memreader.extraction.skill_files import SKILL_FILE, write_local
from memreader.fetch.settings import S3Config
from memreader.transport.s3 import LazyS3Client, is_s3_url, parse_s3_url, s3_problem

__all__ = [
    "Skill",
    "SkillWriteError",
    "SkillWriter",
    "SkillsConfig",
    "owner_folder",
    "render_skill_md",
    "skill_slug",
]


#: The Agent Skills limit on the front matter's ``description``.
MAX_DESCRIPTION_CHARS = 1024

#: The longest slug :class:`SkillsConfig` allows (and :func:`skill_slug` accepts).
MAX_SLUG_CHARS = 128

# Letters NFKD does not decompose into ASCII, spelled the usual way.
_TRANSLITERATE = str.maketrans(
    {
        "ß": "ss",
        "ẞ": "ss",
        "æ": "ae",
        "Æ": "ae",
        "œ": "oe",
        "Œ": "oe",
        "ø": "o",
        "Ø": "o",
        "đ": "d",
        "Đ": "d",
        "ð": "d",
        "Ð": "d",
        "ł": "l",
        "Ł": "l",
        "þ": "th",
        "Þ": "th",
        "ı": "i",
    }
)
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
# Device names Windows reserves in every folder, whatever the extension.
_RESERVED = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}
)
# A list marker the model may have put in front of an entry ("1. ", "- "): we number ourselves.
_LIST_MARKER = re.compile(r"^(?:\d{1,3}[.)]|[-*+•])\s+")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class Skill:
    """A reusable procedure distilled from a successful tool trajectory.

    Attributes:
        name: the name the model gave it (untrusted: the folder name is :func:`skill_slug` of it).
        description: what it does and when to use it.
        steps: the procedure, in order.
        inputs: the parameters it needs (names or descriptions).
        tools: the tools it uses.
        source: where it was distilled from, e.g. ``"scene 0, messages 3-5"``.
        owner: the ``user_id`` it belongs to; its bundle goes into the owner's own folder
            (:func:`owner_folder`). ``None``: straight into the output folder.
    """

    name: str
    description: str
    steps: list[str]
    inputs: list[str]
    tools: list[str] = field(default_factory=list)
    source: str = ""
    owner: str | None = None


def owner_folder(owner: str) -> str:
    """The folder of ``owner``'s skills: a readable slug of the id and 12 hex digits of its
    sha256, so different ids never share a folder ("Alice" and "alice" included).
    """
    digest = hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{skill_slug(owner, max_chars=48)}-{digest}"


def skill_slug(name: str, *, max_chars: int = 64) -> str:
    """The folder name of a skill called ``name``: safe on every file system and in S3 keys.

    Lowercase ``[a-z0-9-]`` only (accents dropped, other letters and symbols become ``-``), no
    leading or trailing ``-``, never empty (``skill-`` and 8 hex digits of the name's SHA-256),
    never a reserved Windows device name, at most ``max_chars`` characters: a longer one is cut
    and ends with ``-`` and 6 hex digits of the hash, so names that differ only after the cut
    still get distinct folders. The same name always gives the same slug.

    Raises:
        ValueError: ``max_chars`` is not within 1..128.
    """
    if not 1 <= max_chars <= MAX_SLUG_CHARS:
        raise ValueError(f"max_chars must be within 1..{MAX_SLUG_CHARS}")
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    decomposed = unicodedata.normalize("NFKD", name.translate(_TRANSLITERATE))
    # Combining marks are dropped ("é" -> "e"); anything else not ASCII separates words.
    ascii_text = "".join(
        c if c.isascii() else " " for c in decomposed if not unicodedata.combining(c)
    )
    slug = _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")
    if not slug:
        slug = f"skill-{digest[:8]}"
    elif slug in _RESERVED:
        slug = f"skill-{slug}"
    if len(slug) <= max_chars:
        return slug
    head = slug[: max_chars - 7].rstrip("-") if max_chars > 7 else ""
    # Hex digits alone are never reserved, never empty and fit any limit.
    return f"{head}-{digest[:6]}" if head else digest[:max_chars]


def render_skill_md(skill: Skill, *, max_name_chars: int = 64) -> str:
    """The ``SKILL.md`` text of ``skill``, always the same for the same skill.

    YAML front matter first: ``name`` is the slug (quoted where YAML would read it as a
    number, a date or a boolean) and ``description`` one line of at most 1024 characters,
    JSON-quoted so quotes, colons and ``#`` cannot break the YAML. Then the name as a heading,
    the description, ``## Inputs``, ``## Steps`` (numbered), ``## Tools`` (when there are any)
    and a provenance line. Every entry is put on one line (a newline in a step would end the
    list) and control characters are dropped.
    """
    slug = skill_slug(skill.name, max_chars=max_name_chars)
    title = _one_line(skill.name) or slug
    description = _one_line(skill.description) or title
    summary = description
    if len(summary) > MAX_DESCRIPTION_CHARS:
        summary = summary[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    lines = [
        "---",
        f"name: {_yaml_name(slug)}",
        f"description: {json.dumps(summary, ensure_ascii=False)}",
        "---",
        "",
        f"# {title}",
        "",
        description,
        "",
        "## Inputs",
        "",
    ]
    inputs = _entries(skill.inputs)
    lines.extend(f"- {entry}" for entry in inputs)
    if not inputs:
        lines.append("- (none)")
    lines += ["", "## Steps", ""]
    lines.extend(f"{number}. {step}" for number, step in enumerate(_entries(skill.steps), 1))
    tools = _entries(skill.tools)
    if tools:
        lines += ["", "## Tools", ""]
        lines.extend(f"- {tool}" for tool in tools)
    source = _one_line(skill.source)
    provenance = "Distilled from a successful tool trajectory"
    lines += ["", f"_{provenance} ({source})._" if source else f"_{provenance}._", ""]
    return "\n".join(lines)


def _yaml_name(slug: str) -> str:
    """``slug`` as a YAML value that reads back as the same string: plain, as Agent Skills
    bundles usually write it, unless YAML would read it as something else (``0``, ``null``,
    ``yes``, ``0x1f``, ``2024-01-01``), then quoted."""
    return slug if yaml.safe_load(slug) == slug else json.dumps(slug)


def _one_line(text: Any) -> str:
    """``text`` on one line: control characters, surrogates and the non-characters YAML refuses
    dropped, every run of white space (line and paragraph separators too) made one space."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    kept = "".join(
        " " if unicodedata.category(c) in ("Cc", "Cs") or c in "\ufffe\uffff" else c for c in text
    )
    return " ".join(kept.split())


def _entries(values: Any) -> list[str]:
    """The non-empty entries of a list from the model, each on one line and without a list
    marker of its own; a lone string is one entry."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    entries = []
    for value in values:
        entry = _LIST_MARKER.sub("", _one_line(value))
        if entry:
            entries.append(entry)
    return entries


class SkillsConfig(ConfigModel):
    """Where skill bundles are written.

    - ``output`` (``None``): a local folder (created if missing; ``~`` is expanded), or
      ``s3://bucket/prefix``; ``None`` (or empty) writes no bundles, the skills are kept as
      items only.
    - ``s3``: the S3 endpoint, region and profile (credentials come from the usual AWS chain).
    - ``max_name_chars`` (64, the Agent Skills limit): the longest folder name, 1..128.
    """

    output: str | None = None
    s3: S3Config = Field(default_factory=S3Config)
    max_name_chars: int = Field(default=64, ge=1, le=MAX_SLUG_CHARS)

    @field_validator("output")
    @classmethod
    def _check_output(cls, value: str | None) -> str | None:
        # ``${VAR:-}`` in YAML gives "" for an unset variable: no output, not a bad one.
        if value is None or not value.strip():
            return None
        value = value.strip()
        if "\0" in value:
            raise ValueError("output must not contain NUL characters")
        if is_s3_url(value):
            parse_s3_url(value, prefix=True)  # a ConfigError (a ValueError) names the problem
        elif _URL_SCHEME.match(value):
            raise ValueError("output must be a local folder or an s3://bucket/prefix URL")
        return value

    @property
    def s3_destination(self) -> tuple[str, str] | None:
        """``(bucket, prefix)`` when ``output`` is an S3 URL (the prefix without slashes at
        either end, maybe empty), else ``None``."""
        if self.output is None or not is_s3_url(self.output):
            return None
        url = parse_s3_url(self.output, prefix=True)
        return url.bucket, url.key


class SkillWriter:
    """Writes skill bundles where ``config.output`` says.

    Args:
        config: the destination and the slug length.
        s3_client: a boto3 S3 client to use instead of one built from ``config.s3``; it is
            never closed here.

    Thread-safe: each write goes through its own temporary file, and the S3 client is built
    once.
    """

    def __init__(self, config: SkillsConfig, *, s3_client: Any = None) -> None:
        self._config = config
        self._clients = LazyS3Client(config.s3, client=s3_client)

    def __enter__(self) -> SkillWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def write(self, skill: Skill) -> str | None:
        """Write ``skill``'s bundle; rewriting the same skill gives the same bytes.

        Returns:
            Where it went: the file's path (``<realpath of the folder>/<owner folder>/<slug>/
            SKILL.md``) or ``s3://bucket/prefix/<owner folder>/<slug>/SKILL.md``; ``None`` when
            ``output`` is ``None``.

        Raises:
            SkillWriteError: the folder or file cannot be written, a symlink stands where the
                bundle goes, or S3 refused or could not be reached.
        """
        output = self._config.output
        if output is None:
            return None
        slug = skill_slug(skill.name, max_chars=self._config.max_name_chars)
        folders = (slug,) if skill.owner is None else (owner_folder(skill.owner), slug)
        data = render_skill_md(skill, max_name_chars=self._config.max_name_chars).encode("utf-8")
        destination = self._config.s3_destination
        if destination is not None:
            return self._put(destination[0], destination[1], "/".join(folders), data)
        return write_local(os.path.expanduser(output), folders, data)

    def close(self) -> None:
        """Close the S3 client built here, if any (a later write builds a new one); an injected
        client is left open."""
        self._clients.close()

    def _put(self, bucket: str, prefix: str, folder: str, data: bytes) -> str:
        """One PutObject; failures worded by their code or type, never their message (which
        may quote a presigned URL or the request's credentials)."""
        key = f"{prefix}/{folder}/{SKILL_FILE}" if prefix else f"{folder}/{SKILL_FILE}"
        label = f"s3://{bucket}/{key}"
        client = self._s3(label)
        try:
            client.put_object(
                Bucket=bucket,
                Key=key,
                Body=data,
                ContentType="text/markdown; charset=utf-8",
            )
        except Exception as exc:  # an injected client may raise anything: word it by type
            raise SkillWriteError(f"cannot write {label}: {s3_problem(exc, bucket)}") from None
        return label

    def _s3(self, label: str) -> Any:
        """The S3 client: the injected one, or one built once from ``config.s3``."""
        return self._clients.get_or_raise(SkillWriteError, f"cannot write {label}")
