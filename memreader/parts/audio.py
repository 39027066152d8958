"""Audio turned into text by an OpenAI-compatible ``/audio/transcriptions`` endpoint.

Why it is built this way
------------------------
A transcription is one multipart ``POST`` of up to 25 MB and a long wait (a minute of audio may
take tens of seconds), so it uses the same plumbing as the LLM and embedding backends
(:mod:`memreader.transport`) rather than an SDK: one deadline for the whole request
(``timeout_s``: a server that trickles its answer cannot hold a worker forever), a cap on the
answer (``max_response_bytes``), and the one retry rule of every remote call (timeouts,
connection errors, 408/409/429/5xx and unreadable answers are retried with backoff; other 4xx
are final). The API key is sent as a bearer token and scrubbed from every message and log line
(a server may echo it back in an error).

The answer is ``{"text": "..."}`` (``response_format=json``), or a plain-text body from servers
that ignore the format; an empty transcript is not an error (silence has no words).

:class:`Transcriber` is thread-safe: the reader calls it from a thread pool, and one HTTP client
(a connection pool) serves every thread.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from memreader.errors import TranscriptionError
from memreader.parts.images import location_kwargs
from memreader.parts.settings import TranscriptionConfig
from memreader.secret_masking import mask_url
from memreader.transport import (
    Failure,
    RetryPolicy,
    classify,
    deadline,
    http_client,
    http_lib,
    parse_retry_after,
    retryable_status,
    split_credentials,
)

__all__ = ["OPENAI_BASE_URL", "Transcriber", "audio_format"]

logger = logging.getLogger(__name__)

#: Where transcriptions go when ``TranscriptionConfig.base_url`` is ``None``.
OPENAI_BASE_URL = "https://api.openai.com/v1"
_PATH = "/audio/transcriptions"
#: How much of a server's error text goes into a message.
_DETAIL_LIMIT = 300

#: Extensions and their media types; the extension matters, since OpenAI's endpoint tells the
#: codec from the file name.
_MEDIA_TYPES = {
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "mpga": "audio/mpeg",
    "mpeg": "audio/mpeg",
    "m4a": "audio/mp4",
    "mp4": "audio/mp4",
    "aac": "audio/aac",
    "ogg": "audio/ogg",
    "oga": "audio/ogg",
    "opus": "audio/ogg",
    "flac": "audio/flac",
    "webm": "audio/webm",
    "aiff": "audio/aiff",
    "aif": "audio/aiff",
    "pcm": "audio/L16",
}
#: Media types (and their aliases) back to an extension.
_EXTENSIONS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mpeg3": "mp3",
    "audio/x-mpeg-3": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/m4a": "m4a",
    "audio/aac": "aac",
    "audio/ogg": "ogg",
    "audio/opus": "opus",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "audio/webm": "webm",
    "audio/aiff": "aiff",
    "audio/x-aiff": "aiff",
    "audio/l16": "pcm",
}
_UNKNOWN = ("bin", "application/octet-stream")
_MISSING = object()
_UNSAFE_NAME = re.compile(r"[^\w.\- ]+")


def audio_format(payload_format: str | None, name: str | None) -> tuple[str, str]:
    """The file extension and media type of some audio, from an ``input_audio`` part's
    ``format`` (``"wav"``, ``"mp3"``, ... or a media type such as ``"audio/mpeg"``), else from
    a file name's extension; ``("bin", "application/octet-stream")`` when neither says (the
    server then decides).

    >>> audio_format("mp3", None), audio_format(None, "memo.M4A"), audio_format("audio/x-wav", None)
    (('mp3', 'audio/mpeg'), ('m4a', 'audio/mp4'), ('wav', 'audio/wav'))
    >>> audio_format(None, "notes")
    ('bin', 'application/octet-stream')
    """
    if payload_format:
        value = payload_format.strip().lower().lstrip(".")
        if "/" in value:
            value = value.partition(";")[0].strip()
            ext = _EXTENSIONS.get(value)
            if ext is not None:
                return ext, _MEDIA_TYPES[ext]
        elif value in _MEDIA_TYPES:
            return value, _MEDIA_TYPES[value]
    if name:
        base = name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
        stem, dot, ext = base.rpartition(".")
        ext = ext.lower()
        if dot and stem and ext in _MEDIA_TYPES:
            return ext, _MEDIA_TYPES[ext]
    return _UNKNOWN


def _upload_name(filename: str, ext: str) -> str:
    """A safe file name for the multipart part, with the extension the server reads the codec
    from (the caller's name may be a path, hold odd characters or have no extension)."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    base = _UNSAFE_NAME.sub("_", base).strip(" ._")[:100] or "audio"
    if ext != _UNKNOWN[0] and not base.lower().endswith(f".{ext}"):
        base = f"{base}.{ext}"
    return base


class _Answered(Exception):
    """A complete answer that is a failure (an error status, or a body of the wrong shape)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


class Transcriber:
    """Transcribes audio with an OpenAI-compatible ``/audio/transcriptions`` endpoint.

    Args:
        config: the endpoint, model, limits and retries.
        transport: an httpx transport to use instead of the network (tests, proxies); the
            deadline between body chunks and the response cap still apply.
        retry: the retry policy (default: ``config.max_retries`` retries, backoff from 0.5 s
            to 20 s); tests pass one that does not wait.
    """

    def __init__(
        self,
        config: TranscriptionConfig,
        *,
        transport: Any = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.config = config
        base_url = config.base_url or OPENAI_BASE_URL
        bare, credentials = split_credentials(base_url)
        self._url = bare.rstrip("/") + _PATH
        self._shown_url = mask_url(base_url.rstrip("/") + _PATH)
        self._credentials = credentials
        key = config.api_key.get_secret_value() if config.api_key is not None else None
        if not key and config.base_url is None:
            key = os.environ.get("OPENAI_API_KEY") or None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._secrets = [s for s in (key, *(credentials or ())) if s]
        self._transport = transport
        self.retry = retry if retry is not None else RetryPolicy(max_retries=config.max_retries)
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Transcriber(model={self.config.model!r}, url={self._shown_url!r})"

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = http_client(
                    http_lib("httpx"),
                    timeout=None,  # the deadline in transcribe bounds the whole request
                    max_response_bytes=self.config.max_response_bytes,
                    credentials=self._credentials,
                    inner=self._transport,
                    headers=self._headers,
                )
            return self._client

    def scrub(self, text: str) -> str:
        """``text`` with the API key and URL credentials replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def transcribe(
        self,
        data: bytes,
        *,
        filename: str,
        media_type: str | None = None,
        where: Mapping[str, int | None] | None = None,
    ) -> str:
        """The transcript of ``data`` (``""`` if the server heard no words).

        Args:
            data: the encoded audio (WAV, MP3, ...).
            filename: a name for it; its extension tells the server the codec (one is added
                from ``media_type`` when it lacks one). Also the label of error messages.
            media_type: the audio's media type, if known (else from ``filename``).
            where: the part's location (``scene``/``message``/``part``) for errors.

        Raises:
            TranscriptionError: over ``max_bytes`` (before any request), an error status, an
                answer that is not a transcript, or retries exhausted; it names the status or
                the reason, never the key.
        """
        located = location_kwargs(where)
        label = _upload_name(filename, "bin") if filename else "audio"
        if not data:
            raise TranscriptionError(f"{label}: the audio is empty (0 bytes)", **located)
        if len(data) > self.config.max_bytes:
            raise TranscriptionError(
                f"{label}: the audio is {len(data)} bytes, over the limit of "
                f"{self.config.max_bytes} bytes (transcription.max_bytes)",
                **located,
            )
        ext, guessed_type = audio_format(media_type, filename)
        upload = _upload_name(filename, ext)
        fields = {"model": self.config.model, "response_format": "json"}
        if self.config.language:
            fields["language"] = self.config.language
        files = {"file": (upload, data, media_type or guessed_type)}
        attempts = [0]

        def send() -> str:
            attempts[0] += 1
            with deadline(self.config.timeout_s):
                response = self._http().post(self._url, data=fields, files=files)
                return self._read(response)

        def give_up(failure: Failure) -> TranscriptionError:
            tries = f" after {attempts[0]} attempts" if attempts[0] > 1 else ""
            return TranscriptionError(
                f"{label}: transcription failed{tries}: {self._reason(failure)}", **located
            )

        logger.debug(
            "transcribing %s (%d bytes, %s) with %s at %s",
            upload,
            len(data),
            media_type or guessed_type,
            self.config.model,
            self._shown_url,
        )
        return self.retry.run(send, self._classify, give_up, label=f"transcription of {label}")

    def _classify(self, exc: Exception) -> Failure:
        failure = exc.failure if isinstance(exc, _Answered) else classify(exc)
        if not isinstance(exc, _Answered):
            logger.debug("transcription request failed: %s", self.scrub(repr(exc)))
        # The detail goes into retry log lines and the final message: no secret may be in it.
        return replace(failure, detail=self.scrub(failure.detail)[:_DETAIL_LIMIT])

    def _reason(self, failure: Failure) -> str:
        if failure.kind == "status":
            return f"HTTP {failure.status_code} from {self._shown_url}: {failure.detail}"
        if failure.kind == "timeout":
            return (
                f"no complete answer from {self._shown_url} within {self.config.timeout_s:g}s "
                "(transcription.timeout_s)"
            )
        if failure.kind == "connection":
            return f"could not reach {self._shown_url} ({failure.detail})"
        return f"{failure.detail} ({self._shown_url})"

    def _read(self, response: Any) -> str:
        """The transcript in a complete answer; an error answer is raised as :class:`_Answered`.

        A body that is not UTF-8 or not JSON raises the decoder's error, which
        :func:`~memreader.transport.classify` reads as an unreadable (retryable) answer.
        """
        status = int(response.status_code)
        body: bytes = response.content
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if status >= 400:
            raise _Answered(
                Failure(
                    "status",
                    _error_text(body),
                    retryable=retryable_status(status),
                    status_code=status,
                    retry_after=parse_retry_after(response.headers),
                )
            )
        if status >= 300:
            raise _Answered(Failure("other", f"unexpected HTTP {status} answer", retryable=False))
        if content_type == "text/plain":
            return body.decode("utf-8").strip()
        if content_type != "application/json" and not content_type.endswith("+json"):
            # Some servers label JSON loosely; anything else must at least be JSON.
            try:
                answer = json.loads(body)
            except ValueError:
                shown = content_type or "no content type"
                raise _Answered(
                    Failure(
                        "unreadable",
                        f"the server's answer is neither JSON nor plain text ({shown})",
                        retryable=True,
                    )
                ) from None
        else:
            answer = json.loads(body)
        text = answer.get("text", _MISSING) if isinstance(answer, dict) else _MISSING
        if text is None:  # some servers say "no speech" this way
            return ""
        if not isinstance(text, str):
            got = "no 'text' string" if isinstance(answer, dict) else type(answer).__name__
            raise _Answered(
                Failure(
                    "shape",
                    f'the server\'s answer is not a transcript (expected {{"text": ...}}, '
                    f"got {got})",
                    retryable=True,
                )
            )
        return text.strip()

    def close(self) -> None:
        """Close the connections (the transcriber can still be used: it reconnects)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> Transcriber:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error_text(body: bytes) -> str:
    """The message of an error answer (OpenAI's ``{"error": {"message": ...}}``, or the body)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:_DETAIL_LIMIT] or "(empty answer)"
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed.get("detail", parsed.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:_DETAIL_LIMIT]
    return text[:_DETAIL_LIMIT]
