"""memreader.batch.sinks: where batch jobs write. Outputs appear only on commit (a crash leaves
no half-written final file), shards stay under their size, reruns leave no stale shards, stems
are safe and unique, and Parquet and S3 outputs hold exactly what was written."""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memreader.batch.job import OutputSpec
from memreader.batch.sinks import Sink, SinkError, build_sink, output_stem
from memreader.errors import ConfigError
from memreader.fetch.settings import S3Config
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from tests.s3_server import moto_s3

__all__ = ["moto_s3"]  # the fixture, imported for its side of pytest

NO_S3 = S3Config()


def _items(count: int, *, seed: int = 0, embed: bool = True) -> list[dict[str, Any]]:
    """Items in the shape of TextualMemoryItem.to_dict(): varied lengths, unicode, sources, and
    embeddings whose floats have all their digits."""
    rng = random.Random(seed)
    items = []
    for i in range(count):
        text = f"memory {i} ünïcödé 记忆 " + "x" * rng.randint(0, 300)
        metadata = TextualMemoryItemMetadata(
            user_id=f"u{i % 3}",
            session_id=f"s{i % 5}",
            sources=[
                SourceMessage(
                    role="user", scene_index=0, message_index=i, span=(0, 4), content=text[:4]
                )
            ],
            embedding=[rng.uniform(-1, 1) for _ in range(8)] if embed and i % 4 else None,
            tags=["a", "b"],
            created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        )
        items.append(TextualMemoryItem(id=f"id-{i}", memory=text, metadata=metadata).to_dict())
    return items


def _sink(folder: Path, **spec: Any) -> Sink:
    return build_sink(OutputSpec(path=str(folder), **spec), s3=NO_S3)


def _read_jsonl(paths: list[str]) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            out.extend(json.loads(line) for line in handle)
    return out


def _visible(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if not name.startswith("."))


# -- JSONL ------------------------------------------------------------------------------------


def test_jsonl_round_trip(tmp_path: Path) -> None:
    items = _items(25)
    sink = _sink(tmp_path / "out" / "nested")  # created if missing
    writer = sink.open_input("chats/2024/a.jsonl")
    for item in items:
        writer.write(item)
    assert writer.items == 25
    assert _visible(tmp_path / "out" / "nested") == []  # nothing visible before commit
    locations = writer.commit()
    stem = output_stem("chats/2024/a.jsonl")
    assert locations == [str(tmp_path / "out" / "nested" / f"{stem}.jsonl")]
    back = _read_jsonl(locations)
    assert back == items  # floats exact: json writes repr, which round-trips
    assert [b["metadata"]["embedding"] for b in back] == [i["metadata"]["embedding"] for i in items]
    assert os.listdir(tmp_path / "out" / "nested") == [f"{stem}.jsonl"]  # no temp files left


def test_empty_input_still_gets_a_file(tmp_path: Path) -> None:
    locations = _sink(tmp_path).open_input("k").commit()
    assert len(locations) == 1 and Path(locations[0]).read_bytes() == b""


def test_relative_path_uses_base_dir(tmp_path: Path) -> None:
    sink = build_sink(OutputSpec(path="rel/out"), s3=NO_S3, base_dir=str(tmp_path))
    assert sink.folder.location("x.json") == str(tmp_path / "rel" / "out" / "x.json")
    assert (tmp_path / "rel" / "out").is_dir()


def test_sharding_by_bytes(tmp_path: Path) -> None:
    items = _items(40, seed=1)
    items[7]["memory"] = "big " * 400  # one item larger than a shard: a shard of its own
    sink = _sink(tmp_path, shard_bytes=1500)
    writer = sink.open_input("input.json")
    for item in items:
        writer.write(item)
    locations = writer.commit()
    stem = output_stem("input.json")
    assert [os.path.basename(p) for p in locations] == [
        f"{stem}-{i:05d}.jsonl" for i in range(len(locations))
    ]
    assert len(locations) > 5
    for path in locations:
        size = os.path.getsize(path)
        lines = Path(path).read_bytes().count(b"\n")
        assert size <= 1500 or lines == 1, (path, size, lines)
    assert _read_jsonl(locations) == items  # all present, in order


