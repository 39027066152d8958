"""Content is not the operator: what a chat, a document or a part may reach outside the call.

Nothing that arrives as content reads S3 buckets, local files (hidden ones above all) or Python
modules unless the operator named them in config: ``fetch.s3.allow_buckets``,
``allow_local_paths``/``allowed_roots``/``allow_hidden_files`` (``--allow-root`` on the command
line), ``pipeline.allow_imports``. What the operator names on the command line or in a batch
job's ``inputs``/``output`` keeps working.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from memreader import (
    BlockedBucketError,
    ConfigError,
    DocumentError,
    MemReaderConfigFactory,
    MemReaderFactory,
    ReadReport,
    cli,
)
from memreader.cli import read as cli_read
from memreader.documents import DocumentAccess, normalize_doc
from memreader.errors import InputError
from memreader.fetch.fetcher import Fetcher
from memreader.fetch.settings import FetchConfig, FetchS3Config
from memreader.pipeline import Step
from memreader.readers import MultiModalStructMemReader, MultiModalStructMemReaderConfig
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.spec import build_step
from memreader.steps.state import ReadState
from tests.common import HASH_EMBEDDER, INFO
from tests.s3_server import moto_s3

__all__ = ["moto_s3"]

pytestmark = pytest.mark.timeout(120)

PDF = b"%PDF-1.4\n% fake pdf body\n%%EOF\n"
SECRET = "aws_secret_access_key = SECRETSECRETSECRET"


# -- 1. S3 from content: only named buckets and prefixes ------------------------------------------


@pytest.fixture(scope="module")
def s3(moto_s3: str) -> str:
    import boto3

    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="public-docs")
    client.create_bucket(Bucket="other-bucket")
    client.put_object(
        Bucket="public-docs",
        Key="team/notes.txt",
        Body=b"Emily likes oolong.",
        ContentType="text/plain",
    )
    client.put_object(
        Bucket="public-docs", Key="hr/salaries.txt", Body=SECRET.encode(), ContentType="text/plain"
    )
    client.put_object(
        Bucket="other-bucket", Key="key.txt", Body=SECRET.encode(), ContentType="text/plain"
    )
    return moto_s3


def s3_settings(endpoint: str, **s3: Any) -> dict[str, Any]:
    return {"s3": {"endpoint_url": endpoint, "addressing_style": "path", **s3}, "max_retries": 0}


def test_s3_from_content_is_refused_by_default(s3: str) -> None:
    with Fetcher(FetchConfig(**s3_settings(s3)), max_bytes=1000) as fetcher:
        with pytest.raises(BlockedBucketError) as caught:
            fetcher.fetch("s3://other-bucket/key.txt")
        assert fetcher.stats["fetched"] == 0
    message = str(caught.value)
    assert "s3://other-bucket/key.txt" in message
    assert "'other-bucket'" in message and "fetch.s3.allow_buckets" in message


def test_s3_allow_buckets_names_buckets_and_prefixes(s3: str) -> None:
    config = FetchConfig(**s3_settings(s3, allow_buckets=["s3://public-docs/team/"]))
    with Fetcher(config, max_bytes=1000) as fetcher:
        assert fetcher.fetch("s3://public-docs/team/notes.txt").data == b"Emily likes oolong."
        with pytest.raises(BlockedBucketError, match="outside the prefixes"):
            fetcher.fetch("s3://public-docs/hr/salaries.txt")
        with pytest.raises(BlockedBucketError, match=r"'\.' or '\.\.' segments"):
            fetcher.fetch("s3://public-docs/team/../hr/salaries.txt")
        with pytest.raises(BlockedBucketError, match="'other-bucket' is not in"):
            fetcher.fetch("s3://other-bucket/key.txt")
    whole = FetchConfig(**s3_settings(s3, allow_buckets=["public-docs"]))
    with Fetcher(whole, max_bytes=1000) as fetcher:
        assert fetcher.fetch("s3://public-docs/hr/salaries.txt").data == SECRET.encode()


@pytest.mark.parametrize("entry", ["*", "s3://", "/key", "bucket/a/../b", "buck et"])
def test_bad_allow_buckets_entries_are_config_errors(entry: str) -> None:
    with pytest.raises(ValueError, match="allow_buckets"):
        FetchS3Config(allow_buckets=[entry])


def test_a_chat_part_and_a_doc_naming_another_bucket_become_no_items(s3: str) -> None:
    reader = MultiModalStructMemReader(
        MultiModalStructMemReaderConfig(embedder=HASH_EMBEDDER, fetch=s3_settings(s3))
    )
    chat = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see this"},
                {"type": "file", "file": {"url": "s3://other-bucket/key.txt"}},
            ],
        }
    ]
    report = ReadReport()
    [items] = reader.get_memory([chat], type="chat", info=INFO, report=report)
    assert all("SECRETSECRET" not in item.memory for item in items)
    [part] = report.parts
    assert part.status == "error" and part.error_type == "BlockedBucketError"
    report = ReadReport()
    [items] = reader.get_memory(["s3://other-bucket/key.txt"], type="doc", info=INFO, report=report)
    assert all("SECRETSECRET" not in item.memory for item in items)
    assert [p.error_type for p in report.parts] == ["BlockedBucketError"]


def test_an_s3_document_named_on_the_command_line_is_the_operators(
    tmp_path: Path, s3: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = cli.build_parser()
    config = cli_read.reader_config(
        parser.parse_args(["read", "s3://public-docs/hr/salaries.txt", "--type", "doc"])
    )
    assert config.config.fetch.s3.allow_buckets == ["public-docs/hr/salaries.txt"]  # type: ignore[attr-defined]
    cfg = tmp_path / "reader.yaml"
    cfg.write_text(yaml.safe_dump({"config": {"embedder": None, "fetch": s3_settings(s3)}}))
    code = cli.main(
        ["read", "s3://public-docs/team/notes.txt", "--type", "doc", "--config", str(cfg), "--json"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    [item] = [json.loads(line) for line in captured.out.splitlines()]
    assert item["memory"] == "Emily likes oolong."


# -- 3. A config file that names modules is code ---------------------------------------------------


class Shout(Step):
    """A step class for ``tests.test_content_reach:Shout``."""

    name = "shout"
    requires = ("items",)
    produces = ("items",)

    def __init__(self, tag: str = "shout") -> None:
        self.tag = tag

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        for items in state.items:
            for item in items:
                item.metadata.tags.append(self.tag)


def make_tagger(tag: str) -> Step:
    """A step factory, registered below (so a ``module:attr`` reference may name it)."""
    return Shout(tag)


def unregistered_factory(tag: str) -> Step:
    return Shout(tag)


STEPS.register("content_reach_tagger", make_tagger)


def reader_config(marker: Path, *, allow_imports: bool | None = None) -> dict[str, Any]:
    pipeline: dict[str, Any] = {
        "insert_after": {"parse": [{"step": "os:system", "config": {"command": f"touch {marker}"}}]}
    }
    if allow_imports is not None:
        pipeline["allow_imports"] = allow_imports
    return {"backend": "simple_struct", "config": {"embedder": HASH_EMBEDDER, "pipeline": pipeline}}


@pytest.mark.parametrize("allow_imports", [None, True])
def test_a_config_naming_os_system_calls_nothing(
    tmp_path: Path, allow_imports: bool | None
) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(ConfigError) as caught:
        MemReaderFactory.from_config(
            MemReaderConfigFactory.from_dict(reader_config(marker, allow_imports=allow_imports))
        )
    assert not marker.exists(), "os.system ran"
    message = str(caught.value)
    assert "'os:system'" in message
    if allow_imports:
        assert "not a Step subclass" in message and "it was not called" in message
    else:
        assert "pipeline.allow_imports: true" in message


def test_read_config_and_ingest_dry_run_call_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "pwned"
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hello"}]))
    config = tmp_path / "reader.yaml"
    config.write_text(yaml.safe_dump(reader_config(marker)))
    assert cli.main(["read", str(chat), "--config", str(config)]) == 2
    assert "pipeline.allow_imports: true" in capsys.readouterr().err
    assert not marker.exists(), "os.system ran"
    job = tmp_path / "job.yaml"
    job.write_text(
        yaml.safe_dump(
            {
                "reader": reader_config(marker),
                "inputs": [{"path": "chat.json"}],
                "output": {"path": "out"},
            }
        )
    )
    assert cli.main(["ingest", str(job), "--dry-run"]) == 2
    assert "pipeline.allow_imports: true" in capsys.readouterr().err
    assert not marker.exists(), "os.system ran"


def test_module_steps_need_the_switch_and_must_be_steps() -> None:
    from memreader.config import StepSpec

    spec = StepSpec(step="tests.test_content_reach:Shout", config={"tag": "x"})
    with pytest.raises(ConfigError, match="allow_imports"):
        build_step(spec)
    step = build_step(spec, allow_imports=True)
    assert isinstance(step, Shout) and step.tag == "x"
    factory = StepSpec(step="tests.test_content_reach:make_tagger", config={"tag": "y"})
    assert build_step(factory, allow_imports=True).tag == "y"  # type: ignore[attr-defined]
    unregistered = StepSpec(step="tests.test_content_reach:unregistered_factory")
    with pytest.raises(ConfigError, match=r"the callable .*unregistered_factory"):
        build_step(unregistered, allow_imports=True)
    # A registered name needs no switch.
    assert build_step(StepSpec(step="content_reach_tagger", config={"tag": "z"})).tag == "z"  # type: ignore[attr-defined]


# -- 4. Local files: only under named roots, never hidden ones ------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A folder that looks like $HOME: a chat beside dot-files that hold secrets."""
    root = tmp_path / "home"
    (root / ".aws").mkdir(parents=True)
    (root / ".aws" / "credentials").write_text(SECRET)
    (root / ".env").write_text(SECRET)
    (root / "notes.txt").write_text("tea at four")
    (root / "link.txt").symlink_to(root / ".env")
    yield root


