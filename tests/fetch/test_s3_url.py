"""The one ``s3://`` parser (memreader.transport.s3): which URLs it takes and which it refuses,
and the same answer from every place an operator writes one (a batch input or output, the
skills folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memreader.batch.inputs import Inputs
from memreader.batch.job import JobConfig, OutputSpec
from memreader.batch.plan import inputs_spec
from memreader.batch.sinks import build_sink
from memreader.errors import ConfigError
from memreader.extraction.skills import SkillsConfig
from memreader.fetch.settings import S3Config
from memreader.transport.s3 import S3Url, is_s3_url, parse_s3_url

BUCKET_255 = "b" * 255


@pytest.mark.parametrize(
    ("url", "bucket", "prefix"),
    [
        ("s3://bucket", "bucket", ""),
        ("s3://bucket/", "bucket", ""),
        ("S3://Bucket/a/b/", "Bucket", "a/b"),
        ("s3://my.bucket-1_x/deep/er/", "my.bucket-1_x", "deep/er"),
        ("s3://b//x/", "b", "x"),  # outer slashes go, whatever their number
        ("s3://b/a.b/..c/c..", "b", "a.b/..c/c.."),  # dots inside a segment are a name
        (f"s3://{BUCKET_255}/p", BUCKET_255, "p"),
    ],
)
def test_prefixes_it_takes(url: str, bucket: str, prefix: str) -> None:
    parsed = parse_s3_url(url, prefix=True)
    assert parsed == S3Url(bucket, prefix)
    assert str(parsed) == (f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}")
    assert parsed.child("x.json") == (f"{prefix}/x.json" if prefix else "x.json")


REFUSED = [
    "s3://",  # no bucket
    "s3:///prefix",
    "s3://-bad/p",  # not a bucket name
    "s3://.bad",
    "s3://buck et/p",
    "s3://user:secret@bucket/p",  # credentials are not a bucket (and never quoted)
    f"s3://{BUCKET_255}b/p",  # 256 characters
    "s3://b/../x",  # dot segments
    "s3://b/a/./c",
    "s3://b/a/..",
    "s3://b/a//c",  # an empty segment
    "s3://b/a\\c",  # a backslash
]


@pytest.mark.parametrize("url", REFUSED)
def test_prefixes_it_refuses_without_quoting_them(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_s3_url(url, prefix=True)
    message = str(caught.value)
    assert "secret" not in message
    assert url == "s3://" or url not in message


@pytest.mark.parametrize("url", ["gs://b/x", "https://b/x", "s3:/b/x", "b/x", ""])
def test_other_urls_are_not_s3(url: str) -> None:
    assert not is_s3_url(url)
    with pytest.raises(ConfigError, match="not an s3:// URL"):
        parse_s3_url(url)


def test_an_objects_key_is_kept_as_written() -> None:
    assert parse_s3_url("s3://b/a//c/") == S3Url("b", "a//c/")
    assert parse_s3_url("s3://b/../x") == S3Url("b", "../x")  # the fetcher's allow-list refuses
    assert parse_s3_url("s3://b") == S3Url("b", "")
    for url in ("s3:///k", "s3://-x/k"):
        with pytest.raises(ConfigError):
            parse_s3_url(url)


@pytest.mark.parametrize("url", [*REFUSED, "gs://b/x"])
def test_every_operator_url_is_held_to_the_same_rules(url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^output\.path"):
        build_sink(OutputSpec(path=url), s3=S3Config())
    with pytest.raises(ConfigError, match="output"):
        SkillsConfig(output=url)
    job = JobConfig.model_validate(
        {"inputs": [{"path": url}], "output": {"path": "out"}, "base_dir": str(tmp_path)}
    )
    with pytest.raises(ConfigError, match=r"^inputs\.0\.path"):
        Inputs(inputs_spec(job)).discover()
    output_job = JobConfig.model_validate(
        {"inputs": [{"path": "in"}], "output": {"path": url}, "base_dir": str(tmp_path)}
    )
    if is_s3_url(url):
        with pytest.raises(ConfigError, match=r"^output\.path"):
            output_job.output_location()
