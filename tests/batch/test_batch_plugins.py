"""Batch input formats and sinks from a plugin package, found through the ``memreader.plugins``
entry points (a real distribution written to a temporary folder): a CSV input format, a sink
that writes no item files (it counts), and a file sink with its own encoder; jobs that name
them run end to end."""

from __future__ import annotations

import csv
import importlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from memreader.batch.formats import FORMATS
from memreader.batch.inputs import Inputs
from memreader.batch.job import JobConfig, load_job
from memreader.batch.job_run import run_job
from memreader.batch.plan import inputs_spec
from memreader.batch.sinks import SINKS, output_stem
from memreader.errors import ConfigError
from memreader.registry import PLUGIN_GROUP, load_plugins
from tests.batch.jobs import output_items, write_job

pytestmark = pytest.mark.timeout(300)

PLUGIN = '''
import csv
import io

from memreader.batch.formats import Format, checked_scene, input_ids, register_format
from memreader.batch.sinks import InputWriter, Sink, output_stem, register_sink
from memreader.batch.sinks.files import EncodedFile, Encoder, FileSink


@register_format("plugin-csv")
class CsvFormat(Format):
    """A header row, then one scene per row: its question and its answer."""

    def read(self, opened, spec):
        rows = csv.DictReader(io.StringIO(opened.read_all().decode("utf-8")))
        for i, row in enumerate(rows):
            def scene(row=row):
                messages = [
                    {"role": "user", "content": row["question"]},
                    {"role": "assistant", "content": row["answer"]},
                ]
                return messages, input_ids(spec, opened, row)

            yield checked_scene(i, f"row {i + 2}", scene)


class Counter(InputWriter):
    def __init__(self, folder, key):
        super().__init__()
        self.folder, self.key = folder, key

    def write(self, item):
        self.items += 1

    def commit(self):
        return [self.folder.write_text(f"{output_stem(self.key)}.count", str(self.items))]

    def discard(self):
        pass


@register_sink("plugin-count")
class CountSink(Sink):
    """Items counted, not kept: one small file per input says how many."""

    def open_input(self, key):
        return Counter(self.folder, key)


class CsvFile(EncodedFile):
    def __init__(self, path):
        self.handle = open(path, "w", newline="", encoding="utf-8")
        self.writer = csv.writer(self.handle)
        self.writer.writerow(["id", "user_id", "memory"])

    def write(self, entry, line):
        self.writer.writerow(entry)

    def finish(self):
        self.handle.close()

    def abandon(self):
        self.handle.close()


class CsvEncoder(Encoder):
    extension = "csv"
    content_type = "text/csv; charset=utf-8"

    def prepare(self, item, line):
        return [item["id"], item["metadata"]["user_id"], item["memory"]]

    def open(self, path):
        return CsvFile(path)


@register_sink("plugin-csv")
class CsvSink(FileSink):
    encoder = CsvEncoder
'''

ROWS = [
    {"customer": "c1", "question": "Do you ship to Oslo?", "answer": "Yes, in three days."},
    {"customer": "c1", "question": "I prefer green tea.", "answer": "Noted."},
    {"customer": "c2", "question": "My cat is called Miso.", "answer": "Lovely name."},
]


@pytest.fixture
def plugin_package(tmp_path: Path) -> Iterator[Path]:
    """A distribution ``memreader-batch-plugin`` whose ``memreader.plugins`` entry point
    registers the format and the sinks, on ``sys.path`` for the test; forgotten afterwards."""
    site = tmp_path / "site"
    (site / "memreader_batch_plugin").mkdir(parents=True)
    (site / "memreader_batch_plugin" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "memreader_batch_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memreader-batch-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(f"""
            [{PLUGIN_GROUP}]
            batch-plugin = memreader_batch_plugin
        """),
        encoding="utf-8",
    )
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("memreader_batch_plugin", None)
        FORMATS.unregister("plugin-csv")
        SINKS.unregister("plugin-count")
        SINKS.unregister("plugin-csv")
        importlib.invalidate_caches()
        load_plugins(force=True)


def _csv_job(folder: Path, sink: str) -> JobConfig:
    with (folder / "support.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["customer", "question", "answer"])
        writer.writeheader()
        writer.writerows(ROWS)
    spec = {
        "inputs": [
            {
                "path": "support.csv",
                "format": "plugin-csv",
                "user_id": {"from": "field", "field": "customer"},
            }
        ],
        "output": {"path": "out", "format": sink},
    }
    return load_job(write_job(folder, spec))


def test_a_plugin_brings_an_input_format_and_sinks(plugin_package: Path) -> None:
    assert "batch-plugin" not in load_plugins(force=True)
    assert "plugin-csv" in FORMATS.names()
    assert {"plugin-count", "plugin-csv"} <= set(SINKS.names())

    # Read with the plugin's format, into the plugin's sink that writes no item files.
    job = _csv_job(plugin_package, "plugin-count")
    summary = run_job(job)
    assert summary.exit_code == 0 and summary.read == 1
    assert summary.counts["scenes"] == len(ROWS) and summary.counts["items"] > 0
    count_file = plugin_package / "out" / f"{output_stem('support.csv')}.count"
    assert count_file.read_text() == str(summary.counts["items"])
    manifest = json.loads((plugin_package / "out" / "_manifest.json").read_text())
    assert manifest["inputs"]["support.csv"]["outputs"] == [str(count_file)]
    assert run_job(job).skipped == 1, "resume works for any sink"

    # The plugin's file sink: its own encoding, the shared atomic publishing.
    job = _csv_job(plugin_package, "plugin-csv")
    summary = run_job(job, restart=True)
    csv_file = plugin_package / "out" / f"{output_stem('support.csv')}.csv"
    with csv_file.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == summary.counts["items"] > 0
    assert {row["user_id"] for row in rows} == {"c1", "c2"}

    # Written anew as JSONL, the input's file in the plugin's format is removed.
    job = job.model_copy(update={"output": job.output.model_copy(update={"format": "jsonl"})})
    summary = run_job(job, restart=True)
    assert not csv_file.exists()
    assert len(output_items(plugin_package / "out")) == summary.counts["items"]


def test_unknown_names_list_the_known_ones_plugins_included(plugin_package: Path) -> None:
    load_plugins(force=True)
    with pytest.raises(ConfigError, match=r"inputs\.0\.format: .*unknown input format 'xml'"):
        JobConfig.model_validate(
            {"inputs": [{"path": "a", "format": "xml"}], "output": {"path": "o"}}
        )
    with pytest.raises(ConfigError) as caught:
        JobConfig.model_validate(
            {"inputs": [{"path": "a"}], "output": {"path": "o", "format": "db"}}
        )
    message = str(caught.value)
    assert "output.format" in message and "unknown sink 'db'" in message
    assert "jsonl, markdown, parquet, plugin-count, plugin-csv" in message


def test_a_chat_format_in_a_doc_job_is_refused(plugin_package: Path) -> None:
    load_plugins(force=True)
    job = JobConfig.model_validate(
        {
            "type": "doc",
            "inputs": [{"path": "a.csv", "format": "plugin-csv"}],
            "output": {"path": "o"},
        }
    )
    with pytest.raises(ConfigError, match=r"inputs\.0\.format: a doc job reads every input"):
        Inputs(inputs_spec(job))
