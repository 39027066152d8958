"""Skill bundles: slugs that cannot escape the folder, YAML front matter that survives any
description, local writes that never follow a planted symlink, and S3 writes through moto."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memreader.errors import ConfigError, MemReaderError
from memreader.extraction.skills import (
    Skill,
    SkillsConfig,
    SkillWriteError,
    SkillWriter,
    owner_folder,
    render_skill_md,
    skill_slug,
)
from tests.s3_server import moto_s3

__all__ = ["moto_s3"]  # the fixture, imported for its side of pytest

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?$")


def _skill(name: str = "Deploy service", **changes: Any) -> Skill:
    fields: dict[str, Any] = {
        "name": name,
        "description": "Deploy the service with a canary and roll back on errors.",
        "steps": ["Build the image", "Push it", "Roll out to 5%", "Watch the error rate"],
        "inputs": ["service: the service name", "version"],
        "tools": ["docker", "kubectl"],
        "source": "scene 0, messages 3-5",
    }
    fields.update(changes)
    return Skill(**fields)


def _front_matter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n")
    head, sep, _ = text[4:].partition("\n---\n")
    assert sep
    loaded = yaml.safe_load(head)
    assert isinstance(loaded, dict)
    return loaded


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


# --- slugs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Deploy Service", "deploy-service"),
        ("  fetch_weather   v2 ", "fetch-weather-v2"),
        ("Créer un  Café", "creer-un-cafe"),
        ("Straße øl", "strasse-ol"),
        ("a -- b", "a-b"),
        ("../../etc/passwd", "etc-passwd"),
        ("/abs/path", "abs-path"),
        ("C:\\x", "c-x"),
        ("ev\0il\0", "ev-il"),
        (".hidden", "hidden"),
        ("con", "skill-con"),
        ("NUL", "skill-nul"),
        ("com1", "skill-com1"),
        ("lpt9", "skill-lpt9"),
        ("console", "console"),
    ],
)
def test_slug_table(name: str, expected: str) -> None:
    assert skill_slug(name) == expected


@pytest.mark.parametrize("name", ["", "   \t\n", "..", ".", "/", "\0\0", "🚀🔥", "部署服务", "---"])
def test_slug_falls_back_to_the_hash_when_nothing_is_left(name: str) -> None:
    slug = skill_slug(name)
    assert re.fullmatch(r"skill-[0-9a-f]{8}", slug)
    assert slug == skill_slug(name)  # deterministic
    assert SLUG.match(slug)


def test_fallbacks_of_distinct_names_differ() -> None:
    assert skill_slug("部署服务") != skill_slug("部署服") != skill_slug("🚀")


def test_long_names_are_cut_and_stay_distinct() -> None:
    long = "a" * 10_000
    slug = skill_slug(long)
    assert len(slug) <= 64
    assert SLUG.match(slug)
    assert re.fullmatch(r"a{57}-[0-9a-f]{6}", slug)
    one, two = "step " * 30 + "one", "step " * 30 + "two"
    assert skill_slug(one) != skill_slug(two)
    assert skill_slug(one)[:50] == skill_slug(two)[:50]
    assert len(skill_slug(one)) <= 64 and len(skill_slug(two)) <= 64
    # a name exactly at the limit is not cut
    assert skill_slug("b" * 64) == "b" * 64
    assert skill_slug("b" * 20, max_chars=10) != skill_slug("b" * 21, max_chars=10)


@pytest.mark.parametrize("max_chars", [1, 2, 6, 7, 8, 13, 14, 128])
def test_small_limits_still_give_valid_slugs(max_chars: int) -> None:
    for name in ["", "部署", "con", "a" * 500, "hello world " * 20, "x-" * 100]:
        slug = skill_slug(name, max_chars=max_chars)
        assert SLUG.match(slug) and len(slug) <= max_chars, (name, slug)


def test_slug_limit_is_checked() -> None:
    with pytest.raises(ValueError):
        skill_slug("x", max_chars=0)
    with pytest.raises(ValueError):
        skill_slug("x", max_chars=129)


@settings(max_examples=400, deadline=None)
@given(name=st.text(), max_chars=st.integers(min_value=1, max_value=128))
def test_slug_property(name: str, max_chars: int) -> None:
    slug = skill_slug(name, max_chars=max_chars)
    assert SLUG.match(slug)
    assert len(slug) <= max_chars
    assert slug not in {"con", "prn", "aux", "nul"}
    assert not re.fullmatch(r"(com|lpt)[0-9]", slug)
    folder = os.path.realpath("/srv/skills")
    joined = os.path.realpath(os.path.join(folder, slug))
    assert os.path.dirname(joined) == folder
    assert skill_slug(name, max_chars=max_chars) == slug


# --- rendering ---------------------------------------------------------------------------------


def test_render_layout() -> None:
    text = render_skill_md(_skill())
    assert text == (
        "---\n"
        "name: deploy-service\n"
        'description: "Deploy the service with a canary and roll back on errors."\n'
        "---\n"
        "\n"
        "# Deploy service\n"
        "\n"
        "Deploy the service with a canary and roll back on errors.\n"
        "\n"
        "## Inputs\n"
        "\n"
        "- service: the service name\n"
        "- version\n"
        "\n"
        "## Steps\n"
        "\n"
        "1. Build the image\n"
        "2. Push it\n"
        "3. Roll out to 5%\n"
        "4. Watch the error rate\n"
        "\n"
        "## Tools\n"
        "\n"
        "- docker\n"
        "- kubectl\n"
        "\n"
        "_Distilled from a successful tool trajectory (scene 0, messages 3-5)._\n"
    )
    assert render_skill_md(_skill()) == text


def test_render_without_tools_inputs_or_source() -> None:
    text = render_skill_md(
        Skill(name="x", description="", steps=["1. first", "- second", "  "], inputs=[])
    )
    assert "## Tools" not in text
    assert "## Inputs\n\n- (none)\n" in text
    assert "1. first\n2. second\n" in text
    assert text.endswith("_Distilled from a successful tool trajectory._\n")
    assert _front_matter(text) == {"name": "x", "description": "x"}


@pytest.mark.parametrize(
    "description",
    [
        'He said "hi": then left',
        "key: value\nother: thing\n---\nname: evil",
        "line one\r\nline two\u2028three\x85four",
        "# not a comment, {not: a map}, [nor, a list], &anchor *alias !tag | >",
        "'single' and \\backslash\\ and \\u0041",
        "nul\0 bell\x07 del\x7f c1\x9b bom\ufeff nonchar\uffff",
        "yes",
        "null",
        "123",
        "🚀 émoji 部署",
        "",
    ],
)
def test_front_matter_is_valid_yaml(description: str) -> None:
    text = render_skill_md(_skill(name="../evil: name\n---", description=description))
    meta = _front_matter(text)
    assert set(meta) == {"name", "description"}
    assert meta["name"] == skill_slug("../evil: name\n---")
    assert isinstance(meta["description"], str) and meta["description"]
    assert "\n" not in meta["description"]
    if description and description not in ("yes", "null", "123"):
        assert meta["description"].split()[0] == description.split()[0].replace("\0", "")


@settings(max_examples=300, deadline=None)
@given(description=st.text(), name=st.text())
def test_front_matter_property(description: str, name: str) -> None:
    text = render_skill_md(_skill(name=name, description=description))
    meta = _front_matter(text)
    assert meta["name"] == skill_slug(name)
    assert isinstance(meta["description"], str)
    assert 0 < len(meta["description"]) <= 1024
    assert "\n" not in meta["description"]
    if description.strip():
        shown = " ".join(description.split())
        if len(shown) <= 1024 and all(c.isprintable() or c == " " for c in shown):
            assert meta["description"] == shown


@pytest.mark.parametrize(
    "name", ["0", "123", "yes", "No", "null", "true", "off", "0x1f", "2024-01-01"]
)
def test_names_yaml_would_misread_are_quoted(name: str) -> None:
    meta = _front_matter(render_skill_md(_skill(name=name)))
    assert meta["name"] == skill_slug(name)
    assert render_skill_md(_skill(name="plain-name")).startswith("---\nname: plain-name\n")


def test_long_description_is_cut_in_front_matter_only() -> None:
    description = "word " * 500
    text = render_skill_md(_skill(description=description))
    meta = _front_matter(text)
    assert len(meta["description"]) == 1024 and meta["description"].endswith("…")
    assert description.strip() in text


def test_render_uses_the_limit() -> None:
    text = render_skill_md(_skill(name="n" * 100), max_name_chars=20)
    assert _front_matter(text)["name"] == skill_slug("n" * 100, max_chars=20)


# --- config ------------------------------------------------------------------------------------


def test_config_defaults_and_destinations() -> None:
    assert SkillsConfig().output is None
    assert SkillsConfig(output="").output is None
    assert SkillsConfig(output="  ").output is None
    assert SkillsConfig(output="./skills").s3_destination is None
    assert SkillsConfig(output="s3://bucket").s3_destination == ("bucket", "")
    assert SkillsConfig(output="s3://bucket/a/b/").s3_destination == ("bucket", "a/b")
    assert SkillsConfig.model_validate({"output": "s3://b/p"}).s3_destination == ("b", "p")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"output": "s3://"}, "output"),
        ({"output": "s3:///prefix"}, "output"),
        ({"output": "s3://user:secret@bucket/p"}, "output"),
        ({"output": "s3://bucket/../p"}, "output"),
        ({"output": "https://example.com/skills"}, "output"),
        ({"output": "skills\0dir"}, "output"),
        ({"max_name_chars": 0}, "max_name_chars"),
        ({"max_name_chars": 129}, "max_name_chars"),
        ({"outputs": "x"}, "outputs"),
        ({"s3": {"endpoint_url": "ftp://x"}}, "s3"),
    ],
)
def test_config_errors(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field) as caught:
        SkillsConfig.model_validate(data)
    assert "secret" not in str(caught.value)


# --- local writes ------------------------------------------------------------------------------


def test_owners_get_their_own_folders(tmp_path: Path) -> None:
    folder = tmp_path / "skills"
    writer = SkillWriter(SkillsConfig(output=str(folder)))
    paths = {
        owner: writer.write(_skill(name=name, owner=owner))
        for owner, name in (("alice", "Deploy App"), ("bob", "deploy-app!"), ("Alice", "x"))
    }
    assert len(set(paths.values())) == 3
    assert _files(folder) == {
        f"{owner_folder('alice')}/deploy-app/SKILL.md",
        f"{owner_folder('bob')}/deploy-app/SKILL.md",
        f"{owner_folder('Alice')}/x/SKILL.md",
    }
    assert owner_folder("alice") != owner_folder("Alice")
    assert owner_folder("../../etc").startswith("etc-")


def test_a_symlink_planted_as_an_owner_folder_is_refused(tmp_path: Path) -> None:
    folder, outside = tmp_path / "skills", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / owner_folder("mallory")).symlink_to(outside, target_is_directory=True)
    with pytest.raises(SkillWriteError, match="symlink"):
        SkillWriter(SkillsConfig(output=str(folder))).write(_skill(owner="mallory"))
    assert list(outside.iterdir()) == []


def test_write_local(tmp_path: Path) -> None:
    folder = tmp_path / "out" / "skills"
    writer = SkillWriter(SkillsConfig(output=str(folder)))
    where = writer.write(_skill())
    expected = os.path.join(os.path.realpath(folder), "deploy-service", "SKILL.md")
    assert where == expected
    first = Path(expected).read_bytes()
    assert first == render_skill_md(_skill()).encode("utf-8")
    assert writer.write(_skill()) == expected
    assert Path(expected).read_bytes() == first
    assert _files(folder) == {"deploy-service/SKILL.md"}
    writer.close()


def test_no_output_writes_nothing(tmp_path: Path) -> None:
    with SkillWriter(SkillsConfig()) as writer:
        assert writer.write(_skill()) is None


@pytest.mark.parametrize(
    "name",
    [
        "../../outside",
        "../",
        "..",
        "/etc/passwd",
        "C:\\Windows\\evil",
        "nul\0byte/../..",
        ".bashrc",
        "x" * 10_000,
        "~/.ssh/authorized_keys",
        "部署",
    ],
)
def test_hostile_names_stay_in_the_folder(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "skills"
    writer = SkillWriter(SkillsConfig(output=str(folder)))
    where = writer.write(_skill(name=name))
    slug = skill_slug(name)
    assert where == os.path.join(os.path.realpath(folder), slug, "SKILL.md")
    assert _files(tmp_path) == {f"skills/{slug}/SKILL.md"}


def test_symlinked_skill_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "skills"
    outside = tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "SKILL.md").write_text("precious")
    (folder / "deploy-service").symlink_to(outside, target_is_directory=True)
    writer = SkillWriter(SkillsConfig(output=str(folder)))
    with pytest.raises(SkillWriteError, match="deploy-service"):
        writer.write(_skill())
    assert (outside / "SKILL.md").read_text() == "precious"
    assert _files(outside) == {"SKILL.md"}
    # A symlink to another folder inside is refused too (O_NOFOLLOW on the opened folder).
    (folder / "other").mkdir()
    (folder / "other-link").symlink_to(folder / "other", target_is_directory=True)
    with pytest.raises(SkillWriteError, match="symlink or not a folder"):
        writer.write(_skill(name="Other Link"))
    assert _files(folder / "other") == set()


def test_symlinked_skill_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "skills"
    (folder / "deploy-service").mkdir(parents=True)
    outside = tmp_path / "outside.md"
    outside.write_text("precious")
    (folder / "deploy-service" / "SKILL.md").symlink_to(outside)
    writer = SkillWriter(SkillsConfig(output=str(folder)))
    with pytest.raises(SkillWriteError, match="symlink"):
        writer.write(_skill())
    assert outside.read_text() == "precious"
    assert _files(folder / "deploy-service") == {"SKILL.md"}  # no temporary file left


def test_path_fallback_without_dir_fds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where os.open has no dir_fd (Windows), the same checks are made by path.
    import memreader.extraction.skill_files as skill_files

    monkeypatch.setattr(skill_files, "_DIR_FDS", False)
    folder = tmp_path / "skills"
    writer = SkillWriter(SkillsConfig(output=str(folder)))
    where = writer.write(_skill(name="../x"))
    assert where == os.path.join(os.path.realpath(folder), "x", "SKILL.md")
    assert writer.write(_skill(name="../x")) == where
    assert _files(tmp_path) == {"skills/x/SKILL.md"}
    outside = tmp_path / "outside.md"
    outside.write_text("precious")
    (folder / "y").mkdir()
    (folder / "y" / "SKILL.md").symlink_to(outside)
    with pytest.raises(SkillWriteError, match="symlink"):
        writer.write(_skill(name="y"))
    assert outside.read_text() == "precious"


def test_symlinked_output_folder_is_followed(tmp_path: Path) -> None:
    # The operator's own folder may be a symlink: the bundle goes into its real path.
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    where = SkillWriter(SkillsConfig(output=str(tmp_path / "link"))).write(_skill())
    assert where == os.path.join(os.path.realpath(real), "deploy-service", "SKILL.md")


def test_unwritable_destination(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SkillWriteError, match="skills folder") as caught:
        SkillWriter(SkillsConfig(output=str(blocker / "skills"))).write(_skill())
    assert isinstance(caught.value, MemReaderError)
    folder = tmp_path / "skills"
    (folder / "deploy-service").mkdir(parents=True)
    (folder / "deploy-service" / "SKILL.md").mkdir()
    with pytest.raises(SkillWriteError, match=r"SKILL\.md"):
        SkillWriter(SkillsConfig(output=str(folder))).write(_skill())
    assert _files(folder) == set()
    (folder / "plain").write_text("a file where a skill folder goes")
    with pytest.raises(SkillWriteError, match="not a folder"):
        SkillWriter(SkillsConfig(output=str(folder))).write(_skill(name="plain"))


def test_concurrent_writes(tmp_path: Path) -> None:
    folder = tmp_path / "skills"
    writer = SkillWriter(SkillsConfig(output=str(folder)))
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for _ in range(10):
                writer.write(_skill(name=f"skill {index % 4}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert _files(folder) == {f"skill-{i}/SKILL.md" for i in range(4)}
    for i in range(4):
        data = (folder / f"skill-{i}" / "SKILL.md").read_text()
        assert data == render_skill_md(_skill(name=f"skill {i}"))


# --- S3 ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_client(moto_s3: str) -> Any:
    boto3 = pytest.importorskip("boto3")
    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="skills")
    return client


def _s3_config(moto_s3: str, output: str) -> SkillsConfig:
    return SkillsConfig(
        output=output,
        s3={"endpoint_url": moto_s3, "region_name": "us-east-1", "addressing_style": "path"},
    )


@pytest.mark.timeout(60)
def test_write_s3(moto_s3: str, s3_client: Any) -> None:
    writer = SkillWriter(_s3_config(moto_s3, "s3://skills/team/a/"))
    where = writer.write(_skill(name="../../Deploy Service"))
    assert where == "s3://skills/team/a/deploy-service/SKILL.md"
    got = s3_client.get_object(Bucket="skills", Key="team/a/deploy-service/SKILL.md")
    assert got["Body"].read() == render_skill_md(_skill(name="../../Deploy Service")).encode()
    assert got["ContentType"] == "text/markdown; charset=utf-8"
    writer.close()
    # After close, a write builds a new client.
    assert writer.write(_skill(name="Other")) == "s3://skills/team/a/other/SKILL.md"
    writer.close()


@pytest.mark.timeout(60)
def test_write_s3_bucket_root_with_injected_client(moto_s3: str, s3_client: Any) -> None:
    writer = SkillWriter(SkillsConfig(output="s3://skills"), s3_client=s3_client)
    assert writer.write(_skill()) == "s3://skills/deploy-service/SKILL.md"
    writer.close()  # an injected client stays open
    body = s3_client.get_object(Bucket="skills", Key="deploy-service/SKILL.md")["Body"].read()
    assert body == render_skill_md(_skill()).encode()


@pytest.mark.timeout(60)
def test_write_s3_missing_bucket(moto_s3: str, s3_client: Any) -> None:
    writer = SkillWriter(_s3_config(moto_s3, "s3://no-such-bucket/p"))
    with pytest.raises(SkillWriteError, match="no such bucket") as caught:
        writer.write(_skill())
    message = str(caught.value)
    assert "s3://no-such-bucket/p/deploy-service/SKILL.md" in message
    assert "testing" not in message and moto_s3 not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    writer.close()


@pytest.mark.timeout(60)
def test_write_s3_unreachable_endpoint() -> None:
    class Broken:
        def put_object(self, **kwargs: Any) -> None:
            raise ConnectionError("http://user:secret@host/ refused")

    writer = SkillWriter(SkillsConfig(output="s3://b/p"), s3_client=Broken())
    with pytest.raises(SkillWriteError, match="ConnectionError") as caught:
        writer.write(_skill())
    assert "secret" not in str(caught.value)
