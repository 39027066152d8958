"""Memory as Markdown files (issue 21): ``render_memory``/``export_markdown`` over a real SQLite
store, the ``export-md`` command and the ``markdown`` batch sink.

The index lists categories with counts; category files list memories newest first with their
sources; the bytes are the same on every export and a change touches only its file; hostile
user ids stay inside the output folder and never share a folder; hostile memory text stays
text; nothing of another owner shows; a category gone loses its file."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from memreader.batch.job import OutputSpec, load_job
from memreader.batch.job_run import run_job
from memreader.categories.markdown import (
    INDEX,
    category_file,
    escape_line,
    export_markdown,
    render_file,
    render_memory,
    user_folder,
)
from memreader.categories.markdown_files import MANIFEST
from memreader.cli import main
from memreader.errors import ConfigError, InputError, StoreError
from memreader.stores import SourceSelector
from memreader.stores.category_types import CategoryDef
from tests.categories.memories import PREFS, T0, item, open_db, seed, write_job

pytestmark = pytest.mark.timeout(120)


def text(files: dict[str, bytes], name: str) -> str:
    return files[name].decode("utf-8")


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# -- rendering --------------------------------------------------------------------------------


def test_the_index_lists_categories_with_counts_and_a_preview(tmp_path: Path) -> None:
    with open_db(tmp_path) as store:
        seed(store)
        files = render_memory(store, "ana")
    assert sorted(files) == [INDEX, "preferences.md", "work.md"]  # goals is empty: no file
    index = text(files, INDEX).splitlines()
    assert index[0] == "# Memory of ana"
    assert any("`[ref:ID]`" in line for line in index)  # how to read the files
    assert index[-3:] == [
        "- goals: What the user wants to achieve. (empty)",
        "- [preferences](preferences.md): Likes, dislikes and tastes. 2 memories. "
        "Ana likes green tea.",
        "- [work](work.md): What the user does for a living. 1 memory.",
    ]


def test_one_file_renders_as_in_the_whole_export(tmp_path: Path) -> None:
    with open_db(tmp_path) as store:
        seed(store)
        files = render_memory(store, "ana")
        for name, content in files.items():
            assert render_file(store, "ana", name) == content
        assert render_file(store, "ana", "goals.md") is None  # empty: no file
        assert render_file(store, "ana", "../index.md") is None


def test_a_category_file_has_its_summary_then_memories_newest_first(tmp_path: Path) -> None:
    with open_db(tmp_path) as store:
        seed(store)
        files = render_memory(store, "ana")
    prefs = text(files, "preferences.md")
    assert prefs.startswith("# preferences\n\nLikes, dislikes and tastes.\n\n")
    assert "2 memories · summary: llm · updated 2023-05-06 09:12" in prefs
    assert "- Ana likes green tea. [ref:m1]\n- Ana avoids coffee. [ref:m2]\n" in prefs
    headings = re.findall(r'^### <a id="([^"]+)"></a>(.+)$', prefs, re.M)
    assert headings == [("m2", "m2"), ("m1", "m1")]  # newest first
    assert "> Ana prefers green tea.\n" in prefs
    assert (
        "valid 2023-05-03 09:12 → now · importance 0.80 · source: session s12 · 2023-05-03 09:12"
        in prefs
    )
    work = text(files, "work.md")
    assert "_No summary yet._" in work and "source: doc notes.md § Work" in work
    assert work.endswith("\n") and "\r" not in work and not work.endswith("\n\n")


def test_exports_are_byte_identical_and_a_change_touches_only_its_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open_db(tmp_path) as store:
        seed(store)
        paths = export_markdown(store, ["ana"], str(out))
        first = tree(out)
        mtimes = {p: os.stat(p).st_mtime_ns for p in paths}
        assert export_markdown(store, ["ana"], str(out)) == paths
        assert tree(out) == first
        assert {p: os.stat(p).st_mtime_ns for p in paths} == mtimes  # unchanged: not rewritten
        store.write([item("m4", "Ana works from home on Fridays.", doc="notes.md")])
        store.link_categories("ana", {"m3": ["work"], "m4": ["work"]})
        export_markdown(store, ["ana"], str(out))
    second = tree(out)
    changed = {name for name in first if first[name] != second[name]}
    # The index's count line changed, and the work file (and the manifest's hashes of them).
    assert changed == {"ana/work.md", "ana/index.md", f"ana/{MANIFEST}"}
    assert "Ana works from home on Fridays." in second["ana/work.md"].decode()
    assert [p.name for p in out.rglob(".*")] == [MANIFEST]  # no temporary file left


def test_a_category_that_vanished_loses_its_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open_db(tmp_path) as store:
        seed(store)
        export_markdown(store, ["ana"], str(out))
        (out / "ana" / "NOTES.txt").write_text("an agent's own notes")
        assert (out / "ana" / "work.md").exists()
        store.link_categories("ana", {"m3": []})  # work now holds nothing, has no summary
        export_markdown(store, ["ana"], str(out), allow_foreign_files=True)
    assert not (out / "ana" / "work.md").exists()
    assert "- work: What the user does for a living. (empty)" in (out / "ana" / INDEX).read_text()
    assert (out / "ana" / "NOTES.txt").exists()  # not ours: left alone


def test_another_owners_memories_never_show(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open_db(tmp_path) as store:
        seed(store, "ana")
        seed(store, "bob", prefix="b-")
        store.write([item("secret", "Bob's secret plan.", user="bob")])
        store.upsert_categories("bob", [CategoryDef(name="plans", description="Plans.")])
        store.link_categories("bob", {"secret": ["plans"]})
        export_markdown(store, ["ana"], str(out))
    assert sorted(p.name for p in out.iterdir()) == ["ana"]
    everything = b"".join(tree(out).values()).decode()
    assert "b-m" not in everything and "secret" not in everything and "plans" not in everything


def test_a_superseded_memory_leaves_the_file(tmp_path: Path) -> None:
    with open_db(tmp_path) as store:
        seed(store)
        store.forget(SourceSelector(doc_path="notes.md"), user_id="ana")
        files = render_memory(store, "ana")
    assert "work.md" not in files and "- work: What the user does for a living. (empty)" in text(
        files, INDEX
    )


# -- hostile data -----------------------------------------------------------------------------

HOSTILE_IDS = [
    "../x",
    "../../etc",
    "a/b",
    "a_b",
    "a\\b",
    "CON",
    "con",
    "Con.txt",
    "x" * 300,
    "x" * 301,
    "名字",
    "名前",
    "ana\n",
    "ana",
    "Ana",
    "a\x00b",
    ".hidden",
    "_manifest.json",
    " ",
    "\u202eevil",
]


def test_hostile_user_ids_map_to_distinct_safe_folders() -> None:
    names = [user_folder(user) for user in HOSTILE_IDS]
    assert len(set(names)) == len(names)  # injective on these
    assert len({n.lower() for n in names}) == len(names)  # even on a case-insensitive disk
    for name in names:
        assert re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,80}", name), name
        assert name.split(".")[0] not in {"con", "prn", "aux", "nul"}
    assert user_folder("ana") == "ana" and user_folder("ana-2_b") == "ana-2_b"
    assert user_folder("../x").startswith("x.") and user_folder("CON").startswith("con_.")


def test_hostile_user_ids_stay_inside_the_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # A store refuses an owner holding a NUL (tests/stores/test_store_contract_arguments.py).
    users = [u for u in HOSTILE_IDS if u.strip() and "\x00" not in u]
    with open_db(tmp_path) as store:
        for n, user in enumerate(users):
            store.write([item(f"h{n}", f"memory of user {n}", user=user, at=T0)])
            store.upsert_categories(user, [PREFS])
            store.link_categories(user, {f"h{n}": ["preferences"]})
        paths = export_markdown(store, users, str(out))
    assert {Path(p).parent.name for p in paths} == {user_folder(u) for u in users}
    for path in paths:
        assert Path(path).resolve().is_relative_to(out.resolve())
    assert sorted(os.listdir(tmp_path)) == ["m.db", "out"]  # nothing escaped
    for n, user in enumerate(users):  # each folder holds its own user's memory only
        body = (out / user_folder(user) / "preferences.md").read_text()
        assert f"memory of user {n}\n" in body
        assert sum(f"memory of user {k}\n" in body for k in range(len(users))) == 1


def test_hostile_memory_text_does_not_become_markdown_structure(tmp_path: Path) -> None:
    hostile = (
        "fine\n# Heading\n## Memories\n[click](javascript:alert(1))\n<script>x</script>\n"
        "- list\n1. one\n    code\n```\n---\n| a | b |\n[ref:m1]\n&lt;b&gt;\n![img](http://x/y.png)"
    )
    with open_db(tmp_path) as store:
        store.write([item("h1", hostile, at=T0)])
        store.upsert_categories(
            "ana", [CategoryDef(name="other", description="# desc [x](javascript:y)")]
        )
        store.link_categories("ana", {"h1": ["other"]})
        store.save_summary(
            "ana", "other", summary="# Title <b> [ref:h1]", kind="llm", note=None, now=T0
        )
        files = render_memory(store, "ana")
    body = text(files, "other.md")
    lines = body.splitlines()
    # The only headings, links and HTML are ours.
    assert [line for line in lines if line.startswith("#")] == [
        "# other",
        "## Summary",
        "## Memories",
        '### <a id="h1"></a>h1',
    ]
    quoted = [line for line in lines if line.startswith(">")]
    assert len(quoted) == len(hostile.splitlines())
    for line in quoted:  # every quoted line is escaped text
        content = line[2:]
        assert not re.match(r"[#>+=-]|\d+[.)]|\s", content), line
        assert not re.search(r"(?<!\\)[\[\]<`|]", content), line
    assert "](javascript" not in body.replace("\\](javascript", "")
    assert "<script>" not in body and "[ref:m1]" not in body.replace("\\[ref:m1\\]", "")
    assert "- \\# Title \\<b\\> [ref:h1]" in body  # the summary's own text escaped, refs kept
    index = text(files, INDEX)
    assert "\\# desc \\[x\\](javascript:y)" in index and "](javascript" not in index.replace(
        "\\](javascript", ""
    )


def test_escape_line() -> None:
    assert escape_line("# a\nb") == "\\# a b"
    assert escape_line("1. x") == "1\\. x" and escape_line("- x") == "\\- x"
    assert escape_line("a\x00b\u2028c") == "a b c"
    assert escape_line("&amp; & x") == "\\&amp; & x"
    assert escape_line("plain text, 3.5 km") == "plain text, 3.5 km"


def test_bad_category_names_are_refused() -> None:
    assert category_file("work") == "work.md" and category_file("index") == "index.category.md"
    for bad in ("../x", "Work", "a/b", "work\n", "", "x" * 65):
        with pytest.raises(StoreError):
            category_file(bad)


def test_export_needs_a_user(tmp_path: Path) -> None:
    with open_db(tmp_path) as store:
        with pytest.raises(InputError):
            export_markdown(store, [], str(tmp_path / "out"))
        with pytest.raises(InputError):
            export_markdown(store, [" "], str(tmp_path / "out"))


# -- command line -----------------------------------------------------------------------------


def test_the_export_md_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open_db(tmp_path) as store:
        seed(store)
        seed(store, "bob", prefix="b-")
    out = tmp_path / "out"
    url = f"sqlite:///{tmp_path / 'm.db'}"
    argv = ["export-md", "--store", url, "--user", "ana", "--user", "../bob", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == sorted(printed) and str(out / "ana" / INDEX) in printed
    assert (out / "ana" / "preferences.md").exists()
    assert (out / user_folder("../bob") / INDEX).read_text().endswith("_No categories yet._\n")
    assert main(["export-md", "--store", url, "--out", str(out)]) == 2
    assert "needs --user" in capsys.readouterr().err
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert main(["export-md", "--store", missing, "--user", "ana", "--out", str(out)]) == 2
    assert "no memory store" in capsys.readouterr().err


# -- batch sink -------------------------------------------------------------------------------


def test_the_markdown_sink_exports_the_owners_a_job_wrote(tmp_path: Path) -> None:
    job = load_job(
        write_job(tmp_path, {"format": "markdown", "store": "sqlite:///m.db", "path": "md"})
    )
    summary = run_job(job)
    assert summary.exit_code == 0 and summary.counts["items"] == 3
    index = tmp_path / "md" / "u1" / INDEX
    assert str(index) in summary.outputs
    assert index.read_text().startswith("# Memory of u1\n")
    assert (tmp_path / "md" / "_manifest.json").exists()  # the job's files beside
    # Categories set up on the store show at the next run's end.
    with open_db(tmp_path) as store:
        ids = [m.memory.id for m in store.search("green tea", user_id="u1", k=10, mode="text")]
        store.upsert_categories("u1", [PREFS])
        store.link_categories("u1", {memory_id: ["preferences"] for memory_id in ids})
    assert run_job(job, restart=True).exit_code == 0
    body = (tmp_path / "md" / "u1" / "preferences.md").read_text()
    assert body.count("### <a id=") == 3 and "I drank green tea number 2" in body


def test_the_markdown_sink_needs_a_store_and_a_local_folder() -> None:
    with pytest.raises(ConfigError, match=r"needs output\.store"):
        OutputSpec(format="markdown", path="md")
    from memreader.batch.sinks import sink_class

    spec = OutputSpec(format="markdown", store="sqlite:///m.db", path="s3://bucket/md")
    with pytest.raises(ConfigError, match="local folder"):
        sink_class("markdown").check(spec)
