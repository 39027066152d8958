"""Every code block in README.md and in the docs site's pages (``docs/**/*.md``) runs as written
(issues 22 and 42), and the site's generated reference pages say what the code does.

Blocks are read from each file's fences (indented ones too). An HTML comment on the line before a
block says how to treat it, ``<!-- readme-test: KIND ARG -->``:

- ``python``: run, each block in its own process (``continue`` joins a block to the one before);
- ``sh``/``bash``: run with ``bash`` (``set -eo pipefail``) without the lines that start with
  ``make``, ``export``, ``pip``, ``llama-server`` or ``ollama`` (CI runs the ``make`` targets; this
  test sets the variables and stands in for the servers); ``serve CONFIG`` starts ``memreader
  serve`` for the block's ``curl`` lines; ``needs FILE`` skips while ``FILE`` is not in the
  repository; ``skip REASON`` skips (each reason is listed in the skip summary);
- ``mcp-client CLIENT`` (any language): an MCP client's configuration of ``memreader mcp``;
  ``tests/mcp/test_mcp_client_snippets.py`` reads it as CLIENT does and starts the server so
  (a shell block is not run here: it calls the client's own command, such as ``claude mcp add``);
- ``yaml``: ``file PATH`` equals that file, ``excerpt PATH`` is a part of it (``…`` lines elided),
  ``reader`` / ``job`` / ``service`` / ``keys`` validate with the model that reads them
  (``reader all-fields`` must also name every field of the simple reader's config); a YAML
  block without a marker fails;
- ``json`` and ``toml`` parse; ``text``/``markdown`` are shown output, checked with ``pipeline``
  (the default reader's steps), ``file`` or ``excerpt``;
- ``ts`` (TypeScript) must be a ``file`` or ``excerpt`` of a file under ``clients/typescript``,
  whose own tests (``npm test``, part of ``make test``) type-check and run it.

The reference pages (configuration, command line, HTTP) are written from the code by
``docs/hooks/`` on every ``mkdocs build`` (``make docs-build``, part of ``make test``, builds the
whole site with ``--strict``); the last tests hold those generators to the code without building
the site: every field, command and route appears, and the site's layout keeps what the build
relies on.

Everything runs in a temporary copy of ``configs/``, ``examples/`` and a small part of MemoryBank,
with ``HF_HUB_OFFLINE=1``, against the scripted LLM server (for llama.cpp at 127.0.0.1:8080, Ollama
at 127.0.0.1:11434 and ``MEMREADER_LLM_BASE_URL``) and moto (``MEMREADER_S3_ENDPOINT``).
"""

from __future__ import annotations

import doctest
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.common import MEMORYBANK_CN, MEMORYBANK_EN
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, ollama_chat, openai_completion
from tests.s3_server import moto_s3
from tests.service_server import free_port

__all__ = ["moto_s3"]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: Pages the site's build writes from the code (docs/hooks/reference_pages.py): links may name
#: them, and they hold no block to run.
GENERATED = {
    "docs/reference/configuration.md",
    "docs/reference/cli.md",
    "docs/reference/http.md",
    "docs/reference/openapi.json",
    "docs/measurements.md",
}
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*readme-test:\s*(\S+)\s*(.*?)\s*-->\s*$")
NOT_RUN = ("make", "export", "pip", "llama-server", "ollama")
MAX_SKIPS = 4  # over README and every page together
EXTRACTION = json.dumps(
    {
        "memory_list": [
            {
                "key": "tea",
                "memory_type": "UserMemory",
                "value": "The user prefers oolong to green tea.",
                "tags": ["tea"],
                "source_ids": [1],
            }
        ],
        "summary": "The user talked about tea.",
    }
)


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int
    kind: str = ""
    arg: str = ""
    source: str = "README.md"

    @property
    def id(self) -> str:
        return f"{self.source}:{self.lang}-line{self.line}"

    @property
    def where(self) -> str:
        return f"{self.source} line {self.line}"


