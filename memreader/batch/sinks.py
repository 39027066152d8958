"""Where batch jobs write: one output per input (JSONL or Parquet, optionally in shards), plus
small text files (manifest, summary, errors) next to them, in a local folder or under
``s3://bucket/prefix``.

Every output is written to a temporary file first and becomes visible only on
:meth:`InputWriter.commit`, so a job killed at any moment (SIGKILL included) never leaves a
half-written final file: a resumed job either finds an input's output whole or not at all.
Locally the temporary files live in the output folder itself (``.<name>.<random>.tmp``), so the
final rename is atomic; for S3 they live in the system's temporary folder and are uploaded on
commit (an object only exists once its upload finished).

>>> output_stem("chats/2024/a.jsonl")
'chats_2024_a.jsonl-e6ef668ac7'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import tempfile
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from memreader.batch.job import OutputSpec
from memreader.documents.s3_client import LazyS3Client, s3_code, s3_problem
from memreader.documents.sources_config import S3Config
from memreader.errors import ConfigError, MemReaderError

__all__ = ["InputWriter", "Sink", "SinkError", "output_stem"]

logger = logging.getLogger(__name__)

_STEM_MAX = 100
_HASH_CHARS = 10
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_S3_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
_TEXT_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")
# Our temporary files: ``.<final name>.<12 hex>.tmp`` (see _temp_name); nothing else is cleaned.
_TEMP_FILE = re.compile(r"^\.[A-Za-z0-9._-]+\.[0-9a-f]{12}\.tmp$")
_STALE_TEMP_S = 24 * 3600.0
# Parquet row groups are flushed at whichever of these comes first, so memory stays bounded.
_ROW_GROUP_ITEMS = 10_000
_ROW_GROUP_BYTES = 16 * 1024 * 1024


class SinkError(MemReaderError):
    """An output could not be written or read: the folder cannot be created or written, S3
    refused or could not be reached, or the bucket does not exist. The message names the
    location (a path or ``s3://bucket/key``), never credentials or the endpoint."""


def output_stem(key: str) -> str:
    """A file stem for the outputs of the input ``key``: safe in every file system and S3 key
    (``[A-Za-z0-9._-]``, no leading dot, at most 100 characters), readable (the key's tail,
    with unsafe runs as ``_``), and unique: it ends with ``-`` and 10 hex digits of the key's
    SHA-256, so two keys that read alike (``a/b`` and ``a_b``) still get different stems.

    >>> output_stem("s3://bucket/x/y.json")
    'bucket_x_y.json-e9902845ee'
    >>> output_stem("../../etc/passwd")
    'etc_passwd-3754d6cb3a'
    """
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    text = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", key)
    # Accented letters keep their base letter (é -> e); other scripts become "_".
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = _UNSAFE.sub("_", text)
    # Keep the tail (the file name is the most telling part), then no leading dot, dash or "_".
    text = text[-(_STEM_MAX - _HASH_CHARS - 1) :].lstrip("._-").rstrip("_-") or "input"
    return f"{text}-{digest}"


@dataclass
class _Shard:
    """One output file being written: its final name, its temporary file, its size so far."""

    name: str
    temp: str
    handle: IO[bytes] | None = None
    writer: Any = None  # a pyarrow ParquetWriter
    bytes: int = 0
    items: int = 0


class InputWriter:
    """The output of one input, written as items come and made visible by :meth:`commit`.

    Not thread-safe (one writer per input, one thread per writer); several writers of one
    :class:`Sink` may be used at once. Use it as a context manager to discard it when not
    committed.
    """

    def __init__(self, sink: Sink, stem: str) -> None:
        self._sink = sink
        self._stem = stem
        self._ext = "parquet" if sink.format == "parquet" else "jsonl"
        self._shard_bytes = sink.shard_bytes
        self._shards: list[_Shard] = []
        self._rows: list[dict[str, Any]] = []  # parquet rows not yet in a row group
        self._row_bytes = 0
        self._closed = False
        self.items = 0
        """Items written so far."""

    def __enter__(self) -> InputWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()

    def write(self, item: dict[str, Any]) -> None:
        """Write one item (the shape of ``TextualMemoryItem.to_dict()``), streamed to a
        temporary file; a new shard starts when this item would take the current one past
        ``shard_bytes`` (an item is never split, so a single larger item makes a larger shard).

        Raises:
            SinkError: the temporary file cannot be written, or the item is not JSON
                (``NaN`` included).
            ValueError: the writer was committed or discarded.
        """
        if self._closed:
            raise ValueError("this input's writer was already committed or discarded")
        try:
            line = (
                json.dumps(item, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
            ).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SinkError(
                f"cannot write item {self.items} of {self._location()}: not JSON ({exc})"
            ) from None
        row = None
        if self._ext == "parquet":
            try:
                row = _parquet_row(item)
            except (TypeError, ValueError) as exc:
                raise SinkError(
                    f"cannot write item {self.items} of {self._location()}: "
                    f"its embedding is not a list of numbers ({type(exc).__name__})"
                ) from None
        shard = self._shard_for(len(line))
        try:
            if row is None:  # jsonl
                assert shard.handle is not None
                shard.handle.write(line)
            else:
                self._rows.append(row)
                self._row_bytes += len(line)
                if len(self._rows) >= _ROW_GROUP_ITEMS or self._row_bytes >= _ROW_GROUP_BYTES:
                    self._flush_rows(shard)
        except OSError as exc:
            raise SinkError(f"cannot write {self._location()}: {_os_problem(exc)}") from None
        shard.bytes += len(line)
        shard.items += 1
        self.items += 1

    def commit(self) -> list[str]:
        """Make this input's output visible: each temporary file takes its final name (an atomic
        rename; on S3 an upload, after which the object exists), then files of this input left
        from an earlier, longer run (``<stem>-00003.jsonl``) are removed, so a rerun never
        leaves extra items. An input without items still gets one (empty) file, so its output
        says it was read.

        With several shards the files appear one after another, not all at once: a crash in
        the middle can leave some new shards beside old ones; the job's manifest (written after
        commit) is what says an input is done. A commit that fails after a shard appeared removes
        every file of this input (best effort), so a failed input leaves no half of itself.

        Returns:
            The final locations (paths or ``s3://`` URLs), in order.

        Raises:
            SinkError: a file could not be finished, renamed or uploaded, or stale files could
                not be removed; the temporary files are dropped (run the input again).
            ValueError: the writer was committed or discarded.
        """
        if self._closed:
            raise ValueError("this input's writer was already committed or discarded")
        locations: list[str] = []
        try:
            if not self._shards:
                self._new_shard()
            self._finish(self._shards[-1])
            names = [shard.name for shard in self._shards]
            for shard in self._shards:
                locations.append(self._sink._publish(shard.temp, shard.name, self._content_type))
            self._sink._remove_stale(self._stem, keep=set(names))
        except BaseException:
            self.discard()
            if locations:
                self._unpublish()
            raise
        self._closed = True
        return locations

    def discard(self) -> None:
        """Drop the temporary files (and nothing else: committed files stay as they are)."""
        if self._closed:
            return
        self._closed = True
        for shard in self._shards:
            _quietly(shard.handle.close if shard.handle is not None else None)
            _quietly(shard.writer.close if shard.writer is not None else None)
            shard.handle = shard.writer = None
            _remove_quietly(shard.temp)
        self._rows = []

    def _unpublish(self) -> None:
        """Remove every file of this input after a failed commit (logged when that fails too:
        the job's manifest still says the input failed, and a rerun replaces its files)."""
        try:
            self._sink._remove_stale(self._stem, keep=set())
        except SinkError as exc:
            logger.warning("a failed commit left files of %s: %s", self._location(), exc)

    @property
    def _content_type(self) -> str:
        if self._ext == "jsonl":
            return "application/x-ndjson; charset=utf-8"
        return "application/vnd.apache.parquet"

    def _location(self) -> str:
        return self._sink.location(self._name(len(self._shards) - 1 if self._shards else 0))

    def _name(self, index: int) -> str:
        if self._shard_bytes is None:
            return f"{self._stem}.{self._ext}"
        return f"{self._stem}-{index:05d}.{self._ext}"

    def _shard_for(self, size: int) -> _Shard:
        """The shard the next item of ``size`` bytes goes to (a new one when it would not fit)."""
        if not self._shards:
            return self._new_shard()
        shard = self._shards[-1]
        limit = self._shard_bytes
        if limit is not None and shard.items and shard.bytes + size > limit:
            self._finish(shard)
            return self._new_shard()
        return shard

    def _new_shard(self) -> _Shard:
        name = self._name(len(self._shards))
        temp = self._sink._temp_file(name)
        shard = _Shard(name=name, temp=temp)
        self._shards.append(shard)
        try:
            if self._ext == "jsonl":
                shard.handle = open(temp, "wb")  # noqa: SIM115 - closed by _finish or discard
            else:
                pq = _parquet()
                shard.writer = pq.ParquetWriter(temp, _parquet_schema())
        except OSError as exc:
            raise SinkError(
                f"cannot write {self._sink.location(name)}: {_os_problem(exc)}"
            ) from None
        return shard

    def _flush_rows(self, shard: _Shard) -> None:
        """Write the buffered Parquet rows as one row group."""
        if self._rows:
            import pyarrow as pa

            shard.writer.write_table(pa.Table.from_pylist(self._rows, schema=_parquet_schema()))
        self._rows = []
        self._row_bytes = 0

    def _finish(self, shard: _Shard) -> None:
        """Close ``shard``'s temporary file, its content on disk (fsync: a power loss after
        the rename must not leave an empty final file)."""
        try:
            if shard.handle is not None:
                shard.handle.flush()
                os.fsync(shard.handle.fileno())
                shard.handle.close()
                shard.handle = None
            if shard.writer is not None:
                self._flush_rows(shard)
                shard.writer.close()
                shard.writer = None
                with open(shard.temp, "rb") as handle:
                    os.fsync(handle.fileno())
        except OSError as exc:
            raise SinkError(
                f"cannot write {self._sink.location(shard.name)}: {_os_problem(exc)}"
            ) from None


class Sink:
    """The output of a batch job: a local folder or ``s3://bucket/prefix`` (``spec.path``, a
    relative path taken from ``base_dir``), in ``spec.format``, sharded by ``spec.shard_bytes``.

    Args:
        spec: where and how to write.
        s3: the S3 endpoint, region and profile for ``s3://`` outputs (credentials come from
            the usual AWS chain).
        base_dir: the folder a relative ``spec.path`` is relative to (the job file's).
        s3_client: a boto3 S3 client to use instead of one built from ``s3``; never closed here.

    A local folder is created if missing, and temporary files of ours in it older than a day
    (left by a killed run: ``.<name>.<12 hex>.tmp``) are removed; younger ones may belong to a
    run still going and are left alone.

    Raises:
        ConfigError: ``parquet`` without pyarrow, or a malformed ``s3://`` URL or other URL.
        SinkError: the local folder cannot be created.
    """

    def __init__(
        self,
        spec: OutputSpec,
        *,
        s3: S3Config,
        base_dir: str | None = None,
        s3_client: Any = None,
    ) -> None:
        self.format = spec.format
        self.shard_bytes = spec.shard_bytes
        if spec.format == "parquet":
            try:
                _parquet()
            except ImportError:
                raise ConfigError(
                    "parquet output needs pyarrow: pip install memreader[parquet]"
                ) from None
        self._clients = LazyS3Client(s3, client=s3_client)
        self._bucket: str | None = None
        self._prefix = ""
        self._folder = ""
        path = spec.path
        if path.lower().startswith("s3://"):
            self._bucket, self._prefix = _split_s3(path)
            return
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
            raise ConfigError("output.path must be a local folder or an s3://bucket/prefix URL")
        path = os.path.expanduser(path)
        if not os.path.isabs(path) and base_dir:
            path = os.path.join(base_dir, path)
        self._folder = os.path.abspath(path)
        try:
            os.makedirs(self._folder, exist_ok=True)
        except OSError as exc:
            raise SinkError(f"cannot create {self._folder}: {_os_problem(exc)}") from None
        self._clean_temp_files()

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def is_s3(self) -> bool:
        """Whether the outputs go to S3."""
        return self._bucket is not None

    def open_input(self, key: str) -> InputWriter:
        """A writer for the output of the input ``key`` (named by :func:`output_stem`)."""
        return InputWriter(self, output_stem(key))

    def location(self, name: str) -> str:
        """Where the file ``name`` of this output is (a path or ``s3://bucket/key``)."""
        if self._bucket is not None:
            return f"s3://{self._bucket}/{self._key(name)}"
        return os.path.join(self._folder, name)

    def write_text(self, name: str, text: str) -> str:
        """Write the small file ``name`` next to the outputs (a manifest, summary, errors),
        replacing it all at once (a temporary file renamed over it; one PutObject on S3).

        Raises:
            ValueError: ``name`` is not a plain file name (``[A-Za-z0-9._-]``, no leading dot).
            SinkError: it cannot be written.
        """
        _check_name(name)
        data = text.encode("utf-8")
        if self._bucket is not None:
            client = self._s3(name)
            try:
                client.put_object(
                    Bucket=self._bucket,
                    Key=self._key(name),
                    Body=data,
                    ContentType=_text_type(name),
                )
            except Exception as exc:  # an injected client may raise anything: word it by type
                raise SinkError(
                    f"cannot write {self.location(name)}: {s3_problem(exc, self._bucket)}"
                ) from None
            return self.location(name)
        temp = self._temp_file(name)
        try:
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            _remove_quietly(temp)
            raise SinkError(f"cannot write {self.location(name)}: {_os_problem(exc)}") from None
        return self._publish(temp, name, _text_type(name))

    def read_text(self, name: str) -> str | None:
        """The text of the file ``name`` next to the outputs; ``None`` when it does not exist.

        Raises:
            ValueError: ``name`` is not a plain file name.
            SinkError: it exists but cannot be read (or S3 refused).
        """
        _check_name(name)
        if self._bucket is not None:
            client = self._s3(name)
            try:
                answer = client.get_object(Bucket=self._bucket, Key=self._key(name))
                data: bytes = answer["Body"].read()
            except Exception as exc:
                if s3_code(exc) in ("NoSuchKey", "404", "NotFound"):
                    return None
                raise SinkError(
                    f"cannot read {self.location(name)}: {s3_problem(exc, self._bucket)}"
                ) from None
        else:
            try:
                with open(self.location(name), "rb") as handle:
                    data = handle.read()
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise SinkError(f"cannot read {self.location(name)}: {_os_problem(exc)}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SinkError(f"cannot read {self.location(name)}: not UTF-8 text") from None

    def close(self) -> None:
        """Close the S3 client built here, if any (an injected one is left open)."""
        self._clients.close()

    # -- internals shared with InputWriter ---------------------------------------------------

    def _key(self, name: str) -> str:
        return f"{self._prefix}/{name}" if self._prefix else name  # _key("") is the folder

    def _temp_file(self, name: str) -> str:
        """A new, empty temporary file for the future ``name``: in the output folder (so the
        rename is atomic), or in the system's temporary folder for S3."""
        folder = self._folder if self._bucket is None else tempfile.gettempdir()
        for _ in range(100):
            temp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
            try:
                # 0o666 less the umask, like any new file (mkstemp would make it 0o600).
                os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:  # pragma: no cover - 48 random bits
                continue
            except OSError as exc:
                raise SinkError(f"cannot write {self.location(name)}: {_os_problem(exc)}") from None
            return temp
        raise SinkError(
            f"cannot write {self.location(name)}: no free temporary name"
        )  # pragma: no cover

    def _publish(self, temp: str, name: str, content_type: str) -> str:
        """Make the finished ``temp`` the file ``name``: a rename locally, an upload on S3
        (then ``temp`` is removed). Returns its location."""
        location = self.location(name)
        if self._bucket is None:
            try:
                os.replace(temp, location)
            except OSError as exc:
                raise SinkError(f"cannot write {location}: {_os_problem(exc)}") from None
            _fsync_folder(self._folder)
            return location
        client = self._s3(name)
        try:
            client.upload_file(
                temp, self._bucket, self._key(name), ExtraArgs={"ContentType": content_type}
            )
        except Exception as exc:
            raise SinkError(f"cannot write {location}: {s3_problem(exc, self._bucket)}") from None
        _remove_quietly(temp)
        return location

    def _remove_stale(self, stem: str, keep: set[str]) -> None:
        """Remove the files of the input ``stem`` (``<stem>.<ext>``, ``<stem>-NNNNN.<ext>``, in
        either output format) that are not in ``keep``: left from an earlier run with more
        shards, unsharded, or in the other format."""
        pattern = re.compile(rf"^{re.escape(stem)}(?:-\d{{5,}})?\.(?:jsonl|parquet)$")
        if self._bucket is None:
            try:
                names = os.listdir(self._folder)
            except OSError as exc:
                raise SinkError(f"cannot list {self._folder}: {_os_problem(exc)}") from None
            for name in names:
                if pattern.match(name) and name not in keep:
                    try:
                        os.unlink(os.path.join(self._folder, name))
                    except FileNotFoundError:
                        pass
                    except OSError as exc:
                        raise SinkError(
                            f"cannot remove the stale {self.location(name)}: {_os_problem(exc)}"
                        ) from None
            return
        client = self._s3(stem)
        folder = self._key("")  # "prefix/" or ""
        try:
            paginator = client.get_paginator("list_objects_v2")
            keys = [
                obj["Key"]
                for page in paginator.paginate(Bucket=self._bucket, Prefix=self._key(stem))
                for obj in page.get("Contents", [])
            ]
            stale = [
                key
                for key in keys
                if pattern.match(key[len(folder) :]) and key[len(folder) :] not in keep
            ]
            for key in stale:
                client.delete_object(Bucket=self._bucket, Key=key)
        except Exception as exc:
            raise SinkError(
                f"cannot remove stale outputs under {self.location(stem)}: "
                f"{s3_problem(exc, self._bucket)}"
            ) from None

    def _s3(self, name: str) -> Any:
        """The S3 client (built once); its setup failures worded as :class:`SinkError`."""
        return self._clients.get_or_raise(SinkError, f"cannot write {self.location(name)}")

    def _clean_temp_files(self) -> None:
        """Remove our temporary files older than a day from the output folder (a killed run's
        leftovers); younger ones may be another worker's, still being written."""
        cutoff = time.time() - _STALE_TEMP_S
        try:
            entries = list(os.scandir(self._folder))
        except OSError:
            return
        for entry in entries:
            if not _TEMP_FILE.match(entry.name):
                continue
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
            except OSError:
                logger.debug("could not remove the stale temporary file %s", entry.path)


# -- Parquet ------------------------------------------------------------------------------------


def _parquet() -> Any:
    """``pyarrow.parquet``, imported only when Parquet is written (pyarrow is optional)."""
    import pyarrow.parquet as pq

    return pq


def _parquet_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("memory", pa.string()),
            ("user_id", pa.string()),
            ("session_id", pa.string()),
            ("memory_type", pa.string()),
            ("metadata", pa.string()),
            ("embedding", pa.list_(pa.float32())),
        ]
    )


def _parquet_row(item: dict[str, Any]) -> dict[str, Any]:
    """One Parquet row of ``item``: the often-filtered fields as columns, the whole metadata
    (without the embedding, which has its own float32 column) as JSON."""
    metadata = item.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    embedding = metadata.pop("embedding", None)
    return {
        "id": _str_or_none(item.get("id")),
        "memory": _str_or_none(item.get("memory")),
        "user_id": _str_or_none(metadata.get("user_id")),
        "session_id": _str_or_none(metadata.get("session_id")),
        "memory_type": _str_or_none(metadata.get("memory_type")),
        "metadata": json.dumps(metadata, ensure_ascii=False, allow_nan=False),
        "embedding": None if embedding is None else [float(x) for x in embedding],
    }


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


# -- helpers ------------------------------------------------------------------------------------


def _split_s3(url: str) -> tuple[str, str]:
    """``(bucket, prefix)`` of ``s3://bucket/prefix`` (the prefix without outer slashes)."""
    bucket, _, prefix = url[len("s3://") :].partition("/")
    if not bucket:
        raise ConfigError("output.path: an s3:// output needs a bucket: s3://bucket/prefix")
    if not _S3_BUCKET.match(bucket):
        raise ConfigError("output.path: the s3:// output's bucket is not a valid bucket name")
    prefix = prefix.strip("/")
    bad_segment = any(part in (".", "..", "") for part in prefix.split("/"))
    if (prefix and bad_segment) or "\\" in prefix:
        raise ConfigError(
            "output.path: the s3:// output's prefix must not hold '.', '..', empty or '\\' segments"
        )
    return bucket, prefix


def _check_name(name: str) -> None:
    if not _TEXT_NAME.match(name) or name in (".", ".."):
        raise ValueError(f"{name!r} is not a plain file name ([A-Za-z0-9._-], no leading dot)")


def _text_type(name: str) -> str:
    if name.endswith(".json"):
        return "application/json; charset=utf-8"
    if name.endswith(".jsonl"):
        return "application/x-ndjson; charset=utf-8"
    return "text/plain; charset=utf-8"


def _os_problem(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _fsync_folder(folder: str) -> None:
    """Persist a rename in ``folder`` (POSIX; a no-op where folders cannot be opened)."""
    if os.name != "posix":  # pragma: no cover
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _quietly(close: Callable[[], object] | None) -> None:
    if close is not None:
        with contextlib.suppress(Exception):
            close()


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        logger.warning("could not remove the temporary file %s", path)