def test_recommit_replaces_and_removes_stale_shards(tmp_path: Path) -> None:
    first = _items(30, seed=2)
    sink = _sink(tmp_path, shard_bytes=1000)
    other = sink.open_input("other")  # another input's files are never touched
    other.write(first[0])
    other_files = other.commit()
    writer = sink.open_input("k")
    for item in first:
        writer.write(item)
    old = writer.commit()
    assert len(old) > 3
    second = _items(3, seed=3)
    writer = sink.open_input("k")
    for item in second:
        writer.write(item)
    new = writer.commit()
    assert new == old[: len(new)]  # same names, replaced
    assert _read_jsonl(new) == second
    assert _visible(tmp_path) == sorted(os.path.basename(p) for p in new + other_files)
    # Unsharded rerun of a sharded input: the shards go too.
    plain = _sink(tmp_path)
    writer = plain.open_input("k")
    writer.write(second[0])
    assert [os.path.basename(p) for p in writer.commit()] == [f"{output_stem('k')}.jsonl"]
    assert _visible(tmp_path) == sorted(
        [f"{output_stem('k')}.jsonl"] + [os.path.basename(p) for p in other_files]
    )
    assert _read_jsonl(other_files) == [first[0]]


def test_a_commit_that_fails_midway_leaves_no_file_of_its_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = _sink(tmp_path, shard_bytes=1000)
    other = sink.open_input("other")  # another input's files are never touched
    other.write(_items(1, seed=9)[0])
    other_files = other.commit()
    writer = sink.open_input("k")
    for item in _items(30, seed=8):
        writer.write(item)
    real_replace = os.replace
    calls = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == 2:  # the second shard cannot be published
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(SinkError, match="No space left on device"):
        writer.commit()
    monkeypatch.undo()
    assert len(calls) == 2, "the first shard was published before the failure"
    # Neither the shard published before the failure nor any temporary file stays.
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(p) for p in other_files]


