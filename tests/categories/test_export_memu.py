"""memU's layout of the Markdown memory (issue 44): ``memory.md`` and ``skill.md`` entry files,
``index/``, ``memory/<category>.md`` and ``skill/<name>/SKILL.md`` per user, through
``Memory.export_markdown(layout="memu")`` and ``memreader export-md --layout memu``.

The tree is exact, every relative link leads to a file of it, the entry lines carry one-line
summaries; a write that changes one category rewrites only the files that show it (counted by
inode: a file replaced atomically is a new inode); hostile category, skill and user names stay
inside the output folder and never share a path; two users' trees are apart; the flat layout
and the memU one replace each other's files and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memreader import Memory
from memreader.batch.job import OutputSpec, load_job
from memreader.batch.job_run import run_job
from memreader.categories.markdown import render_memory
from memreader.categories.markdown_files import MANIFEST, ForeignFilesError
from memreader.cli import main
from memreader.errors import ConfigError, InputError
from memreader.extraction.skill_text import skill_text
from memreader.items import MemoryType, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores.category_types import CategoryDef
from tests.categories.memories import T0, item, open_db, seed, write_job
from tests.common import HASH_EMBEDDER, HASH_MEMORY
from tests.extraction.agent_chat import ALL_PASSES, TOOL_CHAT, responder
from tests.llm_server import LLMTestServer, llm_server

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(120)

LINK = re.compile(r"\]\(([^)\s]+)\)")


def skill(
    item_id: str,
    name: str,
    description: str,
    steps: list[str],
    *,
    inputs: tuple[str, ...] = (),
    tools: tuple[str, ...] = (),
    user: str = "ana",
) -> TextualMemoryItem:
    """A skill item as the skill pass stores one (its text, key, background and tool tags)."""
    meta = TextualMemoryItemMetadata(
        user_id=user,
        session_id="s12",
        memory_type=MemoryType.SKILL,
        key=name,
        background=description,
        tags=["mode:fine", "skill", *(f"tool:{t}" for t in tools)],
        valid_from=T0,
    )
    text = skill_text(name, description, steps, list(inputs))
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


DEPLOY = skill(
    "k1",
    "Deploy the service",
    "Roll out a new version safely.",
    ["Build the image", "Push it: tag 2. then wait", "Switch traffic"],
    inputs=("version",),
    tools=("kubectl",),
)
WEATHER = skill("k2", "Check weather", "Look up a city's weather.", ["Call get_weather"])


def seeded(tmp_path: Path, user: str = "ana", prefix: str = "") -> Path:
    """The seeded store's file: three memories in two categories (one summary) and two
    skills of ``user``."""
    with open_db(tmp_path) as store:
        seed(store, user, prefix)
        store.write([_owned(DEPLOY, user, prefix), _owned(WEATHER, user, prefix)])
    return tmp_path / "m.db"


def _owned(source: TextualMemoryItem, user: str, prefix: str) -> TextualMemoryItem:
    meta = source.metadata.model_copy(update={"user_id": user})
    return source.model_copy(update={"id": prefix + source.id, "metadata": meta})


def memory_on(db: Path) -> Memory:
    return Memory(HASH_MEMORY, store=f"sqlite:///{db}")


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def inodes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_ino for p in root.rglob("*.md")}


TREE = [
    MANIFEST,
    "index/sources.md",
    "memory.md",
    "memory/preferences.md",
    "memory/work.md",
    "skill.md",
    "skill/check-weather/SKILL.md",
    "skill/deploy-the-service/SKILL.md",
]


def test_the_tree_of_a_user_with_categories_and_skills(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    out = tmp_path / "out"
    with memory_on(db) as m:
        written = m.export_markdown(out, user_id="ana", layout="memu")
    root = out / "ana"
    assert files_under(root) == TREE
    assert written == sorted(str(root / name) for name in TREE if name != MANIFEST)
    for page in root.rglob("*.md"):  # every relative link leads to a file of the tree
        for target in LINK.findall(page.read_text()):
            assert (page.parent / target).resolve().is_file(), (page, target)
            assert (page.parent / target).resolve().is_relative_to(root.resolve())
    memory = (root / "memory.md").read_text().splitlines()
    assert memory[0] == "# Memory of ana"
    assert (
        "- [preferences](memory/preferences.md): Likes, dislikes and tastes. 2 memories. "
        "Ana likes green tea." in memory
    )
    assert "- goals: What the user wants to achieve. (empty)" in memory
    assert (
        "2 skills: [skill.md](skill.md) lists them, each linking its `skill/<name>/SKILL.md`."
        in memory
    )
    skills = (root / "skill.md").read_text().splitlines()
    assert skills[0] == "# Skills of ana"
    assert skills[-2:] == [
        "- [Check weather](skill/check-weather/SKILL.md): Look up a city's weather.",
        "- [Deploy the service](skill/deploy-the-service/SKILL.md): Roll out a new version safely.",
    ]
    bundle = (root / "skill/deploy-the-service/SKILL.md").read_text()
    assert bundle.startswith(
        '---\nname: deploy-the-service\ndescription: "Roll out a new version safely."\n---\n'
    )
    assert "1. Build the image\n2. Push it: tag 2. then wait\n3. Switch traffic\n" in bundle
    assert "## Inputs\n\n- version\n" in bundle and "## Tools\n\n- kubectl\n" in bundle
    sources = (root / "index/sources.md").read_text().splitlines()
    assert "- doc notes.md: 1 memory, in [work](../memory/work.md)" in sources
    # The category file is the flat layout's, byte for byte.
    with open_db(tmp_path) as store:
        assert (root / "memory/work.md").read_bytes() == render_memory(store, "ana")["work.md"]


def test_each_file_is_read_alone_as_the_export_writes_it(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    out = tmp_path / "out"
    with memory_on(db) as m:
        m.export_markdown(out, user_id="ana", layout="memu")
        for name in TREE[1:]:
            assert (
                m.markdown_file(name, user_id="ana", layout="memu")
                == (out / "ana" / name).read_bytes()
            ), name
        assert m.markdown_file("memory/goals.md", user_id="ana", layout="memu") is None
        assert m.markdown_file("../memory.md", user_id="ana", layout="memu") is None
        assert m.markdown_file("memory.md", user_id="ana") is None  # flat: no such category


def test_a_changed_category_rewrites_only_the_files_that_show_it(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    out = tmp_path / "out"
    root = out / "ana"
    with memory_on(db) as m:
        m.export_markdown(out, user_id="ana", layout="memu")
        before = inodes(root)
        m.export_markdown(out, user_id="ana", layout="memu")
        assert inodes(root) == before  # nothing changed: nothing written
        with open_db(tmp_path) as store:  # the store alone: no keeper redoes the categories
            store.write([item("m4", "Ana leads the data team.", at=T0)])
            store.link_categories("ana", {"m4": ["work"]})
        m.export_markdown(out, user_id="ana", layout="memu")
        after = inodes(root)
    rewritten = sorted(name for name in before if after[name] != before[name])
    assert rewritten == ["index/sources.md", "memory.md", "memory/work.md"]
    assert "Ana leads the data team." in (root / "memory/work.md").read_text()
    assert "2 memories." in (root / "memory.md").read_text().split("[work]")[1]


HOSTILE_SKILLS = [
    "../../etc/passwd",
    "/etc/cron.d/x",
    "C:\\Windows\\system32",
    "CON",
    "nul.txt",
    "Deploy",
    "deploy",
    "memu",
    "..",
    "",
    "技能",
]


def test_hostile_skill_category_and_user_names_stay_inside_the_folder(tmp_path: Path) -> None:
    users = ["../bob", "/etc", "Ana", "ana", "con", "x/../../y"]
    with open_db(tmp_path) as store:
        for n, user in enumerate(users):
            store.write(
                [
                    _owned(skill(f"h{k}", name, f"d{k}", ["x"]), user, f"{n}-")
                    for k, name in enumerate(HOSTILE_SKILLS)
                ]
            )
            categories = [CategoryDef(name=c, description=c) for c in ("con", "memory", "skill")]
            store.upsert_categories(user, categories)
            store.write([item(f"{n}-c", "A fact.", user=user)])
            store.link_categories(user, {f"{n}-c": ["con", "memory", "skill"]})
    out = tmp_path / "out"
    with memory_on(tmp_path / "m.db") as m:
        written = m.export_markdown(out, user_id=users, layout="memu")
    real = [Path(p).resolve() for p in written]
    assert all(p.is_relative_to(out.resolve()) for p in real)
    on_disk = [p.resolve() for p in out.rglob("*") if p.is_file() and p.name != MANIFEST]
    assert sorted(on_disk) == sorted(real)  # nothing written but the export's files
    folders = {p.relative_to(out.resolve()).parts[0] for p in real}
    assert len(folders) == len(users)  # "Ana" and "ana" apart, whatever the case
    assert len({f.casefold() for f in folders}) == len(users)
    bundles = [p for p in real if p.name == "SKILL.md" and p.parent.parent.name == "skill"]
    for folder in folders:
        names = [p.parent.name for p in bundles if p.is_relative_to(out.resolve() / folder)]
        assert len(names) == len(HOSTILE_SKILLS)  # one folder each, none hidden
        assert len({name.casefold() for name in names}) == len(names)
        assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", name) for name in names)
        assert "memu" not in names and "con" not in names
        category_files = sorted(
            p.name for p in real if p.is_relative_to(out.resolve() / folder / "memory")
        )
        assert category_files == ["con-category.md", "memory.md", "skill.md"]
    assert not (tmp_path / "etc").exists() and not (out / "etc").exists()


def test_two_users_trees_are_apart(tmp_path: Path) -> None:
    with open_db(tmp_path) as store:
        seed(store, "ana")
        seed(store, "bob", prefix="b")
        store.write([DEPLOY, _owned(WEATHER, "bob", "b")])
    out = tmp_path / "out"
    with memory_on(tmp_path / "m.db") as m:
        m.export_markdown(out, user_id=["ana", "bob"], layout="memu")
    ana, bob = (out / "ana" / "skill.md").read_text(), (out / "bob" / "skill.md").read_text()
    assert "Deploy the service" in ana and "Check weather" not in ana
    assert "Check weather" in bob and "Deploy the service" not in bob
    assert sorted(p.name for p in (out / "bob" / "skill").iterdir()) == ["check-weather"]
    assert "[ref:bm1]" in (out / "bob" / "memory/preferences.md").read_text()
    assert "bm1" not in (out / "ana" / "memory/preferences.md").read_text()


def test_switching_layouts_replaces_the_exports_own_files_only(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    out = tmp_path / "out"
    root = out / "ana"
    with memory_on(db) as m:
        m.export_markdown(out, user_id="ana")
        assert files_under(root) == [MANIFEST, "index.md", "preferences.md", "work.md"]
        m.export_markdown(out, user_id="ana", layout="memu")
        assert files_under(root) == TREE
        (root / "skill" / "deploy-the-service" / "notes.md").write_text("mine")
        m.export_markdown(out, user_id="ana", allow_foreign_files=True)
    assert files_under(root) == [
        MANIFEST,
        "index.md",
        "preferences.md",
        "skill/deploy-the-service/notes.md",  # the user's: kept, and its folders with it
        "work.md",
    ]
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["skill"]


def test_foreign_files_in_the_export_s_folders_are_refused(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    out = tmp_path / "out"
    root = out / "ana"
    outside = tmp_path / "outside"
    outside.mkdir()
    with memory_on(db) as m:
        m.export_markdown(out, user_id="ana", layout="memu")
        (root / "memory" / "notes.md").write_text("mine")
        with pytest.raises(ForeignFilesError) as refused:
            m.export_markdown(out, user_id="ana", layout="memu")
        assert refused.value.foreign == (str(root / "memory" / "notes.md"),)
        # A symlink where a folder of the export goes is never written through.
        (root / "memory" / "notes.md").unlink()
        for path in sorted((root / "skill").rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        (root / "skill").rmdir()
        (root / "skill").symlink_to(outside, target_is_directory=True)
        with pytest.raises(ForeignFilesError) as blocked:
            m.export_markdown(out, user_id="ana", layout="memu", allow_foreign_files=True)
    assert blocked.value.blocking == (str(root / "skill"),)
    assert list(outside.iterdir()) == []


def test_an_unknown_layout_is_an_input_error(tmp_path: Path) -> None:
    with Memory(HASH_MEMORY, store="sqlite://:memory:") as m:
        with pytest.raises(InputError) as bad:
            m.export_markdown(tmp_path / "out", user_id="ana", layout="tree")  # type: ignore[arg-type]
        assert str(bad.value) == "layout must be one of flat, memu, got 'tree'"
        with pytest.raises(InputError):
            m.markdown_file("memory.md", user_id="ana", layout="../x")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_export_md_layout_memu_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = seeded(tmp_path)
    out = tmp_path / "out"
    argv = ["export-md", "--store", f"sqlite:///{db}", "--user-id", "ana", "-o", str(out)]
    assert main([*argv, "--layout", "memu"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == sorted(str(out / "ana" / name) for name in TREE if name != MANIFEST)
    assert files_under(out / "ana") == TREE
    with pytest.raises(SystemExit) as refused:
        main([*argv, "--layout", "tree"])
    assert refused.value.code == 2
    assert "invalid choice: 'tree'" in capsys.readouterr().err


def test_the_store_is_the_only_source_of_a_skill_bundle(tmp_path: Path) -> None:
    """A skill's ``file_ids`` (where a bundle was written once) is content: never read."""
    planted = tmp_path / "planted.md"
    planted.write_text("SECRET")
    bundle = DEPLOY.model_copy(deep=True)
    bundle.metadata.file_ids = [str(planted)]
    with open_db(tmp_path) as store:
        store.write([bundle])
        files = render_memory(store, "ana", "memu")
    assert all(b"SECRET" not in data for data in files.values())


