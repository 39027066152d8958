"""Fast-mode benchmark: embedder backends end to end and alone, cold start, CLI, peak memory.

Run by hand (not in the test suite), on an otherwise idle machine::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/fast_mode.py --json /tmp/fast_mode.json

Options: ``--messages 2000,6000`` (sizes of the generated corpus), ``--rounds 3``,
``--backends sentence_transformers,local-fp32,local-int8,static``, ``--seed 7``,
``--memorybank-scenes N`` (the first N days only). A smoke run:
``--messages 200 --rounds 1 --memorybank-scenes 10``. Markdown goes to stdout (paste it into
RESULTS.md), progress to stderr, everything measured (every round, and the medians) to
``--json``.

What it measures:

- **Corpora.** A generated LoCoMo-style chat corpus (two speakers per scene, scenes of 15-40
  messages, many short replies, some long multi-sentence messages, questions, names, dates,
  punctuation, the odd emoji; reproducible from ``--seed``), once per ``--messages`` size, and
  MemoryBank English (``data/memorybank/memory_bank_en.json``, each day a scene).
- **Backends.** ``sentence_transformers`` (the reference: "today"), ``local`` fp32, ``local``
  int8 (the default) and ``static`` when ``build_embedder({"backend": "static"})`` works (else
  a note says why it was skipped). Each backend lives in its own worker process (so its peak
  RSS is its own), loaded and warmed up once; every measurement uses a fresh
  ``SimpleStructMemReader`` (cold embedding cache) on the loaded model. Rounds are interleaved
  (each round measures every backend on every corpus, in a rotated order) and the tables show
  medians over rounds; ratios are medians of the per-round ratios.
- **End to end**: ``get_memory(scenes, mode="fast")`` over the whole corpus in one call.
- **Embedder alone**: the very inputs the reader embeds (the ``embedding_fragments`` the pipeline's
  normalize/parse/window/fast_items steps produce), in the embed step's batches, through a fresh
  embedder (empty caches) on the same loaded model. ``e2e/alone`` = alone seconds / end-to-end
  seconds (a throughput ratio): what memreader adds around the model.
- **Wordpieces/s**: the embedder's ``tokens_embedded`` (wordpieces, special tokens included,
  actually run through the model) over the embedder-alone seconds; **pieces shared**: pieces
  not run again because an identical one was (the overlap between windows).
- **Text embedded** (must be 1.000): characters of the messages' contents covered by the
  embedding inputs / characters of the messages' contents. A content character counts as
  covered when it lies in a segment span ``units[u].text[start:end]`` of some window, where
  (a) the unit's text is the message's content verbatim, (b) the parts handed to the embedder
  for that window, joined, equal that window's segments rendered as the reader renders them
  (``"\\n"``-joined; with ``embed_prefixes`` each line must end with its span's text), and
  (c) for embedders that plan token pieces (``TokenizedEmbedder``), the planned pieces hold
  every token of those parts (their token counts add up to the parts' tokenisation) and none
  is longer than the model's piece budget, so nothing is truncated. Spans are merged per
  message, so overlap is counted once.
- **Prefixes**: ``local`` int8 end to end with ``embed_prefixes`` on vs off (the default):
  wordpieces embedded and msg/s.
- **Cold start** in a fresh process: ``import memreader``, ``SimpleStructMemReader()``, the
  first ``get_memory`` on a 3-message scene (loads the model), each in seconds and their
  total, for the default config and for ``sentence_transformers``; and the CLI
  (``memreader read examples/chat.json --type chat --mode fast -o FILE``) wall time.
- **Peak RSS** of each backend's worker (``ru_maxrss``), after loading and at the end.
- **Windowing**: MB/s of message content cut into windows, against tiktoken counting the same
  lines alone.

Targets are printed next to the results: end to end >= 1.6x ``sentence_transformers`` msg/s on
the LoCoMo-style corpus; e2e/alone >= 0.9; cold start + first call <= 1.5 s; ``static`` >= 10x
the default's msg/s.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import random
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
MEMORYBANK = ROOT / "data" / "memorybank" / "memory_bank_en.json"
CHAT_EXAMPLE = ROOT / "examples" / "chat.json"
sys.path.insert(0, str(ROOT))

Message = dict[str, str]
Scenes = list[list[Message]]

#: Worker results are the lines of the worker's result channel that start with this.
_MARK = "@@fast_mode@@ "

#: Embedder configs by backend label; "local-int8" is the default config's embedder.
BACKENDS: dict[str, dict[str, Any]] = {
    "sentence_transformers": {"backend": "sentence_transformers"},
    "local-fp32": {"backend": "local", "config": {"precision": "fp32"}},
    "local-int8": {"backend": "local", "config": {"precision": "int8"}},
    "static": {"backend": "static"},
}
REFERENCE = "sentence_transformers"
DEFAULT = "local-int8"

TARGET_SPEEDUP = 1.6
TARGET_RATIO = 0.9
TARGET_COLD_S = 1.5
TARGET_STATIC = 10.0


# --------------------------------------------------------------------------------------------
# Corpora


_NAMES = [
    "Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Joanna", "Nate", "Tim", "Audrey",
    "Andrew", "Deborah", "Evan", "Sam", "Calvin", "Dave", "Jolene", "James", "Priya", "Kenji",
]  # fmt: skip
_PLACES = [
    "Lisbon", "the farmers' market", "Yosemite", "Tokyo", "my aunt's place in Ohio",
    "the new climbing gym", "Barcelona", "the lake house", "Central Park", "the library downtown",
    "Seattle", "the beach", "the animal shelter", "Grandma's farm", "the art museum", "Vancouver",
]  # fmt: skip
_ACTIVITIES = [
    "pottery", "painting", "running", "rock climbing", "baking sourdough", "photography",
    "volunteering at the shelter", "learning the guitar", "hiking", "salsa dancing", "yoga",
    "reading sci-fi", "gardening", "chess", "journaling", "birdwatching", "woodworking",
]  # fmt: skip
_PEOPLE = [
    "my sister", "my mom", "my best friend Lena", "my kids", "my partner", "my coworker Raj",
    "my neighbor Mrs. Ortiz", "my grandpa", "the twins", "my roommate", "my dad", "my cousin Leo",
]  # fmt: skip
_THINGS = [
    "a new camera", "a used bike", "a puppy named Biscuit", "concert tickets", "a sketchbook",
    "a vintage record player", "hiking boots", "a cookbook", "a telescope", "a pottery wheel",
    "a sewing machine", "a kayak",
]  # fmt: skip
_FEELINGS = [
    "so proud", "a bit nervous", "really grateful", "exhausted but happy", "super excited",
    "kind of overwhelmed", "relieved", "inspired", "nostalgic", "totally hooked",
]  # fmt: skip
_PAST = [
    "last Friday", "yesterday", "on 14 July", "two weeks ago", "on May 3rd", "this morning",
    "in March 2023", "over the holidays", "last Sunday", "around Christmas", "last summer",
    "on 2 October, 2023", "at 7:30 pm yesterday",
]  # fmt: skip
_FUTURE = [
    "next weekend", "tomorrow", "on 14 July", "in June", "on Saturday at 10 am", "next month",
    "after the holidays", "on 1 March, 2024",
]  # fmt: skip
_EVENTS = [
    "a charity run", "my first art show", "a job interview", "a family reunion", "a book club",
    "an LGBTQ support group meeting", "my daughter's recital", "a camping trip", "a pottery class",
    "a conference in Berlin", "the school fundraiser", "a 5K for mental health",
]  # fmt: skip
_SHORT = [
    "Wow!", "Haha, totally.", "That's awesome!", "Thanks, {other}!", "Oh no, I'm sorry.",
    "Same here.", "Really? No way!", "Good luck!", "Yes!!", "Sounds fun.", "I know, right?",
    "Congrats!", "Aw, that's sweet.", "Hmm, maybe.", "Definitely!", "Take care!", "lol",
    "Ok, see you then.", "So cool!", "Love that!", "Bye for now!", "Thank you so much!",
    "Me too.", "Oh nice.", "Wait, what happened?", "Totally agree, {other}.", "Ha! Classic.",
]  # fmt: skip
_QUESTIONS = [
    "How did {event} go?", "What made you start {activity}?", "Have you been to {place} before?",
    "When are you going to {place}?", "How is {person} doing?", "Was that {past}?",
    "What do you like most about {activity}?", "Are you still planning {event} {future}?",
    "Hey {other}! How have you been?", "Any tips for getting into {activity}?",
    "Where did you get {thing}?", "Did {person} come along too?", "How long have you been into "
    "{activity}?", "What are you up to {future}?", "Do you want to join me at {place}?",
]  # fmt: skip
_STATEMENTS = [
    "I went to {place} {past} with {person}.", "I started {activity} {past} and I'm {feeling}.",
    "{Person} and I signed up for {event}.", "I just got {thing}!",
    "It reminded me of when I was a kid and we used to go to {place} every summer.",
    "Honestly, it's been a rough couple of weeks, but {activity} really helps me clear my head.",
    "I'm {feeling} - it took me {n} months to get here.",
    "We're planning to go to {place} {future}, probably for {n} days.",
    "The best part was meeting people who care about the same things I do.",
    "I painted a sunset over the lake; it took {n} hours, but it was worth it.",
    "{Person} gave me {thing} for my birthday.", "My goal is to do {event} before the end of the "
    "year.", "It cost about ${n}0, which honestly isn't bad.",
    "I think {event} changed how I see things.", "{Person} says hi, by the way.",
    "We had pancakes at {place} {past} (the blueberry ones are the best).",
    "I've been doing {activity} every morning at 6:45, before work.",
    "Work has been crazy: three deadlines in one week!", "I still can't believe it happened.",
    "Next time I'll bring {person}; they'd love it.", "I keep a little journal about {activity}.",
    "The weather was perfect, 24 degrees and sunny.", "I was {feeling} when they called my name.",
]  # fmt: skip
_EMOJIS = ["😊", "😂", "🎉", "❤️", "🙌", "😅", "🌅", "📸", "👍", "🥳"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]  # fmt: skip


def _fill(template: str, rng: random.Random, other: str) -> str:
    person = rng.choice(_PEOPLE)
    return template.format(
        other=other,
        place=rng.choice(_PLACES),
        activity=rng.choice(_ACTIVITIES),
        person=person,
        Person=person[0].upper() + person[1:],
        thing=rng.choice(_THINGS),
        feeling=rng.choice(_FEELINGS),
        past=rng.choice(_PAST),
        future=rng.choice(_FUTURE),
        event=rng.choice(_EVENTS),
        n=rng.randint(2, 12),
    )


def _message_text(rng: random.Random, other: str, first: bool) -> str:
    """One message: a short reply, a question, one or two sentences, or a long message."""
    kind = rng.random()
    if first:
        sentences = [f"Hey {other}!", _fill(rng.choice(_STATEMENTS), rng, other)]
    elif kind < 0.35:
        sentences = [_fill(rng.choice(_SHORT), rng, other)]
    elif kind < 0.55:
        sentences = [_fill(rng.choice(_STATEMENTS), rng, other)] if rng.random() < 0.5 else []
        sentences.append(_fill(rng.choice(_QUESTIONS), rng, other))
    elif kind < 0.85:
        picked = rng.sample(_STATEMENTS, rng.randint(1, 2))
        sentences = [_fill(t, rng, other) for t in picked]
        if rng.random() < 0.3:
            sentences.append(_fill(rng.choice(_QUESTIONS), rng, other))
    else:
        picked = rng.sample(_STATEMENTS, rng.randint(3, 8))
        sentences = [_fill(t, rng, other) for t in picked]
        if rng.random() < 0.4:
            sentences.append(_fill(rng.choice(_QUESTIONS), rng, other))
    text = " ".join(sentences)
    if rng.random() < 0.1:
        text += " " + rng.choice(_EMOJIS)
    return text


def locomo_corpus(messages: int, seed: int = 7) -> Scenes:
    """``messages`` chat messages in LoCoMo-style scenes, reproducibly from ``seed``.

    Two speakers per scene (``user`` and ``assistant``, named in the text), 15-40 messages per
    scene (the last scene may be shorter), a LoCoMo-style ``chat_time`` ("1:56 pm on 8 May,
    2023") advancing a few minutes per message; a speaker sometimes sends two in a row.
    """
    rng = random.Random(seed)
    scenes: Scenes = []
    left = messages
    day = datetime.datetime(2023, 1, 5, 9, 0)
    while left > 0:
        size = min(left, rng.randint(15, 40))
        names = rng.sample(_NAMES, 2)
        day += datetime.timedelta(days=rng.randint(1, 9), minutes=rng.randint(-120, 240))
        at = day
        speaker = rng.randint(0, 1)
        scene: list[Message] = []
        for m in range(size):
            if m > 0 and rng.random() > 0.1:
                speaker = 1 - speaker
            at += datetime.timedelta(minutes=rng.randint(0, 3))
            hour = at.hour % 12 or 12
            stamp = (
                f"{hour}:{at.minute:02d} {'am' if at.hour < 12 else 'pm'} on "
                f"{at.day} {_MONTHS[at.month - 1]}, {at.year}"
            )
            scene.append(
                {
                    "role": ("user", "assistant")[speaker],
                    "content": _message_text(rng, names[1 - speaker], first=m == 0),
                    "chat_time": stamp,
                }
            )
        scenes.append(scene)
        left -= size
    return scenes


def memorybank_corpus(scenes: int | None = None) -> Scenes:
    """MemoryBank English, each user's day a scene (the first ``scenes`` of them, or all)."""
    from memreader.scenes.memorybank import load_memorybank

    days = [scene for days in load_memorybank(MEMORYBANK).values() for scene in days]
    return days if scenes is None else days[:scenes]


def build_corpus(spec: dict[str, Any]) -> Scenes:
    """The scenes of a corpus spec (``{"kind": "locomo", "messages": n, "seed": s}`` or
    ``{"kind": "memorybank", "scenes": n or None}``)."""
    if spec["kind"] == "locomo":
        return locomo_corpus(spec["messages"], spec["seed"])
    if spec["kind"] == "memorybank":
        return memorybank_corpus(spec.get("scenes"))
    raise ValueError(f"unknown corpus kind {spec['kind']!r}")


def corpus_stats(scenes: Scenes) -> dict[str, Any]:
    """Messages, scenes and content characters of a corpus."""
    lengths = [len(m["content"]) for s in scenes for m in s]
    return {
        "scenes": len(scenes),
        "messages": len(lengths),
        "chars": sum(lengths),
        "MB": sum(len(m["content"].encode()) for s in scenes for m in s) / 1e6,
        "median_chars": statistics.median(lengths),
        "short_share": sum(n < 40 for n in lengths) / len(lengths),
        "long_share": sum(n >= 300 for n in lengths) / len(lengths),
    }


# --------------------------------------------------------------------------------------------
# Worker side: one process per backend


def _reader(embedder: dict[str, Any], prefixes: bool) -> Any:
    from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig

    return SimpleStructMemReader(
        SimpleStructMemReaderConfig(embedder=embedder, embed_prefixes=prefixes)
    )


def _info(name: str) -> dict[str, str]:
    return {"user_id": "bench", "session_id": name}


def collect_inputs(reader: Any, scenes: Scenes) -> Any:
    """The read state after normalize/parse/window/fast_items: windows and embedding parts."""
    from memreader import ReadState
    from memreader.steps.fast import FastItems
    from memreader.steps.read import Normalize, Parse, WindowStep

    state = ReadState(mode="fast", type="chat", info=_info("inputs"), scene_data=scenes)
    for step in (Normalize(), Parse(), WindowStep(), FastItems()):
        step.run(state, reader.runtime)
    return state


def item_parts(state: Any, item: Any) -> tuple[str, ...]:
    """What the embed step embeds for ``item`` (its parts while its memory is unchanged)."""
    made = state.embedding_fragments.get(item.id)
    return made[1] if made is not None and made[0] == item.memory else (item.memory,)


def embedding_inputs(state: Any) -> list[tuple[str, ...]]:
    """What the embed step embeds, item by item, in order."""
    return [item_parts(state, item) for item, _ in state.emitted]


def _model_check(embedder: Any, parts: Sequence[str]) -> bool | None:
    """Whether the embedder's planned pieces for ``parts`` hold every token, none over budget
    (``None``: the embedder plans no token pieces)."""
    plan = getattr(embedder, "_plan", None)  # TokenizedEmbedder's piece planner
    if plan is None:
        return None
    pieces = plan([p for p in parts if p] or [""])
    tokens = [embedder.count_tokens(p) for p in parts if p]
    whole = "".join(parts)
    expected = embedder.count_tokens(whole) if sum(tokens) <= embedder.piece_budget else sum(tokens)
    longest = max((len(piece) for piece in pieces), default=0)
    return sum(len(piece) for piece in pieces) == expected and longest <= embedder.piece_budget


def text_coverage(scenes: Scenes, state: Any, embedder: Any, prefixes: bool) -> dict[str, Any]:
    """Share of the messages' content characters covered by the embedding inputs (see the
    module docstring for the exact definition)."""
    from memreader.windowing.parsers import PartRef
    from memreader.windowing.windows import SEPARATOR

    spans: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    emitted = iter(state.emitted)
    windows = bad_render = bad_model = 0
    model_checked = False
    for ws in state.windows:
        for window in ws.windows:
            item, _ = next(emitted)
            parts = item_parts(state, item)
            windows += 1
            rendered = []
            for s in window.segments:
                own = ws.units[s.unit].text[s.start : s.end]
                rendered.append(s.line if prefixes else own)
                if prefixes and not s.line.endswith(own):
                    rendered[-1] = "\0"  # the line does not carry its span: not covered
            if "".join(parts) != SEPARATOR.join(rendered):
                bad_render += 1
                continue
            check = _model_check(embedder, parts)
            model_checked = model_checked or check is not None
            if check is False:
                bad_model += 1
                continue
            for s in window.segments:
                unit = ws.units[s.unit]
                ref = unit.key
                if not isinstance(ref, PartRef) or not ref.part.exact:
                    continue
                content = scenes[ws.scene.index][ref.message.index]["content"]
                if unit.text != content:
                    continue
                key = (ws.scene.index, ref.message.index, ref.part.index or 0)
                spans.setdefault(key, []).append((s.start, s.end))
    covered = 0
    for intervals in spans.values():
        end = 0
        for a, b in sorted(intervals):
            covered += max(0, b - max(a, end))
            end = max(end, b)
    total = sum(len(m["content"]) for s in scenes for m in s)
    return {
        "text_embedded": covered / total if total else 1.0,
        "covered_chars": covered,
        "content_chars": total,
        "windows": windows,
        "windows_render_mismatch": bad_render,
        "windows_truncated": bad_model,
        "model_checked": model_checked,
    }


def _counters(embedder: Any) -> dict[str, int | None]:
    return {
        name: getattr(embedder, name, None)
        for name in ("tokens_embedded", "pieces_embedded", "pieces_shared")
    }


def embed_alone(embedder: Any, inputs: list[tuple[str, ...]]) -> float:
    """Seconds to embed ``inputs`` as the embed step does (its batches, parts where any)."""
    size = getattr(embedder, "batch_size", None)
    size = size if isinstance(size, int) and size > 0 else 64
    has_parts = getattr(embedder, "embed_fragments", None) is not None
    started = time.perf_counter()
    for offset in range(0, len(inputs), size):
        chunk = inputs[offset : offset + size]
        if has_parts and any(len(p) > 1 for p in chunk):
            embedder.embed_fragments(chunk)
        else:
            embedder.embed(["".join(p) for p in chunk])
    return time.perf_counter() - started


@dataclass
class _WorkerState:
    embedder: dict[str, Any]
    corpora: dict[str, Scenes] = field(default_factory=dict)
    inputs: dict[tuple[str, bool], list[tuple[str, ...]]] = field(default_factory=dict)
    coverage: dict[tuple[str, bool], dict[str, Any]] = field(default_factory=dict)


def _measure(ws: _WorkerState, request: dict[str, Any]) -> dict[str, Any]:
    from memreader import ReadReport
    from memreader.embedders import build_embedder

    name, prefixes = request["corpus"]["name"], bool(request["prefixes"])
    scenes = ws.corpora.get(name)
    if scenes is None:
        scenes = ws.corpora[name] = build_corpus(request["corpus"])
    key = (name, prefixes)
    if key not in ws.inputs:
        state = collect_inputs(_reader(ws.embedder, prefixes), scenes)
        ws.inputs[key] = embedding_inputs(state)
        ws.coverage[key] = text_coverage(scenes, state, build_embedder(ws.embedder), prefixes)
    inputs = ws.inputs[key]
    result: dict[str, Any] = {"coverage": ws.coverage[key], "windows": len(inputs)}

    def end_to_end() -> None:
        reader = _reader(ws.embedder, prefixes)  # cold embedding cache, the loaded model
        report = ReadReport()
        gc.collect()
        started = time.perf_counter()
        reader.get_memory(scenes, type="chat", info=_info(name), mode="fast", report=report)
        result["e2e_s"] = time.perf_counter() - started
        result["steps_s"] = dict(report.steps)
        result["e2e_counters"] = _counters(getattr(reader.runtime.embedder, "inner", None))

    def alone() -> None:
        embedder = build_embedder(ws.embedder)  # empty caches, the loaded model
        gc.collect()
        result["alone_s"] = embed_alone(embedder, inputs)
        result["alone_counters"] = _counters(embedder)

    order: list[Callable[[], None]] = [end_to_end]
    if request.get("alone", True):
        order = [end_to_end, alone] if request.get("e2e_first", True) else [alone, end_to_end]
    for run in order:
        run()
    return result


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def worker(embedder_json: str) -> None:
    """Serve measurement requests (JSON lines on stdin) for one backend; results go to the
    original stdout, everything else the libraries print to stderr."""
    channel: IO[str] = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def answer(value: dict[str, Any]) -> None:
        channel.write(_MARK + json.dumps(value) + "\n")

    ws = _WorkerState(embedder=json.loads(embedder_json))
    started = time.perf_counter()
    try:
        from memreader.embedders import build_embedder

        embedder = build_embedder(ws.embedder)
        reader = _reader(ws.embedder, False)
        reader.get_memory(locomo_corpus(3, 1), type="chat", info=_info("warmup"), mode="fast")
    except Exception as exc:  # reported to the parent, which skips this backend
        answer({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    answer(
        {
            "ok": True,
            "name": embedder.name,
            "load_s": time.perf_counter() - started,
            "rss_after_load_MiB": _rss_mib(),
        }
    )
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "quit":
            break
        if request["op"] == "rss":
            answer({"peak_rss_MiB": _rss_mib()})
        elif request["op"] == "measure":
            try:
                answer(_measure(ws, request))
            except Exception as exc:  # one failed measurement is reported, not fatal
                answer({"error": f"{type(exc).__name__}: {exc}"})


# --------------------------------------------------------------------------------------------
# Parent side


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


class Worker:
    """A backend's worker process and its request/answer channel."""

    def __init__(self, label: str, embedder: dict[str, Any]) -> None:
        self.label = label
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(embedder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        self.hello = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(_MARK):
                answer: dict[str, Any] = json.loads(line[len(_MARK) :])
                return answer
        raise RuntimeError(f"worker {self.label} exited (code {self.proc.wait()})")

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # our own child, stuck
                self.proc.wait()


_COLD_CODE = """
import json, time
t0 = time.perf_counter()
import memreader
t1 = time.perf_counter()
embedder = json.loads({embedder!r})
if embedder is None:
    reader = memreader.SimpleStructMemReader()
else:
    reader = memreader.SimpleStructMemReader(
        memreader.SimpleStructMemReaderConfig(embedder=embedder))
t2 = time.perf_counter()
scene = [
    {{"role": "user", "content": "Hi! I'm Emily and I just moved to Lisbon."}},
    {{"role": "assistant", "content": "Welcome, Emily! How do you like it so far?"}},
    {{"role": "user", "content": "I love it, but I miss my piano."}},
]
items = reader.get_memory([scene], type="chat", info={{"user_id": "u", "session_id": "s"}})
t3 = time.perf_counter()
assert all(i.metadata.embedding for s in items for i in s), "no vectors"
print(json.dumps({{"import_s": t1 - t0, "build_s": t2 - t1, "first_call_s": t3 - t2,
                   "total_s": t3 - t0}}))
"""


def cold_start(embedder: dict[str, Any] | None) -> dict[str, float]:
    """Import, build and first call in a fresh interpreter (``None``: the default config)."""
    code = _COLD_CODE.format(embedder=json.dumps(embedder))
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=False
    )
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"cold start failed: {out.stderr.strip()[-2000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = wall
    return result


def cli_wall() -> dict[str, Any]:
    """Wall seconds of ``memreader read examples/chat.json --type chat --mode fast -o FILE``."""
    command = Path(sys.executable).parent / "memreader"
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "items.jsonl"
        argv = [str(command), "read", str(CHAT_EXAMPLE), "--type", "chat", "--mode", "fast"]
        argv += ["-o", str(output)]
        started = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, text=True, env=_env(), check=False)
        wall = time.perf_counter() - started
        if out.returncode != 0:
            raise RuntimeError(f"memreader read failed: {out.stderr.strip()[-2000:]}")
        items = len(output.read_text(encoding="utf-8").splitlines())
    return {"wall_s": wall, "items": items}


def windowing_speed(scenes: Scenes) -> dict[str, float]:
    """Seconds to cut the corpus into windows, and to count its lines with tiktoken alone."""
    from memreader import SimpleStructMemReader
    from memreader.scenes.scene import normalize_chat
    from memreader.windowing.parsers import scene_units

    runtime = SimpleStructMemReader().runtime  # builds no embedder
    units = [scene_units(s) for s in normalize_chat(scenes)]
    lines = [u.prefix + u.text + "\n" for scene in units for u in scene]
    started = time.perf_counter()
    for scene in units:
        runtime.windower.windows(scene)
    window_s = time.perf_counter() - started
    started = time.perf_counter()
    for line in lines:
        runtime.windower.tokenizer.count(line)
    return {"window_s": window_s, "tiktoken_s": time.perf_counter() - started}


def machine_info() -> dict[str, Any]:
    """Platform, cores, CPU model and the vector-instruction flags that matter for int8."""
    model, flags = "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    from importlib import metadata

    versions = {}
    for package in ("onnxruntime", "torch", "sentence-transformers", "tokenizers", "tiktoken"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cores": cores,
        "cpu_count": os.cpu_count(),
        "cpu": model,
        "memory_GiB": round(memory_gib, 1),
        "avx2": "avx2" in flags,
        "avx512f": "avx512f" in flags,
        "vnni": sorted(f for f in flags if "vnni" in f),
        "versions": versions,
    }


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Run:
    """Everything one benchmark run measured."""

    meta: dict[str, Any]
    corpora: dict[str, dict[str, Any]]
    backends: dict[str, dict[str, Any]]
    skipped: dict[str, str]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    rss: dict[str, dict[str, float]] = field(default_factory=dict)


def run_benchmark(args: argparse.Namespace) -> Run:
    """Start the workers, run the interleaved rounds, collect the peaks."""
    specs: dict[str, dict[str, Any]] = {}
    for n in args.messages:
        specs[f"locomo_{n}"] = {"kind": "locomo", "messages": n, "seed": args.seed}
    skipped: dict[str, str] = {}
    if MEMORYBANK.exists():
        name = "memorybank_en" if args.memorybank_scenes is None else "memorybank_en_part"
        specs[name] = {"kind": "memorybank", "scenes": args.memorybank_scenes}
    else:
        skipped["memorybank_en"] = f"{MEMORYBANK} not found"
    corpora = {name: build_corpus(spec) for name, spec in specs.items()}
    meta = {
        "command": shlex.join(["HF_HUB_OFFLINE=1", sys.executable, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
    }
    run = Run(meta, {n: {**specs[n], **corpus_stats(s)} for n, s in corpora.items()}, {}, skipped)
    workers: dict[str, Worker] = {}
    for label in args.backends:
        _log(f"loading {label} ...")
        w = Worker(label, BACKENDS[label])
        if w.hello.get("ok"):
            workers[label] = w
            run.backends[label] = {"config": BACKENDS[label], **w.hello}
        else:
            skipped[label] = w.hello.get("error", "failed to start")
            _log(f"skipping {label}: {skipped[label]}")
            w.close()
    try:
        for r in range(args.rounds):
            row: dict[str, Any] = {"round": r + 1, "cold": {}, "measure": {}, "windowing": {}}
            row["cold"]["default"] = cold_start(None)
            if REFERENCE in workers:
                row["cold"][REFERENCE] = cold_start(BACKENDS[REFERENCE])
            row["cli"] = cli_wall()
            _log(f"[round {r + 1}] cold start {row['cold']}, cli {row['cli']}")
            labels = list(workers)
            labels = labels[r % len(labels) :] + labels[: r % len(labels)] if labels else []
            for name, spec in specs.items():
                row["windowing"][name] = windowing_speed(corpora[name])
                for label in labels:
                    request = {"op": "measure", "corpus": {**spec, "name": name}}
                    request |= {"prefixes": False, "e2e_first": r % 2 == 0}
                    result = workers[label].call(request)
                    row["measure"][f"{name}|{label}|off"] = result
                    _log(
                        f"[round {r + 1}] {name} {label}: e2e {result.get('e2e_s', 0):.2f} s, "
                        f"alone {result.get('alone_s', 0):.2f} s {result.get('error', '')}"
                    )
                if DEFAULT in workers:
                    request = {"op": "measure", "corpus": {**spec, "name": name}}
                    request |= {"prefixes": True, "alone": False}
                    result = workers[DEFAULT].call(request)
                    row["measure"][f"{name}|{DEFAULT}|on"] = result
                    seconds = result.get("e2e_s", 0.0)
                    _log(f"[round {r + 1}] {name} {DEFAULT} +prefixes: e2e {seconds:.2f} s")
            run.rounds.append(row)
        for label, w in workers.items():
            run.rss[label] = {
                "after_load_MiB": run.backends[label]["rss_after_load_MiB"],
                "peak_MiB": w.call({"op": "rss"})["peak_rss_MiB"],
            }
    finally:
        for w in workers.values():
            w.close()
    return run


# --------------------------------------------------------------------------------------------
# Summaries and Markdown


def _per_round(run: Run, key: str, get: Callable[[dict[str, Any]], float | None]) -> list[float]:
    values = []
    for row in run.rounds:
        result = row["measure"].get(key)
        if result is not None and "error" not in result:
            value = get(result)
            if value is not None:
                values.append(value)
    return values


def summarize(run: Run) -> dict[str, Any]:
    """Medians over rounds per corpus and backend, ratios as medians of per-round ratios."""
    out: dict[str, Any] = {"rows": {}, "prefixes": {}, "windowing": {}, "cold": {}, "cli": {}}
    for name, stats in run.corpora.items():
        n = stats["messages"]
        for label in run.backends:
            key = f"{name}|{label}|off"
            e2e = _median(_per_round(run, key, lambda r: r["e2e_s"]))
            if e2e is None:
                continue
            alone = _median(_per_round(run, key, lambda r: r.get("alone_s")))
            first = next(
                row["measure"][key] for row in run.rounds if "error" not in row["measure"][key]
            )
            counters = first.get("alone_counters") or first["e2e_counters"]
            tokens = counters.get("tokens_embedded")
            steps = _per_round(run, key, lambda r: 1 - r["steps_s"].get("embed", 0.0) / r["e2e_s"])
            speedups: list[float] = []
            for row in run.rounds:
                ours, ref = row["measure"].get(key), row["measure"].get(f"{name}|{REFERENCE}|off")
                if ours and ref and "e2e_s" in ours and "e2e_s" in ref:
                    speedups.append(ref["e2e_s"] / ours["e2e_s"])
            out["rows"][key] = {
                "corpus": name,
                "backend": label,
                "messages": n,
                "windows": first["windows"],
                "e2e_s": e2e,
                "msg_per_s": n / e2e,
                "x_reference": _median(speedups),
                "embed_step_s": _median(
                    _per_round(run, key, lambda r: r["steps_s"].get("embed", 0.0))
                ),
                "alone_s": alone,
                "e2e_over_alone": _median(
                    _per_round(
                        run, key, lambda r: r["alone_s"] / r["e2e_s"] if "alone_s" in r else None
                    )
                ),
                "wordpieces": tokens,
                "wordpieces_per_s": tokens / alone if tokens is not None and alone else None,
                "pieces_embedded": counters.get("pieces_embedded"),
                "pieces_shared": counters.get("pieces_shared"),
                "e2e_counters_match": first["e2e_counters"] == first.get("alone_counters"),
                "coverage": first["coverage"],
                "non_embed_share": _median(steps),
            }
        on, off = f"{name}|{DEFAULT}|on", f"{name}|{DEFAULT}|off"
        on_s = _median(_per_round(run, on, lambda r: r["e2e_s"]))
        off_s = _median(_per_round(run, off, lambda r: r["e2e_s"]))
        if on_s is not None and off_s is not None:
            tokens_on = _per_round(run, on, lambda r: r["e2e_counters"]["tokens_embedded"])
            tokens_off = _per_round(run, off, lambda r: r["e2e_counters"]["tokens_embedded"])
            out["prefixes"][name] = {
                "wordpieces_on": tokens_on[0] if tokens_on else None,
                "wordpieces_off": tokens_off[0] if tokens_off else None,
                "msg_per_s_on": n / on_s,
                "msg_per_s_off": n / off_s,
                "coverage_on": run.rounds[0]["measure"][on].get("coverage"),
            }
        window_s = _median([row["windowing"][name]["window_s"] for row in run.rounds])
        tiktoken_s = _median([row["windowing"][name]["tiktoken_s"] for row in run.rounds])
        assert window_s is not None and tiktoken_s is not None
        out["windowing"][name] = {
            "windowing_MB_per_s": stats["MB"] / window_s,
            "tiktoken_MB_per_s": stats["MB"] / tiktoken_s,
        }
    for config in ("default", REFERENCE):
        rows = [row["cold"][config] for row in run.rounds if config in row["cold"]]
        if rows:
            out["cold"][config] = {k: _median([r[k] for r in rows]) for k in rows[0]}
    out["cli"] = {"wall_s": _median([row["cli"]["wall_s"] for row in run.rounds])}
    out["targets"] = targets(run, out)
    return out


def targets(run: Run, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with what this run measured and whether it is met."""
    rows = summary["rows"]
    result: list[dict[str, Any]] = []

    def add(target: str, measured: str, met: bool | None) -> None:
        result.append({"target": target, "measured": measured, "met": met})

    for name in run.corpora:
        row = rows.get(f"{name}|{DEFAULT}|off")
        if name.startswith("locomo") and row and row["x_reference"] is not None:
            add(
                f"{DEFAULT} e2e >= {TARGET_SPEEDUP}x {REFERENCE} msg/s ({name})",
                f"{row['x_reference']:.2f}x",
                row["x_reference"] >= TARGET_SPEEDUP,
            )
    # The ratio is a target for the model backends: next to the static tier (tens of times
    # faster than a model) memreader's own work is most of a call, by design.
    ratios = [
        (r["e2e_over_alone"], k)
        for k, r in rows.items()
        if r["e2e_over_alone"] is not None and "|static|" not in k
    ]
    if ratios:
        worst, where = min(ratios)
        add(
            f"e2e/embedder alone >= {TARGET_RATIO} (every model backend and corpus)",
            f"min {worst:.3f} ({where.replace('|off', '').replace('|', ', ')})",
            worst >= TARGET_RATIO,
        )
    cold = summary["cold"].get("default")
    if cold:
        add(
            f"cold start + first call <= {TARGET_COLD_S} s (default config)",
            f"{cold['total_s']:.2f} s in process, {cold['process_wall_s']:.2f} s process wall",
            cold["total_s"] <= TARGET_COLD_S,
        )
    if "static" in run.backends:
        for name in run.corpora:
            st, default = rows.get(f"{name}|static|off"), rows.get(f"{name}|{DEFAULT}|off")
            if st and default:
                speedup = st["msg_per_s"] / default["msg_per_s"]
                add(
                    f"static >= {TARGET_STATIC:.0f}x {DEFAULT} msg/s ({name})",
                    f"{speedup:.1f}x",
                    speedup >= TARGET_STATIC,
                )
    else:
        add(f"static >= {TARGET_STATIC:.0f}x {DEFAULT} msg/s", "static not available", None)
    coverage = [r["coverage"]["text_embedded"] for r in rows.values()]
    coverage += [p["coverage_on"]["text_embedded"] for p in summary["prefixes"].values()
                 if p.get("coverage_on")]  # fmt: skip
    if coverage:
        add("text embedded == 1.0 (every run)", f"min {min(coverage):.4f}", min(coverage) == 1.0)
    return result


def _f(value: float | None, spec: str = ".2f") -> str:
    return "–" if value is None else format(value, spec)


def markdown(run: Run, summary: dict[str, Any]) -> str:
    """The results as Markdown."""
    m = run.meta["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    lines = [
        "## Fast mode — embedder backends",
        "",
        f"Command: `{run.meta['command']}`  ",
        f"Date: {run.meta['date']}  ",
        f"Machine: {m['cpu']}, {m['cores']} usable cores (of {m['cpu_count']}), "
        f"{m['memory_GiB']} GiB, AVX2 {'yes' if m['avx2'] else 'no'}, AVX-512 "
        f"{'yes' if m['avx512f'] else 'no'}, VNNI {', '.join(m['vnni']) or 'no'}; "
        f"{m['platform']}, Python {m['python']}  ",
        f"Versions: {versions}  ",
        f"Rounds: {len(run.rounds)}, interleaved; medians over rounds (ratios: medians of the "
        "per-round ratios).",
        "",
        "Backends: "
        + "; ".join(
            f"`{label}` = {b['name']} (load + warm-up {b['load_s']:.1f} s)"
            for label, b in run.backends.items()
        ),
    ]
    for what, why in run.skipped.items():
        lines.append(f"\n**Skipped `{what}`**: {why}")
    lines += [
        "",
        "### Corpora",
        "",
        "| corpus | scenes | messages | content chars | MB | median chars/msg "
        "| msgs < 40 chars | msgs >= 300 chars |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, c in run.corpora.items():
        lines.append(
            f"| {name} | {c['scenes']} | {c['messages']} | {c['chars']} | {c['MB']:.3f} "
            f"| {c['median_chars']:.0f} | {c['short_share']:.0%} | {c['long_share']:.0%} |"
        )
    lines += [
        "",
        "### Throughput (fast mode, `embed_prefixes` off: the default)",
        "",
        f"×ST: end-to-end speed over `{REFERENCE}` in the same round. e2e/alone: embedder-alone "
        "seconds / end-to-end seconds on the same inputs (target ≥ "
        f"{TARGET_RATIO}). Wordpieces: run through the model, specials included. Text embedded: "
        "content characters covered by the embedding inputs / content characters (see the "
        "script's docstring). Embed step: the end-to-end run's embed step (the cache, the "
        "unreadable-text check and the model). Non-embed: share of end-to-end time outside "
        "the embed step.",
        "",
        "| corpus | backend | windows | e2e s | msg/s | ×ST | embed step s | alone s "
        "| e2e/alone | wordpieces | wordpieces/s | pieces embedded | pieces shared "
        "| text embedded | non-embed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary["rows"].values():
        shared = r["pieces_shared"]
        total = (r["pieces_embedded"] or 0) + (shared or 0)
        shared_text = (
            "–" if shared is None else f"{shared} ({shared / total:.0%})" if total else "0"
        )
        cov = r["coverage"]
        cov_text = f"{cov['text_embedded']:.4f}" + ("" if cov["model_checked"] else " (chars)")
        lines.append(
            f"| {r['corpus']} | {r['backend']} | {r['windows']} | {_f(r['e2e_s'])} "
            f"| {_f(r['msg_per_s'], '.0f')} | {_f(r['x_reference'])} "
            f"| {_f(r['embed_step_s'])} | {_f(r['alone_s'])} "
            f"| {_f(r['e2e_over_alone'], '.3f')} | {_f(r['wordpieces'], 'd')} "
            f"| {_f(r['wordpieces_per_s'], '.0f')} | {_f(r['pieces_embedded'], 'd')} "
            f"| {shared_text} | {cov_text} | {_f(r['non_embed_share'], '.1%')} |"
        )
    for key, r in summary["rows"].items():
        cov = r["coverage"]
        if cov["windows_render_mismatch"] or cov["windows_truncated"]:
            lines.append(
                f"\n**Text not embedded** ({key.replace('|off', '')}): "
                f"{cov['windows_render_mismatch']} windows whose embedding input differs from "
                f"their lines, {cov['windows_truncated']} whose pieces lose tokens."
            )
    mismatched = [k for k, r in summary["rows"].items() if not r["e2e_counters_match"]]
    if mismatched:
        lines.append(
            "\nNote: the end-to-end embedder's counters differ from the embedder-alone ones for "
            + ", ".join(k.replace("|off", "") for k in mismatched)
            + " (see the JSON)."
        )
    if summary["prefixes"]:
        lines += [
            "",
            f"### `embed_prefixes` on vs off (`{DEFAULT}`, end to end)",
            "",
            "| corpus | wordpieces off | wordpieces on | saved by off | msg/s off | msg/s on "
            "| off/on speed | text embedded (on) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, p in summary["prefixes"].items():
            on, off = p["wordpieces_on"], p["wordpieces_off"]
            saved = f"{1 - off / on:.0%}" if on and off is not None else "–"
            cov = p["coverage_on"]["text_embedded"] if p.get("coverage_on") else None
            lines.append(
                f"| {name} | {_f(off, 'd')} | {_f(on, 'd')} | {saved} "
                f"| {p['msg_per_s_off']:.0f} | {p['msg_per_s_on']:.0f} "
                f"| {p['msg_per_s_off'] / p['msg_per_s_on']:.2f} | {_f(cov, '.4f')} |"
            )
    lines += [
        "",
        "### Cold start (fresh process, `HF_HUB_OFFLINE=1`)",
        "",
        "`import memreader`, `SimpleStructMemReader(...)`, first `get_memory` on a 3-message "
        "scene (loads the model); total = the three; process wall includes the interpreter.",
        "",
        "| config | import s | build s | first call s | total s | process wall s | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for config, c in summary["cold"].items():
        target = f"≤ {TARGET_COLD_S} s" if config == "default" else "–"
        lines.append(
            f"| {config} | {c['import_s']:.2f} | {c['build_s']:.2f} | {c['first_call_s']:.2f} "
            f"| {c['total_s']:.2f} | {c['process_wall_s']:.2f} | {target} |"
        )
    lines += [
        "",
        f"CLI, `memreader read examples/chat.json --type chat --mode fast -o FILE`: "
        f"{summary['cli']['wall_s']:.2f} s wall.",
        "",
        "### Peak RSS per backend (its own worker process, corpora included)",
        "",
        "| backend | after load + warm-up MiB | peak MiB |",
        "|---|---|---|",
    ]
    for label, rss in run.rss.items():
        lines.append(f"| {label} | {rss['after_load_MiB']:.0f} | {rss['peak_MiB']:.0f} |")
    lines += [
        "",
        "A backend whose model file was built during this run (the first use after an install "
        "or a version bump: see its load + warm-up time above) holds the build in its peak.",
    ]
    lines += [
        "",
        "### Windowing (default window config, no embedding)",
        "",
        "| corpus | windowing MB/s | tiktoken alone MB/s | ratio |",
        "|---|---|---|---|",
    ]
    for name, w in summary["windowing"].items():
        lines.append(
            f"| {name} | {w['windowing_MB_per_s']:.1f} | {w['tiktoken_MB_per_s']:.1f} "
            f"| {w['windowing_MB_per_s'] / w['tiktoken_MB_per_s']:.2f} |"
        )
    lines += ["", "### Targets", "", "| target | measured | met |", "|---|---|---|"]
    for t in summary["targets"]:
        met = "n/a" if t["met"] is None else "yes" if t["met"] else "**no**"
        lines.append(f"| {t['target']} | {t['measured']} | {met} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument(
        "--messages",
        type=lambda s: [int(n) for n in s.split(",")],
        default=[2000, 6000],
        help="sizes of the generated LoCoMo-style corpus, comma-separated (default 2000,6000)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated corpus")
    parser.add_argument(
        "--backends",
        type=lambda s: s.split(","),
        default=list(BACKENDS),
        help=f"comma-separated, of {', '.join(BACKENDS)} (default: all)",
    )
    parser.add_argument(
        "--memorybank-scenes",
        type=int,
        help="read only the first N MemoryBank days (smoke runs; default: all 149)",
    )
    parser.add_argument("--json", type=Path, help="write everything measured here")
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker)
        return
    unknown = [b for b in args.backends if b not in BACKENDS]
    if unknown or args.rounds < 1:
        parser.error(f"unknown backends {unknown}" if unknown else "--rounds must be >= 1")
    run = run_benchmark(args)
    summary = summarize(run)
    print(markdown(run, summary))
    if args.json is not None:
        record = {**run.__dict__, "summary": summary}
        args.json.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