def test_a_commit_removes_the_files_of_the_other_format(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    items = _items(3, seed=10)
    writer = _sink(tmp_path).open_input("k")
    for item in items:
        writer.write(item)
    writer.commit()
    writer = _sink(tmp_path, format="parquet").open_input("k")
    for item in items:
        writer.write(item)
    (location,) = writer.commit()
    assert _visible(tmp_path) == [os.path.basename(location)], "the jsonl items are gone"


def test_discard_leaves_nothing(tmp_path: Path) -> None:
    for spec in ({}, {"shard_bytes": 500}, {"format": "parquet", "shard_bytes": 500}):
        folder = tmp_path / str(len(os.listdir(tmp_path)))
        sink = _sink(folder, **spec)
        writer = sink.open_input("k")
        for item in _items(10):
            writer.write(item)
        writer.discard()
        writer.discard()  # idempotent
        assert os.listdir(folder) == [], spec
        with pytest.raises(ValueError):
            writer.write(_items(1)[0])


def test_context_manager_discards_uncommitted(tmp_path: Path) -> None:
    with _sink(tmp_path) as sink, sink.open_input("k") as writer:
        writer.write(_items(1)[0])
    assert os.listdir(tmp_path) == []
    with _sink(tmp_path) as sink, sink.open_input("k") as writer:
        writer.write(_items(1)[0])
        writer.commit()
    assert _visible(tmp_path) == [f"{output_stem('k')}.jsonl"]


def test_crash_before_commit_leaves_no_final_file(tmp_path: Path) -> None:
    sink = _sink(tmp_path, shard_bytes=800)
    writer = sink.open_input("k")
    for item in _items(20):
        writer.write(item)
    del writer, sink  # "crash": never committed nor discarded
    _sink(tmp_path, shard_bytes=800)  # a new run starts
    assert _visible(tmp_path) == []  # only temp files (dot files) may be there


@pytest.mark.timeout(60)
def test_sigkill_before_commit_leaves_no_final_file(tmp_path: Path) -> None:
    script = f"""
import os, signal
from memreader.batch.job import OutputSpec
from memreader.batch.sinks import build_sink
from memreader.fetch.settings import S3Config
sink = build_sink(OutputSpec(path={str(tmp_path)!r}), s3=S3Config())
done = sink.open_input("done")
done.write({{"id": "a", "memory": "m", "metadata": {{}}}})
done.commit()
w = sink.open_input("killed")
for i in range(2000):
    w.write({{"id": str(i), "memory": "x" * 100, "metadata": {{}}}})
os.kill(os.getpid(), signal.SIGKILL)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=50)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _visible(tmp_path) == [f"{output_stem('done')}.jsonl"]
    assert any(name.startswith(f".{output_stem('killed')}.jsonl.") for name in os.listdir(tmp_path))


def test_old_temp_files_are_cleaned_young_ones_kept(tmp_path: Path) -> None:
    old = tmp_path / ".x-0123456789.jsonl.0123456789ab.tmp"
    young = tmp_path / ".y-0123456789.jsonl.0123456789ab.tmp"
    foreign = tmp_path / ".not-ours.tmp"
    for path in (old, young, foreign):
        path.write_text("partial")
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    os.utime(foreign, (two_days_ago, two_days_ago))
    _sink(tmp_path)
    assert not old.exists() and young.exists() and foreign.exists()


def test_write_after_commit_and_bad_items(tmp_path: Path) -> None:
    writer = _sink(tmp_path).open_input("k")
    with pytest.raises(SinkError, match="not JSON"):
        writer.write({"id": "x", "memory": "m", "metadata": {"embedding": [math.nan]}})
    writer.commit()
    with pytest.raises(ValueError):
        writer.write({"id": "x"})
    with pytest.raises(ValueError):
        writer.commit()


def test_unwritable_folder_is_a_sink_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SinkError, match=re.escape(str(blocker))):
        _sink(blocker / "out")


# -- small text files -------------------------------------------------------------------------


def test_write_text_read_text_atomic_replace(tmp_path: Path) -> None:
    sink = _sink(tmp_path)
    assert sink.folder.read_text("manifest.json") is None
    location = sink.folder.write_text("manifest.json", '{"v": 1} ünï')
    assert location == str(tmp_path / "manifest.json") == sink.folder.location("manifest.json")
    assert sink.folder.read_text("manifest.json") == '{"v": 1} ünï'
    sink.folder.write_text("manifest.json", "second")
    assert sink.folder.read_text("manifest.json") == "second"
    assert os.listdir(tmp_path) == ["manifest.json"]  # replaced through a temp file, none left
    for bad in ("../x", ".hidden", "a/b", "", "..", "a\0b"):
        with pytest.raises(ValueError):
            sink.folder.write_text(bad, "x")
        with pytest.raises(ValueError):
            sink.folder.read_text(bad)


# -- stems ------------------------------------------------------------------------------------

_SAFE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*-[0-9a-f]{10}$")


@pytest.mark.parametrize(
    ("key", "readable"),
    [
        ("chats/2024/a.jsonl", "chats_2024_a.jsonl"),
        ("s3://b/x/y.json", "b_x_y.json"),
        ("../../etc/passwd", "etc_passwd"),
        ("/abs/path/file.txt", "abs_path_file.txt"),
        ("café/naïve.json", "cafe_naive.json"),
        ("日本語", "input"),
        ("", "input"),
        (".hidden", "hidden"),
        ("a b\tc\nd", "a_b_c_d"),
        ("C:\\Users\\x.json", "C_Users_x.json"),
        ("x" * 500 + "/tail.json", "x" * 79 + "_tail.json"),
    ],
)
def test_output_stem_table(key: str, readable: str) -> None:
    import hashlib

    stem = output_stem(key)
    assert stem == f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"
    assert _SAFE.match(stem) and len(stem) <= 100


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.text(max_size=400))
def test_output_stem_property(a: str, b: str) -> None:
    for key in (a, b):
        stem = output_stem(key)
        assert _SAFE.match(stem), stem
        assert len(stem) <= 100 and not stem.startswith(".")
    assert (output_stem(a) == output_stem(b)) == (a == b)


def test_output_stem_similar_keys_differ() -> None:
    keys = ["a/b", "a_b", "a b", "a:b", "A/b", "a/b/", "s3://a/b", "a/b "]
    assert len({output_stem(k) for k in keys}) == len(keys)


# -- Parquet ----------------------------------------------------------------------------------


def _f32(values: list[float]) -> list[float]:
    return [struct.unpack("f", struct.pack("f", v))[0] for v in values]


def test_parquet_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import memreader.batch.sinks.parquet as parquet_sink

    monkeypatch.setattr(parquet_sink, "_ROW_GROUP_ITEMS", 7)  # several row groups
    items = _items(30, seed=4)
    writer = _sink(tmp_path, format="parquet").open_input("chats/a.jsonl")
    for item in items:
        writer.write(item)
    (location,) = writer.commit()
    assert location.endswith(f"{output_stem('chats/a.jsonl')}.parquet")
    table = pq.read_table(location)
    assert pq.ParquetFile(location).metadata.num_row_groups == 5
    schema = {field.name: str(field.type) for field in table.schema}
    assert schema == {
        "id": "string",
        "memory": "string",
        "user_id": "string",
        "session_id": "string",
        "memory_type": "string",
        "metadata": "string",
        "embedding": "list<element: float>",
    }
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == [i["id"] for i in items]
    assert [r["memory"] for r in rows] == [i["memory"] for i in items]
    assert [r["user_id"] for r in rows] == [i["metadata"]["user_id"] for i in items]
    assert [r["session_id"] for r in rows] == [i["metadata"]["session_id"] for i in items]
    assert {r["memory_type"] for r in rows} == {"LongTermMemory"}
    for row, item in zip(rows, items, strict=True):
        expected = {k: v for k, v in item["metadata"].items() if k != "embedding"}
        assert json.loads(row["metadata"]) == expected  # sources and all
        embedding = item["metadata"]["embedding"]
        assert row["embedding"] == (None if embedding is None else _f32(embedding))
    assert _visible(tmp_path) == [os.path.basename(location)]
    assert len(os.listdir(tmp_path)) == 1


def test_parquet_shards_and_stale_removal(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    items = _items(40, seed=5, embed=False)
    sink = _sink(tmp_path, format="parquet", shard_bytes=3000)
    writer = sink.open_input("k")
    for item in items:
        writer.write(item)
    locations = writer.commit()
    assert len(locations) > 3
    for path in locations:
        assert os.path.getsize(path) <= 3000 + 4096  # about shard_bytes (compressed, + footer)
    ids = [r for path in locations for r in pq.read_table(path).column("id").to_pylist()]
    assert ids == [i["id"] for i in items]
    writer = sink.open_input("k")
    writer.write(items[0])
    assert len(writer.commit()) == 1
    assert len(_visible(tmp_path)) == 1


def test_parquet_bad_embedding_is_a_sink_error(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    writer = _sink(tmp_path, format="parquet").open_input("k")
    with pytest.raises(SinkError, match="embedding"):
        writer.write({"id": "x", "memory": "m", "metadata": {"embedding": ["a"]}})
    writer.write(_items(1)[0])  # the writer is still usable
    assert len(writer.commit()) == 1


def test_parquet_without_pyarrow_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ConfigError, match=r"pip install 'memreader-ai\[parquet\]'"):
        _sink(tmp_path, format="parquet")
    _sink(tmp_path)  # jsonl needs no pyarrow


# -- S3 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["s3://", "s3:///prefix", "s3://b/../x", "s3://b/a//c", "s3://b/a\\c", "gs://b/x", "s3://-bad"],
)
def test_bad_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        build_sink(OutputSpec(path=url), s3=NO_S3)


def _s3(moto_s3: str) -> S3Config:
    return S3Config(endpoint_url=moto_s3, region_name="us-east-1", addressing_style="path")


@pytest.fixture(scope="module")
def s3_client(moto_s3: str) -> Any:
    boto3 = pytest.importorskip("boto3")
    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="out")
    return client


def _objects(client: Any, prefix: str) -> list[str]:
    answer = client.list_objects_v2(Bucket="out", Prefix=prefix)
    return sorted(obj["Key"] for obj in answer.get("Contents", []))


@pytest.mark.timeout(60)
def test_s3_jsonl_output(moto_s3: str, s3_client: Any) -> None:
    items = _items(30, seed=6)
    sink = build_sink(OutputSpec(path="s3://out/run1/", shard_bytes=2000), s3=_s3(moto_s3))
    try:
        writer = sink.open_input("s3://src/chats/a.jsonl")
        for item in items:
            writer.write(item)
        assert _objects(s3_client, "run1/") == []  # nothing before commit
        locations = writer.commit()
        stem = output_stem("s3://src/chats/a.jsonl")
        keys = [f"run1/{stem}-{i:05d}.jsonl" for i in range(len(locations))]
        assert len(locations) > 2
        assert locations == [f"s3://out/{key}" for key in keys]
        assert _objects(s3_client, "run1/") == keys
        lines = b"".join(s3_client.get_object(Bucket="out", Key=k)["Body"].read() for k in keys)
        assert [json.loads(line) for line in lines.splitlines()] == items
        # A shorter rerun replaces the shards and removes the stale ones.
        writer = sink.open_input("s3://src/chats/a.jsonl")
        writer.write(items[0])
        assert writer.commit() == locations[:1]
        assert _objects(s3_client, "run1/") == keys[:1]
        # Small files.
        assert sink.folder.read_text("manifest.json") is None
        assert sink.folder.write_text("manifest.json", "one ü") == "s3://out/run1/manifest.json"
        sink.folder.write_text("manifest.json", "two ü")
        assert sink.folder.read_text("manifest.json") == "two ü"
    finally:
        sink.close()


@pytest.mark.timeout(60)
def test_s3_bucket_root_and_injected_client(moto_s3: str, s3_client: Any) -> None:
    sink = build_sink(OutputSpec(path="s3://out"), s3=NO_S3, s3_client=s3_client)
    writer = sink.open_input("k")
    writer.write(_items(1)[0])
    assert writer.commit() == [f"s3://out/{output_stem('k')}.jsonl"]
    assert sink.folder.write_text("summary.txt", "ok") == "s3://out/summary.txt"
    sink.close()
    s3_client.list_buckets()  # an injected client stays open


@pytest.mark.timeout(60)
def test_s3_missing_bucket_is_a_sink_error(
    moto_s3: str, s3_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the S3 temp files go
    sink = build_sink(OutputSpec(path="s3://no-such-bucket/p"), s3=_s3(moto_s3))
    writer = sink.open_input("k")
    writer.write(_items(1)[0])
    with pytest.raises(SinkError) as caught:
        writer.commit()
    message = str(caught.value)
    assert f"s3://no-such-bucket/p/{output_stem('k')}.jsonl" in message
    assert "no such bucket" in message
    assert "testing" not in message and moto_s3 not in message
    assert os.listdir(tmp_path) == []  # the failed commit dropped its temp file
    with pytest.raises(SinkError, match="no such bucket"):
        sink.folder.write_text("manifest.json", "x")
    with pytest.raises(SinkError, match="no such bucket"):
        sink.folder.read_text("manifest.json")
    sink.close()