def documents() -> list[Path]:
    """README.md and the site's pages, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def parse_blocks(text: str, source: str = "README.md") -> list[Block]:
    """The fenced blocks of ``text``, each with the marker on the line before it."""
    lines, blocks, i = text.splitlines(), [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, lang = opening.groups()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        body = "".join(line[len(indent) :] + "\n" for line in lines[i + 1 : end])
        before = next((line for line in reversed(lines[:i]) if line.strip()), "")
        marker = MARKER.match(before)
        kind, arg = marker.groups() if marker else ("", "")
        blocks.append(Block(lang, body, i + 1, kind, arg, source))
        i = end + 1
    return blocks


BLOCKS = [
    block
    for path in documents()
    for block in parse_blocks(path.read_text(encoding="utf-8"), _relative(path))
]


def runnable(lang: str) -> list[list[Block]]:
    """Blocks of ``lang``, a ``continue`` block grouped with the ones before it."""
    groups: list[list[Block]] = []
    for block in BLOCKS:
        if block.lang in lang.split("|"):
            if block.kind == "continue" and groups:
                groups[-1].append(block)
            else:
                groups.append([block])
    return groups


def _trimmed(path: Path, users: int = 1, days: int = 3) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    kept = {}
    for name in list(data)[:users]:
        user = dict(data[name])
        user["history"] = dict(list(user["history"].items())[:days])
        kept[name] = user
    return json.dumps(kept, ensure_ascii=False)


def respond(request: RecordedRequest) -> Reply:
    """A memory for an extraction request, an empty verdict for the filter and the rewrite; in
    Ollama's shape when Ollama's path was asked."""
    asked = request.body.decode("utf-8", "replace")
    content = EXTRACTION if "memory_list" in asked else '{"results": []}'
    if request.path.endswith("/api/chat"):
        return Reply(body=ollama_chat(content))
    return Reply(body=openai_completion(content))


@dataclass
class Workspace:
    repo: Path
    env: dict[str, str]
    llm: LLMTestServer

    def adapt(self, text: str) -> str:
        """The text with the local servers' default addresses pointing at the test's."""
        return text.replace("http://127.0.0.1:8080/v1", self.llm.url).replace(
            "http://127.0.0.1:11434", self.llm.ollama_host
        )


def _s3_object(endpoint: str, repo: Path) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="my-bucket")
    body = (repo / "examples" / "files" / "trip_notes.md").read_bytes()
    s3.put_object(Bucket="my-bucket", Key="reports/trip_notes.md", Body=body)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, moto_s3: str) -> Iterator[Workspace]:
    top = tmp_path_factory.mktemp("readme")
    repo = top / "repo"
    for folder in ("configs", "examples"):
        shutil.copytree(ROOT / folder, repo / folder)
    # The data where the configs read it (trimmed: the blocks show how, not how fast).
    data = repo / "data" / "memorybank"
    data.mkdir(parents=True)
    for path in (MEMORYBANK_EN, MEMORYBANK_CN):
        (data / path.name).write_text(_trimmed(path), encoding="utf-8")
    (repo / "out").mkdir()
    (top / ".curlrc").write_text("fail\n", encoding="utf-8")  # an HTTP error fails the block
    _s3_object(moto_s3, repo)
    llm = LLMTestServer().start()
    llm.responder = respond
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MEMREADER_LLM_BASE_URL": llm.url,
        "OLLAMA_HOST": llm.ollama_host,
        "OPENAI_API_KEY": "sk-readme-test",
        "MEMREADER_S3_ENDPOINT": moto_s3,
        "CURL_HOME": str(top),
        "MEMREADER_HOME": str(top / "memreader-home"),  # Memory() blocks: not the real data folder
    }
    try:
        yield Workspace(repo, env, llm)
    finally:
        llm.stop()


def _run(workspace: Workspace, argv: list[str], name: str) -> None:
    result = subprocess.run(
        argv, cwd=workspace.repo, env=workspace.env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, (
        f"{name} exited {result.returncode}\n--- stdout\n{result.stdout[-3000:]}"
        f"\n--- stderr\n{result.stderr[-3000:]}"
    )


def _skip_marked(block: Block) -> None:
    if block.kind == "skip":
        pytest.skip(f"{block.where}: {block.arg}")
    if block.kind == "needs" and not (ROOT / block.arg).exists():
        pytest.skip(f"{block.where}: {block.arg} is not in the repository yet")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("group", runnable("python"), ids=lambda g: g[0].id)
def test_python_block_runs(group: list[Block], workspace: Workspace) -> None:
    _skip_marked(group[0])
    name = re.sub(r"\W", "_", group[0].source.removesuffix(".md"))
    script = workspace.repo / f"block_{name}_{group[0].line}.py"
    script.write_text(workspace.adapt("".join(b.text for b in group)), encoding="utf-8")
    _run(workspace, [sys.executable, str(script)], group[0].where)


def shell_script(text: str) -> str:
    """The block without the lines it shows but does not run."""
    kept = [line for line in text.splitlines() if line.split(" ", 1)[0] not in NOT_RUN]
    return "set -eo pipefail\n" + "\n".join(kept) + "\n"


@pytest.fixture
def served(request: pytest.FixtureRequest, workspace: Workspace) -> Iterator[str | None]:
    """For a ``serve CONFIG`` block: ``memreader serve`` in the background; its address."""
    block: Block = request.param
    if block.kind != "serve":
        yield None
        return
    port = free_port()
    log = (workspace.repo / "out" / f"serve_{port}.log").open("w")
    argv = [str(BIN / "memreader"), "serve", "--config", block.arg, "--port", str(port)]
    server = subprocess.Popen(
        argv, cwd=workspace.repo, env=workspace.env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/healthz", server)
        yield f"localhost:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _wait_healthy(url: str, server: subprocess.Popen[Any], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"memreader serve exited {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("memreader serve did not answer /healthz")


# An MCP client's command line (``claude mcp add ...``) is run by the snippet test, as a client.
SHELL = [group[0] for group in runnable("sh|bash") if group[0].kind != "mcp-client"]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("served", SHELL, ids=lambda b: b.id, indirect=True)
def test_shell_block_runs(
    request: pytest.FixtureRequest, workspace: Workspace, served: Any
) -> None:
    block: Block = request.node.callspec.params["served"]
    _skip_marked(block)
    text = workspace.adapt(block.text)
    if served is not None:
        text = text.replace("localhost:8765", served)
    _run(workspace, ["bash", "-c", shell_script(text)], block.where)


def _reader_config(data: dict[str, Any], all_fields: bool) -> None:
    from memreader import MemReaderConfigFactory, SimpleStructMemReaderConfig

    if "backend" not in data:
        data = {"backend": "simple_struct", **(data if "config" in data else {"config": data})}
    MemReaderConfigFactory.from_dict(data)
    if all_fields:
        missing = set(SimpleStructMemReaderConfig.model_fields) - set(data["config"])
        assert not missing, f"fields missing from the block: {sorted(missing)}"


def _in_file(block: Block) -> None:
    """``file``: the block is the file; ``excerpt``: its lines (``…`` elided) are the file's,
    in order."""
    content = (ROOT / block.arg).read_text(encoding="utf-8")
    if block.kind == "file":
        assert block.text == content, f"{block.where} differs from {block.arg}"
        return
    lines = iter(content.splitlines())
    for wanted in block.text.splitlines():
        if wanted.strip() not in ("…", "> …"):
            assert wanted in lines, f"{block.where}: {wanted!r} not in {block.arg}"


def check_yaml(block: Block) -> None:
    from memreader.batch.job import JobConfig
    from memreader.service.config import ServiceSettings
    from memreader.service.keys import ApiKey

    if block.kind in ("file", "excerpt"):
        _in_file(block)
        return
    data = yaml.safe_load(block.text)
    if block.kind == "reader":
        _reader_config(data, block.arg == "all-fields")
    elif block.kind == "job":
        JobConfig.model_validate(data)
    elif block.kind == "service":
        ServiceSettings.model_validate(data["service"])
    elif block.kind == "keys":
        assert [ApiKey.model_validate(entry) for entry in data["keys"]]
    else:
        raise AssertionError(f"{block.where}: a YAML block needs a readme-test marker")


def check_text(block: Block) -> None:
    if block.kind in ("file", "excerpt"):
        _in_file(block)
    elif block.kind == "pipeline":
        from memreader import MemReaderConfigFactory, MemReaderFactory

        reader = MemReaderFactory.from_config(MemReaderConfigFactory())
        shown = block.text.splitlines()[1:]  # after ">>> print(reader.pipeline)"
        assert shown == str(reader.pipeline).splitlines()


def check_typescript(block: Block) -> None:
    if block.kind not in ("file", "excerpt") or not block.arg.startswith("clients/typescript/"):
        raise AssertionError(
            f"{block.where}: a TypeScript block is a file the client's tests run: mark it "
            "`readme-test: file clients/typescript/...` (or excerpt)"
        )
    _in_file(block)


CHECKED = [b for b in BLOCKS if b.lang in ("yaml", "json", "toml", "text", "markdown", "ts")]


@pytest.mark.parametrize("block", CHECKED, ids=lambda b: b.id)
def test_data_block_is_valid(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-test")
    if block.lang == "yaml":
        check_yaml(block)
    elif block.lang == "json":
        json.loads(block.text)
    elif block.lang == "toml":
        pytest.importorskip("tomllib").loads(block.text)  # Python 3.11+
    elif block.lang == "ts":
        check_typescript(block)
    else:
        check_text(block)


def test_every_block_is_covered() -> None:
    known = {"python", "sh", "bash", "yaml", "json", "toml", "text", "markdown", "ts"}
    unknown = [(b.where, b.lang) for b in BLOCKS if b.lang not in known]
    assert not unknown, f"blocks of no known language (where, language): {unknown}"
    skips = [(b.where, b.arg) for b in BLOCKS if b.kind == "skip"]
    assert all(reason for _, reason in skips), "every skip states its reason"
    assert len(skips) <= MAX_SKIPS, f"skips should stay rare: {skips}"


def slugs(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file (outside code blocks)."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = re.sub(r"<[^>]+>", "", line.lstrip("#").strip()).lower()
            slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
            base, n = slug, 1
            while slug in found:
                slug, n = f"{base}-{n}", n + 1
            found.add(slug)
    return found


def _links(path: Path) -> list[str]:
    text = re.sub(r"(?ms)^\s*```.*?^\s*```\s*$", "", path.read_text(encoding="utf-8"))
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]


def _broken(path: Path) -> list[str]:
    """The links of ``path`` to a file that is not there, or to a heading its target lacks
    (paths relative to the file, as GitHub and the site read them)."""
    broken = []
    for target in _links(path):
        link, _, anchor = target.partition("#")
        file = (path.parent / link).resolve() if link else path
        name = file.relative_to(ROOT).as_posix() if file.is_relative_to(ROOT) else str(file)
        if name in GENERATED:
            continue
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in slugs(file)):
            broken.append(target)
    return broken


@pytest.mark.parametrize("path", documents(), ids=_relative)
def test_links_resolve(path: Path) -> None:
    broken = _broken(path)
    assert not broken, f"links that lead nowhere: {broken}"


def test_readme_is_a_front_door() -> None:
    """README stays short (the rest is the site) and says what memreader is first."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    assert "memory items" in " ".join(lines[:5])