def test_a_skill_the_fine_pass_distils_comes_back_as_its_bundle(
    llm_server: LLMTestServer, tmp_path: Path
) -> None:
    """From a chat with a real tool call, through the scripted LLM server and the store, to
    ``skill/<name>/SKILL.md`` with the steps, inputs and tools the model gave."""
    llm_server.responder = responder()
    llm = {
        "backend": "openai",
        "model": "m",
        "base_url": llm_server.url,
        "api_key": "sk-test-0123456789",
        "max_retries": 0,
        "timeout": 5,
    }
    config = {"config": {"embedder": HASH_EMBEDDER, "llm": llm, "fine": {"passes": ALL_PASSES}}}
    out = tmp_path / "out"
    with Memory(config, store=f"sqlite:///{tmp_path / 'm.db'}") as m:
        m.add(TOOL_CHAT, user_id="ana", mode="fine")
        m.export_markdown(out, user_id="ana", layout="memu")
    bundle = (out / "ana" / "skill" / "check-city-weather" / "SKILL.md").read_text()
    assert bundle.startswith(
        "---\nname: check-city-weather\n"
        'description: "Look up the weather of a city before a trip."\n---\n\n'
        "# ../../Check city weather\n"
    )
    assert (
        "## Steps\n\n1. Call get\\_weather with the city\n2. Report temperature and sky\n" in bundle
    )
    assert "## Inputs\n\n- city\n" in bundle and "## Tools\n\n- get\\_weather\n" in bundle
    skills = (out / "ana" / "skill.md").read_text()
    assert (
        "- [../../Check city weather](skill/check-city-weather/SKILL.md): Look up the weather "
        "of a city before a trip." in skills
    )