def hostile_chat(home: Path) -> Path:
    chat = [
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "my files"},
                    {"type": "file", "file": {"path": "notes.txt"}},
                    {"type": "file", "file": {"path": ".aws/credentials"}},
                    {"type": "file", "file": {"path": ".env"}},
                    {"type": "file", "file": {"path": "link.txt"}},
                ],
            }
        ]
    ]
    path = home / "chat.json"
    path.write_text(json.dumps(chat))
    return path


def run_read(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = cli.main(["read", *args, "--reader", "multimodal_struct", "--no-embedding", "--json"])
    captured = capsys.readouterr()
    [item] = [json.loads(line) for line in captured.out.splitlines()]
    return code, item, captured.err


def test_the_cli_reads_nothing_beside_a_chat_without_allow_root(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, item, _ = run_read(capsys, str(hostile_chat(home)))
    assert code == 1, "parts were refused: something failed"
    assert "SECRETSECRET" not in item["memory"] and "tea at four" not in item["memory"]
    assert "local paths are disabled" in item["memory"]


def test_allow_root_reads_files_but_never_hidden_ones(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = hostile_chat(home)
    code, item, _ = run_read(capsys, str(chat), "--allow-root", str(home))
    assert code == 1, "the hidden files were refused: something failed"
    assert "tea at four" in item["memory"]
    assert "SECRETSECRET" not in item["memory"]
    assert item["memory"].count("is hidden") == 3  # .aws/credentials, .env, link.txt -> .env
    config = tmp_path / "reader.yaml"
    config.write_text("config: {allow_hidden_files: true}\n")
    code, item, _ = run_read(capsys, str(chat), "--allow-root", str(home), "--config", str(config))
    assert code == 0 and "SECRETSECRET" in item["memory"], "allowed explicitly"


def test_allow_root_must_exist(tmp_path: Path) -> None:
    args = cli.build_parser().parse_args(["read", "x.json", "--allow-root", str(tmp_path / "nope")])
    with pytest.raises(InputError, match=r"--allow-root .*nope: no such file or folder"):
        cli_read.reader_config(args)


def test_the_fetcher_refuses_hidden_files_with_roots_or_without(home: Path) -> None:
    for roots in ([str(home)], []):
        fetcher = Fetcher(
            FetchConfig(),
            access=DocumentAccess(allow_local_paths=True, allowed_roots=roots, max_file_bytes=1000),
            base_dir=str(home),
        )
        assert fetcher.fetch("notes.txt").data == b"tea at four"
        for ref in (".env", ".aws/credentials", "link.txt", str(home / ".aws" / "credentials")):
            with pytest.raises(DocumentError, match="is hidden"):
                fetcher.fetch(ref)
    hidden_ok = Fetcher(
        FetchConfig(),
        access=DocumentAccess(
            allow_local_paths=True, allowed_roots=[str(home)], allow_hidden_files=True
        ),
    )
    assert hidden_ok.fetch(str(home / ".env")).data == SECRET.encode()
    # A root that is itself hidden was named on purpose: what lies below it may be read.
    aws = Fetcher(
        FetchConfig(),
        access=DocumentAccess(allow_local_paths=True, allowed_roots=[str(home / ".aws")]),
    )
    assert aws.fetch(str(home / ".aws" / "credentials")).data == SECRET.encode()


def test_documents_refuse_hidden_files_in_every_reader(home: Path) -> None:
    with pytest.raises(DocumentError, match="is hidden"):
        normalize_doc(
            [str(home / ".env")], DocumentAccess(allow_local_paths=True, allowed_roots=[str(home)])
        )
    with pytest.raises(DocumentError, match="is hidden"):
        normalize_doc(
            [[{"type": "file", "file": {"path": str(home / ".aws" / "credentials")}}]],
            DocumentAccess(allow_local_paths=True),
        )
    [scene] = normalize_doc(
        [str(home / ".env")],
        DocumentAccess(allow_local_paths=True, allowed_roots=[str(home)], allow_hidden_files=True),
    )
    assert scene.messages[0].parts[0].text == SECRET
    reader = MemReaderFactory.from_config(
        MemReaderConfigFactory.from_dict(
            {
                "backend": "simple_struct",
                "config": {"embedder": HASH_EMBEDDER, "allow_local_paths": True},
            }
        )
    )
    with pytest.raises(DocumentError, match="is hidden"):
        reader.get_memory([str(home / ".env")], type="doc", info=INFO)
    assert os.path.exists(home / ".env")