# -- the site's generated reference pages -------------------------------------------------------

HOOKS = ROOT / "docs" / "hooks"
sys.path.insert(0, str(HOOKS))

import cli_reference  # noqa: E402  (docs/hooks/, beside the site's build hook)
import config_reference  # noqa: E402
import docstring_markdown  # noqa: E402


class _Loader(yaml.SafeLoader):
    """mkdocs.yml as data: its ``!!python/...`` tags (the slugify function) read as nothing."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


def _mkdocs() -> dict[str, object]:
    data = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    assert isinstance(data, dict)
    return data


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for entry in nav for page in _nav_pages(entry)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


@pytest.fixture(scope="module")
def config_page() -> str:
    return config_reference.config_reference()


def test_the_docstring_converter_examples_hold() -> None:
    assert doctest.testmod(docstring_markdown).failed == 0


def test_every_field_of_every_reader_config_is_in_the_configuration_reference(
    config_page: str,
) -> None:
    from memreader.readers import READERS

    page = config_page
    for name in READERS.names():
        model = READERS.get(name).config_class
        assert f"### {model.__name__} " in page
        for field in model.model_fields:
            assert f"| `{field}` |" in page, f"{model.__name__}.{field}"


def test_nested_models_are_documented_and_linked(config_page: str) -> None:
    from memreader.config import FineConfig

    page = config_page
    assert "[FineConfig](#model-fineconfig)" in page
    assert "{#model-fineconfig}" in page
    for field in FineConfig.model_fields:
        assert f"| `{field}` |" in page


def test_every_command_is_in_the_cli_reference() -> None:
    from memreader.cli import build_parser

    page = cli_reference.cli_reference()
    for name in cli_reference._subcommands(build_parser()):
        assert f"## `memreader {name}`" in page
    assert "usage: memreader search" in page


def test_every_route_is_in_the_http_reference() -> None:
    pytest.importorskip("fastapi")
    import http_reference

    document = http_reference.openapi_document()
    page = http_reference.http_reference()
    for path, methods in document["paths"].items():
        for method in methods:
            assert f"### `{method.upper()} {path}`" in page


def test_every_page_is_in_the_nav() -> None:
    """A page under docs/ is in the nav, generated, hidden on purpose, or not a page (hooks/,
    the Markdown memory shown as files): none waits somewhere unread."""
    config = _mkdocs()
    listed = set(_nav_pages(config["nav"]))
    generated = {"reference/configuration.md", "reference/cli.md", "reference/http.md"}
    generated.add("measurements.md")
    written = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    hidden = {"moved_modules.md"}
    excluded = tuple(str(config["exclude_docs"]).split())
    in_build = {p for p in written if not p.startswith(excluded)}
    assert not in_build - hidden - listed, "pages missing from the nav"
    assert generated <= listed
    assert set(excluded) == {"hooks/", "memory_example/"}


def test_the_site_fetches_nothing_when_read() -> None:
    """No web fonts (Material loads Google's by default) and no plugin that downloads."""
    config = _mkdocs()
    theme = config["theme"]
    assert isinstance(theme, dict) and theme["font"] is False
    plugins = [next(iter(p)) if isinstance(p, dict) else p for p in config["plugins"]]  # type: ignore[attr-defined]
    assert not {"social", "privacy", "optimize"} & set(plugins)
