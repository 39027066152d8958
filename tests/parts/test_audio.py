"""Audio transcription through an OpenAI-compatible endpoint (memreader.parts.audio), against
the scripted test server over real HTTP: success, retries, final errors, limits, the deadline,
and the API key kept out of every message and log line."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from memreader.errors import DocumentError, TranscriptionError
from memreader.parts.audio import Transcriber, audio_format
from memreader.parts.settings import TranscriptionConfig
from memreader.transport import RetryPolicy
from tests.llm_server import LLMTestServer, Reply, fault, finishes_within, llm_server, openai_error

__all__ = ["llm_server"]

KEY = "sk-test-SECRET-0123456789"
AUDIO = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(256)) * 4


def no_wait(max_retries: int = 2) -> RetryPolicy:
    return RetryPolicy(max_retries=max_retries, backoff_base=0.0, sleep=lambda _: None)


@pytest.fixture
def make(llm_server: LLMTestServer) -> Iterator[Any]:
    made: list[Transcriber] = []

    def build(*, retries: int = 2, **settings: Any) -> Transcriber:
        values: dict[str, Any] = {"model": "whisper-test", "base_url": llm_server.url}
        values.update(settings)
        transcriber = Transcriber(TranscriptionConfig(**values), retry=no_wait(retries))
        made.append(transcriber)
        return transcriber

    yield build
    for transcriber in made:
        transcriber.close()


def test_success_records_model_file_and_fields(make: Any, llm_server: LLMTestServer) -> None:
    transcriber = make(api_key=KEY, language="pt")
    text = transcriber.transcribe(AUDIO, filename="memo.wav")
    assert text == f"<transcript of {len(AUDIO)} bytes>"
    [request] = llm_server.requests
    assert request.api == "openai_audio"
    assert request.path == "/v1/audio/transcriptions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    form = request.form
    assert form["model"].text == "whisper-test"
    assert form["response_format"].text == "json"
    assert form["language"].text == "pt"
    assert form["file"].value == AUDIO
    assert form["file"].filename == "memo.wav"
    assert form["file"].content_type == "audio/wav"


def test_scripted_text_plain_and_empty_answers(make: Any, llm_server: LLMTestServer) -> None:
    llm_server.script(
        [
            "  hello there  ",
            Reply(body="plain words\n"),  # text/plain: servers that ignore response_format
            {"text": ""},
            {"text": None},
        ]
    )
    transcriber = make()
    results = [transcriber.transcribe(AUDIO, filename="a.mp3") for _ in range(4)]
    assert results == ["hello there", "plain words", "", ""]
    assert "authorization" not in llm_server.requests[0].headers  # no key: none sent


def test_file_name_is_made_safe_and_given_the_codec_extension(
    make: Any, llm_server: LLMTestServer
) -> None:
    make().transcribe(AUDIO, filename='../../etc/voice "memo"', media_type="audio/mpeg")
    part = llm_server.requests[0].form["file"]
    assert part.filename == "voice _memo.mp3"
    assert part.content_type == "audio/mpeg"
    assert part.value == AUDIO


@pytest.mark.parametrize("first", [fault("http_500"), fault("http_429"), fault("reset")])
def test_transient_failure_is_retried(make: Any, llm_server: LLMTestServer, first: Reply) -> None:
    llm_server.script([first, "second time lucky"])
    assert make().transcribe(AUDIO, filename="a.wav") == "second time lucky"
    assert len(llm_server.requests) == 2


def test_retries_run_out(make: Any, llm_server: LLMTestServer) -> None:
    llm_server.script([fault("http_503_text")] * 3)
    with pytest.raises(TranscriptionError, match=r"after 3 attempts: HTTP 503 .*unavailable"):
        make(retries=2).transcribe(AUDIO, filename="a.wav")
    assert len(llm_server.requests) == 3


def test_client_error_is_final(make: Any, llm_server: LLMTestServer) -> None:
    llm_server.script([Reply(status=400, body=openai_error("Invalid file format."))])
    with pytest.raises(TranscriptionError) as caught:
        make().transcribe(AUDIO, filename="a.wav", where={"scene": 0, "message": 1, "part": 2})
    error = caught.value
    assert isinstance(error, DocumentError)
    assert "HTTP 400" in str(error) and "Invalid file format." in str(error)
    assert (error.scene_index, error.message_index, error.part_index) == (0, 1, 2)
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (fault("not_json"), "not valid JSON"),
        (fault("html_200"), "neither JSON nor plain text"),
        (fault("json_list"), "not a transcript"),
        (Reply(body={"transcript": "x"}), "not a transcript"),
        (fault("bad_utf8"), "UTF-8"),
    ],
)
def test_garbled_answer_is_an_error(
    make: Any, llm_server: LLMTestServer, reply: Reply, message: str
) -> None:
    llm_server.script([reply, reply])
    with pytest.raises(TranscriptionError, match=message):
        make(retries=1).transcribe(AUDIO, filename="a.wav")
    assert len(llm_server.requests) == 2  # unreadable answers are retried, like the LLMs'


def test_over_max_bytes_is_refused_before_any_request(make: Any, llm_server: LLMTestServer) -> None:
    with pytest.raises(TranscriptionError, match=r"over the limit of 100 bytes"):
        make(max_bytes=100).transcribe(b"x" * 101, filename="a.wav")
    with pytest.raises(TranscriptionError, match="empty"):
        make().transcribe(b"", filename="a.wav")
    assert llm_server.requests == []


def test_hanging_server_ends_at_the_deadline(make: Any, llm_server: LLMTestServer) -> None:
    llm_server.script([fault("hang", stall=30)])
    transcriber = make(retries=0, timeout_s=0.5)
    # The typed error naming the deadline is what ended it (the stall lasts 30 s), one request
    # was sent; the 60 s only bounds a hang (no test asserts a time).
    with pytest.raises(TranscriptionError, match=r"within 0.5s"):
        finishes_within(60, lambda: transcriber.transcribe(AUDIO, filename="a.wav"))
    assert len(llm_server.requests) == 1


def test_trickling_answer_ends_at_the_deadline(make: Any, llm_server: LLMTestServer) -> None:
    llm_server.script([fault("trickle_body", trickle=0.05)])
    transcriber = make(retries=0, timeout_s=0.5)
    with pytest.raises(TranscriptionError, match=r"within 0.5s"):
        finishes_within(60, lambda: transcriber.transcribe(AUDIO, filename="a.wav"))
    assert len(llm_server.requests) == 1


def test_endless_answer_stops_at_the_response_cap(make: Any, llm_server: LLMTestServer) -> None:
    llm_server.script([fault("endless_body", trickle=0.0)])
    transcriber = make(retries=2, max_response_bytes=200, timeout_s=10)
    with pytest.raises(TranscriptionError, match="max_response_bytes"):
        finishes_within(60, lambda: transcriber.transcribe(AUDIO, filename="a.wav"))
    assert len(llm_server.requests) == 1  # too large is final


def test_api_key_never_appears_in_errors_or_logs(
    make: Any, llm_server: LLMTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo = openai_error(f"Incorrect API key provided: {KEY}.", kind="invalid_request_error")
    llm_server.script([Reply(status=500, body=echo), Reply(status=401, body=echo)])
    caplog.set_level(logging.DEBUG)
    with pytest.raises(TranscriptionError) as caught:
        make(api_key=KEY).transcribe(AUDIO, filename="a.wav")
    text = str(caught.value)
    assert "HTTP 401" in text and "Incorrect API key provided: ***" in text
    assert KEY not in text
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert KEY not in caplog.text
    assert KEY not in repr(make(api_key=KEY))


def test_url_credentials_are_basic_auth_and_hidden(make: Any, llm_server: LLMTestServer) -> None:
    base = llm_server.url.replace("http://", "http://user:pa55word@")
    llm_server.script([Reply(status=403, body=openai_error("no entry for pa55word"))])
    with pytest.raises(TranscriptionError) as caught:
        make(base_url=base).transcribe(AUDIO, filename="a.wav")
    assert "pa55word" not in str(caught.value)
    expected = base64.b64encode(b"user:pa55word").decode()
    assert llm_server.requests[0].headers["authorization"] == f"Basic {expected}"


def test_openai_key_from_the_environment_only_for_openai(
    monkeypatch: pytest.MonkeyPatch, llm_server: LLMTestServer
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"text": "from openai"})

    with Transcriber(
        TranscriptionConfig(model="whisper-1"), transport=httpx.MockTransport(handler)
    ) as transcriber:
        assert transcriber.transcribe(AUDIO, filename="a.ogg") == "from openai"
    assert str(seen[0].url) == "https://api.openai.com/v1/audio/transcriptions"
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    # Another server gets no key from the environment.
    with Transcriber(TranscriptionConfig(model="m", base_url=llm_server.url)) as transcriber:
        transcriber.transcribe(AUDIO, filename="a.wav")
    assert "authorization" not in llm_server.requests[0].headers


def test_concurrent_calls_share_one_client(make: Any, llm_server: LLMTestServer) -> None:
    transcriber = make()
    payloads = [AUDIO[: 100 + i] for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda d: transcriber.transcribe(d, filename="a.wav"), payloads))
    assert results == [f"<transcript of {len(d)} bytes>" for d in payloads]
    assert len(llm_server.requests) == 16


@pytest.mark.parametrize(
    ("payload_format", "name", "expected"),
    [
        ("wav", None, ("wav", "audio/wav")),
        ("MP3", "x.wav", ("mp3", "audio/mpeg")),
        (".flac", None, ("flac", "audio/flac")),
        ("audio/mpeg", None, ("mp3", "audio/mpeg")),
        ("audio/x-wav; codecs=1", None, ("wav", "audio/wav")),
        (None, "dir/Voice.M4A", ("m4a", "audio/mp4")),
        (None, "https://host/a/clip.webm", ("webm", "audio/webm")),
        ("weird", "song.ogg", ("ogg", "audio/ogg")),
        (None, "README", ("bin", "application/octet-stream")),
        (None, ".wav", ("bin", "application/octet-stream")),
        (None, None, ("bin", "application/octet-stream")),
    ],
)
def test_audio_format(
    payload_format: str | None, name: str | None, expected: tuple[str, str]
) -> None:
    assert audio_format(payload_format, name) == expected
