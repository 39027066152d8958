"""The Markdown export never deletes what it did not write (issue 27, class 8): it replaces or
removes only files its manifest lists with the bytes they still hold; it refuses a user folder
holding other files unless told, naming them; and its file names are safe on every OS."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import memreader.categories.markdown_files as markdown_files
from memreader import files
from memreader.batch.job import load_job
from memreader.batch.job_run import run_job
from memreader.categories.markdown import (
    INDEX,
    ForeignFilesError,
    category_file,
    export_markdown,
    export_report,
    user_folder,
)
from memreader.categories.markdown_files import MANIFEST, portable_name_problem
from memreader.cli import main
from memreader.errors import SinkError
from memreader.stores.category_types import CategoryDef
from tests.categories.memories import PREFS, WORK, item, open_db, seed, write_job

pytestmark = pytest.mark.timeout(120)

DEVICES = ["con", "prn", "aux", "nul", *(f"com{i}" for i in range(10))]
DEVICES += [f"lpt{i}" for i in range(10)]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_the_issue_case_a_docs_folder_is_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export-md --user docs --out .`` beside a project's docs/ folder deleted its pages."""
    with open_db(tmp_path) as store:
        seed(store, "docs")
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    pages = {"installation.md": b"# Install\n", "changelog.md": b"# 1.0\n", "api.md": b"# API\n"}
    for name, data in pages.items():
        (project / "docs" / name).write_bytes(data)
    url = f"sqlite:///{tmp_path / 'm.db'}"
    argv = ["export-md", "--store", url, "--user", "docs", "--out", str(project)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "installation.md" in err and "changelog.md" in err and "api.md" in err
    assert "--allow-foreign-files" in err
    assert snapshot(project / "docs") == pages  # nothing written, nothing deleted
    assert main([*argv, "--allow-foreign-files"]) == 0
    err = capsys.readouterr().err
    assert f"left alone (not written by the export): {project / 'docs' / 'api.md'}" in err
    after = snapshot(project / "docs")
    assert {name: after[name] for name in pages} == pages
    assert INDEX in after and "preferences.md" in after and MANIFEST in after


def test_hand_written_files_in_a_user_folder_survive_and_are_named(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open_db(tmp_path) as store:
        seed(store)
        export_markdown(store, ["ana"], str(out))
        (out / "ana" / "notes.md").write_text("my notes")
        (out / "ana" / "readme.md").write_text("read me")
        (out / "ana" / "drafts").mkdir()
        store.link_categories("ana", {"m3": []})  # work.md is stale now
        with pytest.raises(ForeignFilesError) as refused:
            export_markdown(store, ["ana"], str(out))
        folder = str(out / "ana")
        assert refused.value.folder == folder and not refused.value.blocking
        assert refused.value.foreign == tuple(
            os.path.join(folder, n) for n in ("drafts", "notes.md", "readme.md")
        )
        assert "notes.md" in str(refused.value) and "readme.md" in str(refused.value)
        assert (out / "ana" / "work.md").exists()  # the refusal wrote and removed nothing
        report = export_report(store, ["ana"], str(out), allow_foreign_files=True)
    assert report.removed == [os.path.join(folder, "work.md")]  # its own stale file only
    assert sorted(report.kept) == list(refused.value.foreign)
    assert (out / "ana" / "notes.md").read_text() == "my notes"
    assert (out / "ana" / "readme.md").read_text() == "read me"
    assert (out / "ana" / "drafts").is_dir() and not (out / "ana" / "work.md").exists()


def test_a_re_export_removes_only_its_own_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open_db(tmp_path) as store:
        seed(store)
        first = export_markdown(store, ["ana"], str(out))
        assert sorted(os.path.basename(p) for p in first) == [INDEX, "preferences.md", "work.md"]
        store.link_categories("ana", {"m3": []})
        report = export_report(store, ["ana"], str(out))
    assert report.removed == [str(out / "ana" / "work.md")] and not report.kept
    assert sorted(p.name for p in (out / "ana").iterdir()) == [MANIFEST, INDEX, "preferences.md"]
    manifest = json.loads((out / "ana" / MANIFEST).read_text())
    assert sorted(manifest["files"]) == [INDEX, "preferences.md"]


def test_an_edited_exported_file_is_kept_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open_db(tmp_path) as store:
        seed(store)
        export_markdown(store, ["ana"], str(out))
        edited = out / "ana" / "work.md"
        edited.write_text(edited.read_text() + "\nMy own line.\n")
        store.write([item("m4", "Ana works from home on Fridays.", doc="notes.md")])
        store.link_categories("ana", {"m3": ["work"], "m4": ["work"]})
        # The export must rewrite work.md: it never overwrites the user's edit, even when told.
        for allow in (False, True):
            with pytest.raises(ForeignFilesError) as refused:
                export_markdown(store, ["ana"], str(out), allow_foreign_files=allow)
            assert refused.value.blocking == refused.value.edited == (str(edited),)
            assert "changed since" in str(refused.value)
        assert edited.read_text().endswith("My own line.\n")
        # Once its category is gone the export no longer needs the name: kept and reported.
        store.link_categories("ana", {"m3": [], "m4": []})
        with pytest.raises(ForeignFilesError):
            export_markdown(store, ["ana"], str(out))
        report = export_report(store, ["ana"], str(out), allow_foreign_files=True)
    assert report.kept == [str(edited)] and not report.removed
    assert edited.read_text().endswith("My own line.\n")


def test_a_foreign_file_where_the_export_writes_blocks_every_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "bob").mkdir(parents=True)
    (out / "bob" / INDEX).write_text("bob's own index")
    target = tmp_path / "target.md"
    target.write_text("outside")
    (out / "bob" / "preferences.md").symlink_to(target)
    with open_db(tmp_path) as store:
        seed(store, "ana")
        seed(store, "bob", prefix="b-")
        with pytest.raises(ForeignFilesError) as refused:
            export_markdown(store, ["ana", "bob"], str(out), allow_foreign_files=True)
    assert sorted(os.path.basename(p) for p in refused.value.blocking) == [
        INDEX,
        "preferences.md",
    ]
    assert not (out / "ana").exists()  # checked before anything was written
    assert (out / "bob" / INDEX).read_text() == "bob's own index"
    assert target.read_text() == "outside"


def test_names_are_compared_case_blind_and_crash_leftovers_are_left_alone(
    tmp_path: Path,
) -> None:
    """On macOS and Windows ``Index.md`` is ``index.md``: writing one would overwrite the
    other. A temporary file of a killed export is neither deleted nor counted as foreign."""
    out = tmp_path / "out"
    folder = out / "ana"
    folder.mkdir(parents=True)
    leftovers = [".index.md.k2j4h5g6.tmp", f".{MANIFEST}.a1b2c3d4.tmp"]
    for name in leftovers:
        (folder / name).write_text("half")
    with open_db(tmp_path) as store:
        seed(store)
        assert export_markdown(store, ["ana"], str(out))  # the leftovers are not foreign
        (folder / "Work.MD").write_text("mine")
        with pytest.raises(ForeignFilesError) as refused:
            export_markdown(store, ["ana"], str(out), allow_foreign_files=True)
    assert refused.value.blocking == (str(folder / "Work.MD"),) and not refused.value.edited
    assert all((folder / name).read_text() == "half" for name in leftovers)
    assert (folder / "Work.MD").read_text() == "mine"


def test_a_file_already_holding_the_exports_bytes_is_adopted(tmp_path: Path) -> None:
    """An export from before the manifest: its files hold exactly what the export writes."""
    out = tmp_path / "out"
    with open_db(tmp_path) as store:
        seed(store)
        export_markdown(store, ["ana"], str(out))
        (out / "ana" / MANIFEST).unlink()
        assert export_markdown(store, ["ana"], str(out))  # nothing foreign: all adopted
    assert sorted(json.loads((out / "ana" / MANIFEST).read_text())["files"]) == [
        INDEX,
        "preferences.md",
        "work.md",
    ]


def test_a_forged_or_broken_manifest_deletes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    victim = tmp_path / "victim.md"
    victim.write_text("keep me")
    with open_db(tmp_path) as store:
        seed(store)
        export_markdown(store, ["ana"], str(out))
        (out / "ana" / "notes.md").write_text("mine")
        forged = {
            "format": "memreader-export",
            "version": 1,
            "files": {"../victim.md": ["0" * 64], "notes.md": ["0" * 64], "x/../y.md": []},
        }
        (out / "ana" / MANIFEST).write_text(json.dumps(forged))
        with pytest.raises(ForeignFilesError):
            export_markdown(store, ["ana"], str(out))
        (out / "ana" / MANIFEST).write_text("{not json")
        with pytest.raises(ForeignFilesError) as refused:
            export_markdown(store, ["ana"], str(out))
        export_markdown(store, ["ana"], str(out), allow_foreign_files=True)
    assert [os.path.basename(p) for p in refused.value.foreign] == ["notes.md"]
    assert victim.read_text() == "keep me" and (out / "ana" / "notes.md").read_text() == "mine"


def test_an_export_killed_midway_goes_on_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    real = files.write_atomic
    written: list[str] = []

    def dies_at_the_index(path: str, data: bytes) -> None:
        if os.path.basename(path) == INDEX:
            raise OSError(28, "No space left on device")
        written.append(os.path.basename(path))
        real(path, data)

    with open_db(tmp_path) as store:
        seed(store)
        monkeypatch.setattr(markdown_files, "write_atomic", dies_at_the_index, raising=True)
        with pytest.raises(SinkError, match="No space left"):
            export_markdown(store, ["ana"], str(out))
        assert written == [MANIFEST, "preferences.md", "work.md"]
        monkeypatch.setattr(markdown_files, "write_atomic", real)
        # The files written before the crash are listed: no foreign file, no refusal.
        paths = export_markdown(store, ["ana"], str(out))
    assert sorted(os.path.basename(p) for p in paths) == [INDEX, "preferences.md", "work.md"]


# -- names safe on every OS -------------------------------------------------------------------


def test_portable_name_problem() -> None:
    for good in ("work.md", "index.category.md", "con-category.md", "console.md", "x" * 100):
        assert portable_name_problem(good) is None, good
    bad = {
        "CON": "device",
        "con.md": "device",
        "Nul.tar.gz": "device",
        "com1 .md": "device",
        "LPT9": "device",
        "a<b.md": "character",
        "a:b": "character",
        "tab\t.md": "character",
        "notes.": "trailing",
        "notes ": "trailing",
        "x" * 101: "over",
        "..": "empty",
        "": "empty",
    }
    for name, why in bad.items():
        problem = portable_name_problem(name)
        assert problem is not None and why in problem, name


def test_category_and_user_names_are_portable_and_distinct() -> None:
    names = [*DEVICES, "index", "con_category", "con_", "console", "a", "z" * 64]
    files = [category_file(name) for name in names]
    assert all(portable_name_problem(f) is None for f in files), files
    assert len({f.casefold() for f in files}) == len(names)
    assert category_file("con") == "con-category.md"
    users = [*DEVICES, *(d.upper() for d in DEVICES), "Con.txt", "con ", "con.", "a" * 300]
    folders = [user_folder(user) for user in users]
    assert all(portable_name_problem(f) is None for f in folders), folders
    assert len({f.casefold() for f in folders}) == len(users)


def test_reserved_name_categories_export_to_safe_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    reserved = ["con", "nul", "aux", "prn", "com1", "lpt1"]
    with open_db(tmp_path) as store:
        store.write([item(f"m{k}", f"Memory {k}.", at=None) for k in range(len(reserved))])
        defs = [CategoryDef(name=n, description=f"About {n}.") for n in reserved]
        store.upsert_categories("ana", [*defs, PREFS, WORK])
        store.link_categories("ana", {f"m{k}": [n] for k, n in enumerate(reserved)})
        paths = export_markdown(store, ["ana"], str(out))
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted([INDEX, *(f"{n}-category.md" for n in reserved)])
    assert all(portable_name_problem(n) is None for n in names)
    index = (out / "ana" / INDEX).read_text()
    assert "- [con](con-category.md): About con." in index


def test_the_markdown_sink_refuses_a_folder_with_foreign_files(tmp_path: Path) -> None:
    job = load_job(
        write_job(tmp_path, {"format": "markdown", "store": "sqlite:///m.db", "path": "md"})
    )
    (tmp_path / "md" / "u1").mkdir(parents=True)
    (tmp_path / "md" / "u1" / "notes.md").write_text("mine")
    with pytest.raises(
        SinkError, match=r"u1 holds 1 file\(s\) the export did not write.*notes\.md"
    ):
        run_job(job)
    assert sorted(p.name for p in (tmp_path / "md" / "u1").iterdir()) == ["notes.md"]
    assert (tmp_path / "md" / "u1" / "notes.md").read_text() == "mine"