def test_a_batch_job_writes_memus_layout_when_told(tmp_path: Path) -> None:
    output = {"format": "markdown", "store": "sqlite:///m.db", "path": "md", "layout": "memu"}
    summary = run_job(load_job(write_job(tmp_path, output)))
    assert summary.exit_code == 0
    entry = tmp_path / "md" / "u1" / "memory.md"
    assert str(entry) in summary.outputs
    assert entry.read_text().startswith("# Memory of u1\n")
    assert (tmp_path / "md" / "u1" / "skill.md").is_file()
    assert not (tmp_path / "md" / "u1" / "index.md").exists()
    with pytest.raises(ConfigError) as refused:
        OutputSpec(path="out", format="jsonl", layout="memu")
    assert "output.layout is for format: markdown, not jsonl" in str(refused.value)


def test_a_deleted_skill_leaves_the_folder_this_memory_exported_in_memus_layout(
    tmp_path: Path,
) -> None:
    db = seeded(tmp_path)
    out = tmp_path / "out"
    root = out / "ana"
    with memory_on(db) as m:
        m.export_markdown(out, user_id="ana", layout="memu")
        m.delete("k1", user_id="ana", erase=True)
    assert not (root / "skill" / "deploy-the-service").exists()  # its emptied folder too
    assert "Deploy the service" not in (root / "skill.md").read_text()
    assert (root / "skill" / "check-weather" / "SKILL.md").is_file()
    assert not (root / "index.md").exists()  # rewritten in the layout it was exported in
