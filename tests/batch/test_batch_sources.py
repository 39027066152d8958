"""The inputs of batch jobs: discovery (files, folders, globs, S3 prefixes), hashing, and lazy
reading of every format into batches and bad records, in bounded memory for JSONL."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from memreader.batch.inputs import BadRecord, Batch, InputRef, Inputs
from memreader.batch.job import JobConfig
from memreader.batch.plan import inputs_spec
from memreader.errors import ConfigError, InputError
from memreader.scenes.memorybank import load_memorybank
from tests.common import MEMORYBANK
from tests.s3_server import moto_s3

__all__ = ["moto_s3"]  # the fixture, imported for its side of pytest


def _job(base: Path, *inputs: dict[str, Any], **changes: Any) -> JobConfig:
    data: dict[str, Any] = {
        "inputs": list(inputs),
        "output": {"path": "out"},
        "base_dir": str(base),
        **changes,
    }
    return JobConfig.model_validate(data)


def inputs_of(job: JobConfig, *, s3_client: Any = None) -> Inputs:
    """The inputs of ``job``, given what they need of it (as a run hands it to them)."""
    return Inputs(inputs_spec(job), s3_client=s3_client)


def _read_all(inputs: Inputs, ref: InputRef) -> tuple[list[Batch], list[BadRecord]]:
    batches: list[Batch] = []
    bad: list[BadRecord] = []
    for unit in inputs.read(ref):
        (batches if isinstance(unit, Batch) else bad).append(unit)  # type: ignore[arg-type]
    return batches, bad


def _only(base: Path, spec: dict[str, Any], **changes: Any) -> tuple[Inputs, InputRef]:
    inputs = inputs_of(_job(base, spec, **changes))
    (ref,) = inputs.discover()
    return inputs, ref


def _scene(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]


def _write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- discovery ---------------------------------------------------------------------------------


def test_discover_files_folders_globs(tmp_path: Path) -> None:
    (tmp_path / "chats" / "sub").mkdir(parents=True)
    for name in ("chats/b.jsonl", "chats/a.jsonl", "chats/sub/c.jsonl", "chats/.hidden.jsonl"):
        _write_jsonl(tmp_path / name, [_scene("x")])
    (tmp_path / "chats" / "notes.txt").write_text("n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    _write_jsonl(outside, [_scene("y")])
    try:
        job = _job(
            tmp_path,
            {"path": "chats/a.jsonl"},
            {"path": "chats"},
            {"path": "chats/**/*.jsonl"},  # all already found: deduplicated
            {"path": str(outside)},
        )
        refs = inputs_of(job).discover()
    finally:
        outside.unlink()
    assert [(r.key, r.spec_index) for r in refs] == [
        ("chats/a.jsonl", 0),
        ("chats/b.jsonl", 1),
        ("chats/notes.txt", 1),
        ("chats/sub/c.jsonl", 1),
        (str(outside), 3),
    ]
    assert all(os.path.isabs(r.location) for r in refs)
    assert refs[0].size == (tmp_path / "chats" / "a.jsonl").stat().st_size
    # A glob alone: sorted, recursive, files only.
    refs = inputs_of(_job(tmp_path, {"path": "chats/**/*.jsonl"})).discover()
    assert [r.key for r in refs] == ["chats/a.jsonl", "chats/b.jsonl", "chats/sub/c.jsonl"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("x/*.json", "inputs.1: no file matches 'x/*.json'"),
        ("missing.jsonl", "inputs.1: no such file or folder 'missing.jsonl'"),
        ("empty", "inputs.1: no file in folder 'empty'"),
    ],
)
def test_discover_nothing_is_an_error(tmp_path: Path, path: str, message: str) -> None:
    _write_jsonl(tmp_path / "a.jsonl", [_scene("x")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError) as info:
        inputs_of(_job(tmp_path, {"path": "a.jsonl"}, {"path": path})).discover()
    assert str(info.value) == message


def test_the_jobs_own_output_is_never_an_input(tmp_path: Path) -> None:
    for name in ("data/a.jsonl", "data/out/in_a.jsonl-0123456789.jsonl", "data/out/sub/k.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        _write_jsonl(tmp_path / name, [_scene("x")])
    (tmp_path / "data" / "out" / "_manifest.json").write_text("{}")
    output = {"output": {"path": "data/out"}}
    # The files directly in the output folder are the job's; a folder below it is not written
    # by the job, so it is read.
    expected = ["data/a.jsonl", "data/out/sub/k.jsonl"]
    for path in ("data", "data/**/*.jsonl", "data/**"):
        refs = inputs_of(_job(tmp_path, {"path": path}, **output)).discover()
        assert [r.key for r in refs] == expected, path
    # The same folder reached through a link, or named absolutely.
    (tmp_path / "link").symlink_to(tmp_path / "data" / "out")
    refs = inputs_of(_job(tmp_path, {"path": "data"}, output={"path": "link"})).discover()
    assert [r.key for r in refs] == expected
    refs = inputs_of(_job(tmp_path, {"path": "data"}, output={"path": str(tmp_path / "data/out")}))
    assert [r.key for r in refs.discover()] == expected
    with pytest.raises(InputError, match=r"^inputs\.0: 'data/out/\*\.jsonl' holds only the job's"):
        inputs_of(_job(tmp_path, {"path": "data/out/*.jsonl"}, **output)).discover()


def test_hidden_files_and_folders_are_counted(tmp_path: Path) -> None:
    for name in ("in/a.jsonl", "in/.b.jsonl", "in/sub/.DS_Store", "in/.git/x", "in/.git/y"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        _write_jsonl(tmp_path / name, [_scene("x")])
    inputs = inputs_of(_job(tmp_path, {"path": "in"}, {"path": "in/*"}))
    assert [r.key for r in inputs.discover()] == ["in/a.jsonl"]
    # .b.jsonl, .DS_Store and .git (once, not its files); the glob does not match hidden names
    # and walks in/sub again, whose .DS_Store is still one file passed over.
    assert inputs.hidden == 3
    assert inputs.discover() and inputs.hidden == 3, "counted per discovery, not summed"


def test_format_must_fit_the_job_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"inputs\.0\.format"):
        inputs_of(_job(tmp_path, {"path": "a.pdf", "format": "document"}))
    with pytest.raises(ConfigError, match=r"inputs\.0\.format"):
        inputs_of(_job(tmp_path, {"path": "a.json", "format": "json"}, type="doc"))
    (tmp_path / "a.pdf").write_bytes(b"%PDF")
    inputs, ref = _only(tmp_path, {"path": "a.pdf"})
    with pytest.raises(InputError, match=r"a\.pdf: not a chat input"):
        list(inputs.read(ref))


# --- JSONL -------------------------------------------------------------------------------------


def test_jsonl_bad_line_is_recorded_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    lines = [
        json.dumps(_scene("one")),
        "",  # blank: no scene, but counted as a line
        "{not json",
        json.dumps({"messages": _scene("two"), "extra": 1}),
        json.dumps([{"role": "robot", "content": "x"}]),
        json.dumps(42),
        json.dumps(_scene("three")),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    inputs, ref = _only(tmp_path, {"path": "chat.jsonl"})
    units = list(inputs.read(ref))
    assert [type(u).__name__ for u in units] == [
        "Batch",
        "BadRecord",
        "Batch",
        "BadRecord",
        "BadRecord",
        "Batch",
    ]
    first, bad_json, second, bad_role, bad_shape, third = units
    assert isinstance(first, Batch) and isinstance(second, Batch) and isinstance(third, Batch)
    assert first.scene_data == [_scene("one")] and first.labels == ["line 1"]
    assert first.info == {"user_id": "chat", "session_id": "chat"}
    assert bad_json == BadRecord(1, "line 3", "InvalidSceneError", bad_json.message)  # type: ignore[arg-type]
    assert bad_json.message.startswith("not JSON")  # type: ignore[union-attr]
    assert (second.first_scene, second.labels, second.scene_data) == (
        2,
        ["line 4"],
        [_scene("two")],
    )
    assert isinstance(bad_role, BadRecord)
    assert (bad_role.scene, bad_role.label, bad_role.reason) == (3, "line 5", "UnknownRoleError")
    assert bad_role.message.startswith("message 0: unknown role 'robot'")
    assert isinstance(bad_shape, BadRecord) and bad_shape.reason == "InvalidSceneError"
    assert (third.first_scene, third.labels) == (5, ["line 7"])


def test_jsonl_mapped_records(tmp_path: Path) -> None:
    records = [
        {
            "conv": "c1",
            "turns": [
                {"who": "Alice", "said": "I moved to Lyon.", "at": "2024-03-01 10:00"},
                {"who": "bot", "said": "Nice!"},
                {"who": "assistant", "said": "Anything else?"},
            ],
        }
    ]
    _write_jsonl(tmp_path / "m.jsonl", records)
    mapping = {
        "messages": "turns",
        "role": "who",
        "content": "said",
        "time": "at",
        "roles": {"bot": "assistant"},
        "default_role": "user",  # Alice: a speaker roles does not map, kept as the name
    }
    inputs, ref = _only(tmp_path, {"path": "m.jsonl", "mapping": mapping})
    (batch,), bad = _read_all(inputs, ref)
    assert bad == []
    assert batch.scene_data == [
        [
            {
                "role": "user",
                "name": "Alice",
                "content": "I moved to Lyon.",
                "chat_time": "2024-03-01 10:00",
            },
            {"role": "assistant", "name": "bot", "content": "Nice!"},
            {"role": "assistant", "content": "Anything else?"},
        ]
    ]
    # A message without the mapped content key is a bad record naming it.
    _write_jsonl(tmp_path / "m.jsonl", [{"turns": [{"who": "Alice"}]}])
    _, bad = _read_all(inputs, ref)
    assert [(b.reason, b.message) for b in bad] == [
        ("InvalidMessageError", "message 0: message has no 'said' key")
    ]


UNMAPPED = "speaker {!r} is not mapped: add it to mapping.roles or set mapping.default_role"


def _turns(*speakers: str) -> dict[str, Any]:
    return {"turns": [{"who": who, "said": f"{who} says hi"} for who in speakers]}


def test_an_unmapped_speaker_is_a_bad_record_never_the_user(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "m.jsonl", [_turns("bot", "Alice"), _turns("bot", "assistant")])
    mapping: dict[str, Any] = {"messages": "turns", "role": "who", "content": "said"}
    # roles given, Alice not in it, no default_role: line 1 is a bad record, line 2 is read.
    inputs, ref = _only(
        tmp_path, {"path": "m.jsonl", "mapping": {**mapping, "roles": {"bot": "assistant"}}}
    )
    (batch,), bad = _read_all(inputs, ref)
    assert [(b.scene, b.label, b.reason, b.message) for b in bad] == [
        (0, "line 1", "InvalidMessageError", "message 1: " + UNMAPPED.format("Alice"))
    ]
    assert batch.first_scene == 1 and batch.scene_data == [
        [
            {"role": "assistant", "name": "bot", "content": "bot says hi"},
            {"role": "assistant", "content": "assistant says hi"},  # an OpenAI role as it is
        ]
    ]
    # No roles at all: OpenAI roles stay, any other value is unmapped by the same rule.
    inputs, ref = _only(tmp_path, {"path": "m.jsonl", "mapping": mapping})
    batches, bad = _read_all(inputs, ref)
    assert batches == [] and [(b.label, b.message) for b in bad] == [
        ("line 1", "message 0: " + UNMAPPED.format("bot")),
        ("line 2", "message 0: " + UNMAPPED.format("bot")),
    ]
    # default_role: the unmapped speaker gets it and keeps its own name.
    spec = {"path": "m.jsonl", "mapping": {**mapping, "default_role": "assistant"}}
    inputs, ref = _only(tmp_path, spec)
    (batch,), bad = _read_all(inputs, ref)
    assert bad == [] and batch.scene_data[0] == [
        {"role": "assistant", "name": "bot", "content": "bot says hi"},
        {"role": "assistant", "name": "Alice", "content": "Alice says hi"},
    ]


def test_an_unmapped_speaker_is_the_jobs_error_record(tmp_path: Path) -> None:
    from memreader.batch.job import ERRORS_FILE, SUMMARY_FILE
    from memreader.batch.job_run import run_job

    _write_jsonl(tmp_path / "m.jsonl", [_turns("agent", "Alice"), _turns("customer", "agent")])
    mapping = {
        "messages": "turns",
        "role": "who",
        "content": "said",
        "roles": {"agent": "assistant", "customer": "user"},
    }
    job = _job(
        tmp_path,
        {"path": "m.jsonl", "mapping": mapping},
        reader={"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}},
    )
    result = run_job(job)
    errors = (tmp_path / "out" / ERRORS_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in errors] == [
        {
            "input": "m.jsonl",
            "scene": 0,
            "window": None,
            "reason": "InvalidMessageError",
            "message": "line 1: message 1: " + UNMAPPED.format("Alice"),
        }
    ]
    summary = json.loads((tmp_path / "out" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert summary["counts"]["failures"] == 1 and summary["counts"]["scenes"] == 1
    assert summary["failed_inputs"] == 0 and result.exit_code == 1, "the job went on"


@pytest.mark.parametrize(
    ("mapping", "where"),
    [
        ({"default_role": "bot"}, "inputs.0.mapping.default_role"),
        ({"roles": {"agent": "helper"}}, "inputs.0.mapping.roles"),
    ],
)
def test_mapped_roles_must_be_roles(tmp_path: Path, mapping: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(where)):
        _job(tmp_path, {"path": "m.jsonl", "mapping": mapping})


def test_jsonl_ids_from_field_file_name_constant(tmp_path: Path) -> None:
    records = [
        {"user": "u1", "conv": "s1", "messages": _scene("a")},
        {"user": "u1", "conv": "s1", "messages": _scene("b")},
        {"user": "u2", "conv": 7, "messages": _scene("c")},
        {"conv": "s3", "messages": _scene("d")},  # no user: a bad record
        {"user": "u2", "conv": 7, "messages": _scene("e")},
    ]
    _write_jsonl(tmp_path / "people.jsonl", records)
    spec = {
        "path": "people.jsonl",
        "user_id": {"from": "field", "field": "user"},
        "session_id": {"from": "field", "field": "conv"},
    }
    inputs, ref = _only(tmp_path, spec)
    units = list(inputs.read(ref))
    assert [(u.info, u.first_scene, u.labels) if isinstance(u, Batch) else u for u in units] == [
        ({"user_id": "u1", "session_id": "s1"}, 0, ["line 1", "line 2"]),
        ({"user_id": "u2", "session_id": "7"}, 2, ["line 3"]),
        BadRecord(3, "line 4", "InvalidInfoError", "user_id: the record has no 'user' field"),
        ({"user_id": "u2", "session_id": "7"}, 4, ["line 5"]),
    ]
    spec = {
        "path": "people.jsonl",
        "user_id": {"from": "constant", "value": "team"},
        "session_id": {"from": "file_name"},
    }
    inputs, ref = _only(tmp_path, spec)
    (batch,), bad = _read_all(inputs, ref)
    assert bad == [] and batch.info == {"user_id": "team", "session_id": "people"}
    assert len(batch.scene_data) == 5


def test_batches_follow_scenes_per_call(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "c.jsonl", [_scene(str(i)) for i in range(7)])
    inputs, ref = _only(tmp_path, {"path": "c.jsonl"}, scenes_per_call=3)
    batches, bad = _read_all(inputs, ref)
    assert bad == []
    assert [(b.first_scene, len(b.scene_data)) for b in batches] == [(0, 3), (3, 3), (6, 1)]
    assert batches[1].labels == ["line 4", "line 5", "line 6"]
    assert batches[1].scene_data[0] == _scene("3")


def test_jsonl_streams_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    filler = "x" * 2000
    with path.open("w", encoding="utf-8") as handle:
        for i in range(10_000):
            handle.write(json.dumps(_scene(f"{i} {filler}")) + "\n")
    size = path.stat().st_size
    assert size > 20_000_000
    inputs, ref = _only(tmp_path, {"path": "big.jsonl"})
    scenes = 0
    tracemalloc.start()
    try:
        for unit in inputs.read(ref):
            assert isinstance(unit, Batch)
            scenes += len(unit.scene_data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert scenes == 10_000
    assert peak < 5_000_000, peak


def test_long_line_is_a_bad_record_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memreader.batch.places.opened as opened_module

    monkeypatch.setattr(opened_module, "MAX_LINE_BYTES", 100)
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps(_scene("a"))
        + "\n"
        + json.dumps(_scene("b" * 500))
        + "\n"
        + json.dumps(_scene("c")),
        encoding="utf-8",
    )
    inputs, ref = _only(tmp_path, {"path": "c.jsonl"})
    units = list(inputs.read(ref))
    assert [u.labels if isinstance(u, Batch) else u.label for u in units] == [
        ["line 1"],
        "line 2",
        ["line 3"],
    ]
    assert isinstance(units[1], BadRecord) and units[1].message == "over 100 bytes"


def test_max_bytes_is_enforced_before_reading(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "c.jsonl", [_scene("a")])
    (tmp_path / "c.json").write_text(json.dumps([_scene("a")]))
    for name in ("c.jsonl", "c.json"):
        inputs, ref = _only(tmp_path, {"path": name, "max_bytes": 10})
        with pytest.raises(InputError, match=f"{name}: .*over the limit of 10"):
            list(inputs.read(ref))


def test_lines_give_every_line(tmp_path: Path) -> None:
    (tmp_path / "items.jsonl").write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n{"b": \xff}\n')
    inputs, ref = _only(tmp_path, {"path": "items.jsonl"})
    assert list(inputs.lines(ref)) == ['{"a": 1}', "", '{"b": \ufffd}']


# --- JSON, MemoryBank, LoCoMo, documents -------------------------------------------------------


def test_json_list_of_scenes_and_flat_scene(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text(
        json.dumps([_scene("a"), {"messages": _scene("b")}, "just text", {"no": "messages"}])
    )
    inputs, ref = _only(tmp_path, {"path": "list.json"})
    units = list(inputs.read(ref))
    assert isinstance(units[0], Batch)
    assert units[0].scene_data == [_scene("a"), _scene("b"), "just text"]
    assert units[0].labels == ["scene 0", "scene 1", "scene 2"]
    assert isinstance(units[1], BadRecord)
    assert (units[1].scene, units[1].reason) == (3, "InvalidSceneError")

    (tmp_path / "flat.json").write_text(json.dumps(_scene("flat")))
    inputs, ref = _only(tmp_path, {"path": "flat.json", "format": "json"})
    (batch,), bad = _read_all(inputs, ref)
    assert bad == [] and batch.scene_data == [_scene("flat")] and batch.labels == ["scene 0"]

    (tmp_path / "broken.json").write_text("[1, 2")
    inputs, ref = _only(tmp_path, {"path": "broken.json"})
    with pytest.raises(InputError, match=r"broken\.json: not JSON"):
        list(inputs.read(ref))


def test_memorybank_real_file(tmp_path: Path) -> None:
    source = MEMORYBANK / "memory_bank_en.json"
    shutil.copy(source, tmp_path / "memory_bank_en.json")
    expected = load_memorybank(source)
    inputs, ref = _only(tmp_path, {"path": "memory_bank_en.json"}, scenes_per_call=4)
    batches, bad = _read_all(inputs, ref)
    assert bad == []
    raw = json.loads(source.read_text(encoding="utf-8"))
    users = [u.strip() for u in raw]
    assert len(users) == 15
    assert sorted({b.info["user_id"] for b in batches}) == sorted(users)
    for user_key, user in zip(raw, users, strict=True):
        mine = [b for b in batches if b.info["user_id"] == user]
        assert all(b.info == {"user_id": user, "session_id": f"memorybank:{user}"} for b in mine)
        assert all(len(b.scene_data) <= 4 for b in mine)
        assert [s for b in mine for s in b.scene_data] == expected[str(user_key)]
        # A day without pairs (John Zhang has one) is no scene.
        days = [day for day, pairs in raw[user_key]["history"].items() if pairs]
        assert [label for b in mine for label in b.labels] == [
            f"user {user}, day {day}" for day in days
        ]
    assert sum(len(b.scene_data) for b in batches) == 149  # 150 days, one without pairs
    firsts = [b.first_scene for b in batches]
    assert firsts[0] == 0 and firsts == sorted(firsts)

    # Ids the spec sets override MemoryBank's own: a record's field, the file name.
    spec = {
        "path": "memory_bank_en.json",
        "format": "memorybank",
        "user_id": {"from": "field", "field": "name"},
        "session_id": {"from": "file_name"},
    }
    inputs, ref = _only(tmp_path, spec)
    batches, bad = _read_all(inputs, ref)
    assert bad == []
    first_user = next(iter(raw.values()))
    assert batches[0].info == {"user_id": first_user["name"], "session_id": "memory_bank_en"}


def test_memorybank_bad_day_is_a_record(tmp_path: Path) -> None:
    data = {
        "Ann": {"history": {"2023-01-01": [{"query": "hi", "response": "hello"}], "2023-01-02": 5}},
        "Bob": {"history": {"2023-01-03": [{"query": "yo", "response": "hey"}]}},
    }
    (tmp_path / "mb.json").write_text(json.dumps(data))
    inputs, ref = _only(tmp_path, {"path": "mb.json", "format": "memorybank"})
    units = list(inputs.read(ref))
    assert [u.labels if isinstance(u, Batch) else (u.scene, u.label) for u in units] == [
        ["user Ann, day 2023-01-01"],
        (1, "user Ann, day 2023-01-02"),
        ["user Bob, day 2023-01-03"],
    ]


def _locomo_sample(sample_id: str) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "qa": [{"question": "Where?", "answer": "Lyon"}],
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_10": [{"speaker": "Caroline", "text": "Late one.", "dia_id": "D10:1"}],
            "session_10_date_time": "9:00 am on 1 June, 2023",
            "session_2": [
                {"speaker": "Melanie", "text": "How was Lyon?", "dia_id": "D2:1"},
                {"speaker": "Caroline", "text": "Lovely.", "dia_id": "D2:2"},
            ],
            "session_2_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Caroline", "text": "I moved to Lyon.", "dia_id": "D1:1"}],
            "session_1_date_time": "1:00 pm on 1 May, 2023",
        },
    }


def test_locomo(tmp_path: Path) -> None:
    broken = _locomo_sample("conv-2")
    broken["conversation"]["session_1"] = [{"speaker": "Caroline"}]
    (tmp_path / "locomo10.json").write_text(json.dumps([_locomo_sample("conv-1"), broken]))
    inputs, ref = _only(tmp_path, {"path": "locomo10.json"})
    units = list(inputs.read(ref))
    first = units[0]
    assert isinstance(first, Batch)
    assert first.info == {"user_id": "conv-1", "session_id": "locomo:conv-1"}
    assert first.labels == [
        "sample conv-1, session_1",
        "sample conv-1, session_2",
        "sample conv-1, session_10",
    ]
    assert first.scene_data[1] == [
        {
            "role": "assistant",
            "name": "Melanie",
            "content": "How was Lyon?",
            "chat_time": "1:56 pm on 8 May, 2023",
            "message_id": "D2:1",
        },
        {
            "role": "user",
            "name": "Caroline",
            "content": "Lovely.",
            "chat_time": "1:56 pm on 8 May, 2023",
            "message_id": "D2:2",
        },
    ]
    bad = units[1]
    assert isinstance(bad, BadRecord)
    assert (bad.scene, bad.label, bad.reason) == (
        3,
        "sample conv-2, session_1",
        "InvalidMessageError",
    )
    second = units[2]
    assert isinstance(second, Batch)
    assert (second.first_scene, second.info["user_id"]) == (4, "conv-2")

    # One sample (not a list), roles mapped, user from the file name.
    (tmp_path / "one.json").write_text(json.dumps(_locomo_sample("conv-9")))
    spec = {
        "path": "one.json",
        "format": "locomo",
        "user_id": {"from": "file_name"},
        "mapping": {"roles": {"Caroline": "assistant", "Melanie": "user"}},
    }
    inputs, ref = _only(tmp_path, spec)
    (batch,), _ = _read_all(inputs, ref)
    assert batch.info == {"user_id": "one", "session_id": "locomo:conv-9"}
    assert batch.scene_data[0][0]["role"] == "assistant"

    # A third speaker is not silently the user: a bad record, unless default_role gives a role.
    sample = _locomo_sample("conv-3")
    sample["conversation"]["session_1"].append({"speaker": "Dana", "text": "Hi all."})
    (tmp_path / "one.json").write_text(json.dumps(sample))
    inputs, ref = _only(tmp_path, {"path": "one.json", "format": "locomo"})
    (batch,), unmapped = _read_all(inputs, ref)
    assert [(b.label, b.message) for b in unmapped] == [
        ("sample conv-3, session_1", "message 1: " + UNMAPPED.format("Dana"))
    ]
    spec = {"path": "one.json", "format": "locomo", "mapping": {"default_role": "assistant"}}
    inputs, ref = _only(tmp_path, spec)
    (batch,), unmapped = _read_all(inputs, ref)
    assert unmapped == [] and batch.scene_data[0][1]["role"] == "assistant"
    assert batch.scene_data[0][1]["name"] == "Dana"


def test_documents(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "report.pdf").write_bytes(b"%PDF-1.4 tiny")
    (tmp_path / "docs" / "notes.md").write_text("# Notes\n")
    job = _job(
        tmp_path, {"path": "docs", "user_id": {"from": "constant", "value": "u"}}, type="doc"
    )
    inputs = inputs_of(job)
    refs = inputs.discover()
    assert [r.key for r in refs] == ["docs/notes.md", "docs/report.pdf"]
    (batch,), bad = _read_all(inputs, refs[1])
    assert bad == []
    assert batch.info == {"user_id": "u", "session_id": "report"}
    (document,) = batch.scene_data
    assert document == [
        {
            "type": "file",
            "file": {
                "file_data": base64.b64encode(b"%PDF-1.4 tiny").decode(),
                "filename": "report.pdf",
            },
        }
    ]
    big = _job(tmp_path, {"path": "docs/report.pdf", "max_bytes": 5}, type="doc")
    inputs = inputs_of(big)
    with pytest.raises(InputError, match="over the limit of 5"):
        list(inputs.read(inputs.discover()[0]))


def test_content_hash(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    data = os.urandom(3 * 1024 * 1024 + 17)
    path.write_bytes(data)
    inputs, ref = _only(tmp_path, {"path": "c.jsonl"})
    assert inputs.content_hash(ref) == hashlib.sha256(data).hexdigest()
    path.write_bytes(data + b"\n")
    assert inputs.content_hash(ref) == hashlib.sha256(data + b"\n").hexdigest()


# --- S3 ----------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_s3_discovery_and_reading(moto_s3: str, tmp_path: Path) -> None:
    boto3 = pytest.importorskip("boto3")
    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="corpus")
    body = "\n".join([json.dumps(_scene("one")), "oops", json.dumps(_scene("two"))]) + "\n"
    objects = {
        "chats/b.jsonl": body,
        "chats/a/x.jsonl": json.dumps(_scene("x")),
        "chats/folder/": "",
        "chats-old/z.jsonl": json.dumps(_scene("z")),
    }
    for key, text in objects.items():
        client.put_object(Bucket="corpus", Key=key, Body=text.encode())
    s3 = {"endpoint_url": moto_s3, "region_name": "us-east-1", "addressing_style": "path"}
    job = _job(tmp_path, {"path": "s3://corpus/chats"}, s3=s3)
    inputs = inputs_of(job)
    try:
        refs = inputs.discover()
        assert [(r.key, r.location, r.size) for r in refs] == [
            (
                "s3://corpus/chats/a/x.jsonl",
                "s3://corpus/chats/a/x.jsonl",
                len(objects["chats/a/x.jsonl"]),
            ),
            ("s3://corpus/chats/b.jsonl", "s3://corpus/chats/b.jsonl", len(body)),
        ]
        units = list(inputs.read(refs[1]))
        assert [u.labels if isinstance(u, Batch) else (u.label, u.reason) for u in units] == [
            ["line 1"],
            ("line 2", "InvalidSceneError"),
            ["line 3"],
        ]
        assert isinstance(units[0], Batch) and units[0].info["user_id"] == "b"
        assert inputs.content_hash(refs[1]) == hashlib.sha256(body.encode()).hexdigest()
        with pytest.raises(
            InputError, match=re.escape("inputs.0: no object matches 's3://corpus/none'")
        ):
            inputs_of(_job(tmp_path, {"path": "s3://corpus/none"}), s3_client=client).discover()
    finally:
        inputs.close()


@pytest.mark.timeout(60)
def test_s3_the_jobs_own_output_is_never_an_input(moto_s3: str, tmp_path: Path) -> None:
    boto3 = pytest.importorskip("boto3")
    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="own")
    for key in ("a.jsonl", "chats/b.jsonl", "out/x.jsonl", "out/_summary.json", "out/deep/y.jsonl"):
        client.put_object(Bucket="own", Key=key, Body=json.dumps(_scene("x")).encode())

    def keys(output: str, path: str = "s3://own/") -> list[str]:
        job = _job(tmp_path, {"path": path}, output={"path": output})
        return [r.key for r in inputs_of(job, s3_client=client).discover()]

    assert keys("s3://own/out/") == [
        "s3://own/a.jsonl",
        "s3://own/chats/b.jsonl",
        "s3://own/out/deep/y.jsonl",
    ]
    # An output at the bucket's root: the objects at the root are its own.
    assert keys("s3://own") == [
        "s3://own/chats/b.jsonl",
        "s3://own/out/deep/y.jsonl",
        "s3://own/out/x.jsonl",
    ]
    assert keys("s3://other/out") == [
        "s3://own/a.jsonl",
        "s3://own/chats/b.jsonl",
        "s3://own/out/deep/y.jsonl",
        "s3://own/out/x.jsonl",
    ]
    with pytest.raises(InputError, match=r"'s3://own/out/x\.jsonl' holds only the job's own"):
        keys("s3://own/out", path="s3://own/out/x.jsonl")


def test_within_keeps_every_read_inside_a_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.json").write_text("[]")
    outside = tmp_path / "outside.json"
    outside.write_text("[]")
    (root / "b.json").symlink_to(outside)
    inputs = inputs_of(_job(tmp_path, {"path": "root", "within": str(root)}))
    refs = inputs.discover()
    assert [ref.key for ref in refs] == ["root/a.json"]
    assert inputs.hidden == 1
    named = inputs_of(_job(tmp_path, {"path": "root/b.json", "within": str(root)}))
    with pytest.raises(InputError, match="no file of it lies inside"):
        named.discover()
    # Reading checks again (a file swapped for a link after discovery), by the spec's `within`
    # even for a ref that does not carry it.
    (root / "a.json").unlink()
    (root / "a.json").symlink_to(outside)
    for ref in (refs[0], dataclasses.replace(refs[0], within=None)):
        with pytest.raises(InputError, match="resolves outside"):
            inputs.content_hash(ref)
        with pytest.raises(InputError, match="resolves outside"):
            list(inputs.read(ref))
