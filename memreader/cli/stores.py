"""``memreader search``, ``memreader list``, ``memreader history`` and ``memreader forget``: a
memory store from the command line (see :mod:`memreader.stores`); and what ``memreader read
--store`` writes with.

- ``search QUERY --store URL --user-id U [-k N] [filters] [--min-score S] [--heat-weight W]
  [--mode M] [--rerank] [--json]``: the best memories (at least S relevant; no cut by default;
  ``--rerank``: in the order ``--config``'s LLM ranks them), each with its score's parts, text
  and sources (:mod:`memreader.cli.summary`); the filters are
  :mod:`memreader.cli.filter_flags`' (``--memory-type``, ``--since``, ``--until``,
  ``--session-id``, ``--agent-id``, ``--task-id``, ``--category``, ``--all``);
- ``list --store URL --user-id U [filters] [--limit N] [--cursor C] [--json]``: the owner's
  memories without a query, the most recently stored first, a page at a time (the next page's
  cursor is printed);
- ``history ID --store URL --user-id U [--json]``: every change of one memory;
- ``forget --store URL --user-id U --source doc:PATH|session:ID|message:ID|input:KEY
  [--erase] [--json]``: what came only from that source expires (``--erase``: is erased, for
  good); the events and the receipt are printed (:mod:`memreader.cli.receipts`);
- ``export-md --store URL --user-id U [--user-id U2 ...] --output DIR
  [--allow-foreign-files] [--layout flat|memu]``: each owner's memory as Markdown files an
  agent can read (``DIR/<user folder>/index.md`` and one file per category; memu: ``memory.md``,
  ``skill.md``, ``index/``, ``memory/``, ``skill/``: see :mod:`memreader.categories.markdown`);
  the paths written are printed.
  It replaces or removes only files it wrote itself, and refuses a user folder holding others
  unless ``--allow-foreign-files`` (:mod:`memreader.categories.markdown_files`).

``--store`` may also come from ``$MEMREADER_STORE``. A store URL's password is never printed
(messages show :func:`~memreader.stores.urls.public_url`). A ``sqlite://`` file that does not
exist is an error here (these commands never create a store). Errors exit 2 with one line,
as every memreader command does.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memreader.cli.filter_flags import add_filter_flags, filters_of
from memreader.cli.flags import add_alias
from memreader.cli.receipts import print_receipt
from memreader.cli.store_access import add_store_flag, open_cli_memory, store_url
from memreader.cli.summary import sources_text
from memreader.errors import InputError
from memreader.scenes.clipping import one_line
from memreader.stores.paging import DEFAULT_PAGE
from memreader.stores.shapes import entry_json, event_json, iso, memory_json, score_json

if TYPE_CHECKING:
    from memreader.front import Memory
    from memreader.items import TextualMemoryItem
    from memreader.stores import SearchHit, WriteEvent

__all__ = [
    "STORE_COMMANDS",
    "StoreOutput",
    "add_store_parsers",
    "run_store_command",
]

#: The subcommands :func:`run_store_command` runs.
#: The help of ``--rerank`` (search and context).
RERANK_HELP = (
    "rerank the store's best max(3k, 20) by the LLM of --config (its rerank_llm, else its llm); "
    "on any LLM failure the store's order stands, said on stderr"
)
STORE_COMMANDS = ("search", "list", "history", "forget", "export-md")
_SOURCES = {
    "doc": "doc_path",
    "session": "session_id",
    "message": "message_id",
    "input": "input_key",
}


def add_store_parsers(commands: Any) -> None:
    """Add ``search``, ``history``, ``forget`` and ``export-md`` to the subcommands
    ``commands``."""
    search = commands.add_parser("search", help="search a memory store (hybrid: text + vectors)")
    search.add_argument("query", help="what to look for")
    search.add_argument("-k", type=int, default=10, help="how many hits")
    add_filter_flags(search, ranking=True)
    search.add_argument(
        "--config",
        help="reader config YAML whose `embedder` embeds the query (default: the built-in "
        "local embedder; use the one the memories were embedded with)",
    )
    search.add_argument(
        "--no-embedding", action="store_true", help="full-text search only (no query vector)"
    )
    search.add_argument("--rerank", action="store_true", help=RERANK_HELP)
    listing = commands.add_parser("list", help="list an owner's memories, newest first")
    add_filter_flags(listing, ranking=False)
    listing.add_argument("--limit", type=int, default=DEFAULT_PAGE, help="memories per page")
    listing.add_argument("--cursor", help="the next page: the cursor the page before printed")
    history = commands.add_parser("history", help="every change of one stored memory")
    history.add_argument("memory_id", metavar="ID", help="the memory's id")
    forget = commands.add_parser(
        "forget", help="forget a source: what came only from it expires (history kept)"
    )
    forget.add_argument(
        "--source",
        required=True,
        help="doc:PATH, session:ID, message:ID or input:KEY (a batch job's input)",
    )
    forget.add_argument(
        "--erase",
        action="store_true",
        help="erase what came only from the source from every place its text lives, and "
        "print the receipt: IRREVERSIBLE (without it, it expires and its history is kept)",
    )
    for command in (search, listing, history, forget):
        add_store_flag(command, env=True)
        command.add_argument("--user-id", help="the owner whose memories this reads (required)")
        command.add_argument("--json", action="store_true", help="print one JSON object")
    _add_export_parser(commands)


def _add_export_parser(commands: Any) -> None:
    """``export-md``: the owners' memory as Markdown files."""
    export = commands.add_parser(
        "export-md",
        help="write owners' memory as Markdown files (an index, one per category; "
        "--layout memu: memU's memory.md, skill.md and folders)",
    )
    add_store_flag(export, env=True)
    export.add_argument(
        "--user-id",
        dest="users",
        metavar="USER_ID",
        action="append",
        help="an owner to export (required; repeatable)",
    )
    add_alias(export, "--user", dest="users", action="append")
    export.add_argument(
        "-o",
        "--output",
        dest="out",
        metavar="DIR",
        help="the folder the owners' folders go in (required)",
    )
    add_alias(export, "--out", dest="out")
    export.add_argument(
        "--allow-foreign-files",
        dest="allow_foreign_files",
        action="store_true",
        help="write into a user folder that holds files the export did not write (they are "
        "left alone; without this flag such a folder is refused)",
    )
    add_alias(export, "--force", dest="allow_foreign_files", action="store_true")
    export.add_argument(
        "--layout",
        choices=("flat", "memu"),
        default="flat",
        help="flat (the default): index.md and <category>.md; memu: memory.md and skill.md "
        "entry files, then index/, memory/<category>.md and skill/<name>/SKILL.md",
    )


def run_store_command(args: argparse.Namespace) -> int:
    """Run one of :data:`STORE_COMMANDS`; 0 when done (errors are raised, typed)."""
    url = store_url(args)
    if args.command == "export-md":
        return _export_md(args, url)
    if not args.user_id or not args.user_id.strip():
        raise InputError(f"{args.command} needs --user-id (every memory has an owner)")
    if args.command == "search":
        return _search(args, url)
    if args.command == "list":
        return _list(args, url)
    with open_cli_memory(url, embeds=False) as memory:  # history and forget never search
        if args.command == "history":
            return _history(memory, args)
        return _forget(memory, args)


def _search(args: argparse.Namespace, url: str) -> int:
    if args.k < 1:
        raise InputError(f"-k must be at least 1, got {args.k}")
    filters = filters_of(args)
    if args.no_embedding and filters.mode == "vector":
        raise InputError("--mode vector needs a query vector: drop --no-embedding")
    off = args.no_embedding or filters.mode == "text"
    with open_cli_memory(url, args.config, embeds=not off) as memory:
        hits = memory.search(
            args.query, user_id=args.user_id, k=args.k, filters=filters, rerank=args.rerank
        )
    if args.json:
        _print_json({"query": args.query, "hits": [_hit_json(hit) for hit in hits]})
        return 0
    if hits and hits[0].rerank is not None and hits[0].rerank.fallback:
        print(f"memreader: the store's order stands: {hits[0].rerank.fallback}", file=sys.stderr)
    for rank, hit in enumerate(hits, 1):
        print(_hit_line(rank, hit))
        print(f"   {one_line(hit.text, 200)}")
        print(f"   {sources_text(hit.memory.item.metadata)}")
    if not hits:
        print("memreader: no memory found", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace, url: str) -> int:
    filters = filters_of(args)
    with open_cli_memory(url, embeds=False) as held:  # a listing never searches
        page = held.get_all(
            user_id=args.user_id, filters=filters, limit=args.limit, cursor=args.cursor
        )
    if args.json:
        memories = [memory_json(memory) for memory in page]
        _print_json({"memories": memories, "next_cursor": page.next_cursor})
        return 0
    for memory in page:
        status = "" if memory.status == "active" else f" [{memory.status}]"
        print(
            f"{memory.id}{status}  {iso(memory.recorded_at)}  {one_line(memory.item.memory, 160)}"
        )
    if page.next_cursor is not None:
        print(f"memreader: more: --cursor {page.next_cursor}", file=sys.stderr)
    elif not page:
        print("memreader: no memory found", file=sys.stderr)
    return 0


def _hit_line(rank: int, hit: SearchHit) -> str:
    s, memory = hit.score, hit.memory
    similarity = "-" if s.similarity is None else f"{s.similarity:.3f}"
    text_rank = "-" if s.text_rank is None else str(s.text_rank)
    status = "" if memory.status == "active" else f" [{memory.status}]"
    return (
        f"{rank}. {memory.id}{status}  final={s.final:.4g} relevance={s.relevance:.3f} "
        f"fused={s.fused:.4f} "
        f"similarity={similarity} text_rank={text_rank} importance={s.importance:.2f} "
        f"decay={s.decay:.4g}"
    )


def _hit_json(hit: SearchHit) -> dict[str, Any]:
    memory, meta = hit.memory, hit.memory.item.metadata
    return {
        "id": memory.id,
        "memory": memory.item.memory,
        "status": memory.status,
        "user_id": meta.user_id,
        "session_id": meta.session_id,
        "memory_type": meta.memory_type.value,
        "valid_from": iso(memory.valid_from),
        "recorded_at": iso(memory.recorded_at),
        "importance": memory.importance,
        "reinforced": memory.reinforced,
        # Where it came from, so a script can go back to the message or document.
        "sources": [source.model_dump(mode="json", exclude_none=True) for source in meta.sources],
        "score": score_json(hit.score),
        **({"rerank": dataclasses.asdict(hit.rerank)} if hit.rerank is not None else {}),
    }


def _history(memories: Memory, args: argparse.Namespace) -> int:
    memory = memories.get(args.memory_id, user_id=args.user_id, used=False)  # an audit
    if memory is None:
        raise InputError(f"user {args.user_id!r} has no memory {args.memory_id!r}")
    entries = memories.history(args.memory_id, user_id=args.user_id)
    if args.json:
        _print_json(
            {
                "id": memory.id,
                "status": memory.status,
                "memory": memory.item.memory,
                "superseded_by": memory.superseded_by,
                "history": [entry_json(entry) for entry in entries],
            }
        )
        return 0
    print(f"{memory.id} [{memory.status}] {one_line(memory.item.memory, 200)}")
    for entry in entries:
        print(f"{iso(entry.at)}  {entry.event:<9} {entry.reason}")
    return 0


def parse_source(text: str) -> Any:
    """The :class:`~memreader.stores.SourceSelector` of ``doc:PATH``, ``session:ID``,
    ``message:ID`` or ``input:KEY``.

    Raises:
        InputError: another shape.
    """
    from memreader.stores import SourceSelector

    kind, sep, value = text.partition(":")
    if not sep or kind not in _SOURCES or not value:
        raise InputError(
            f"--source {text!r}: expected doc:PATH, session:ID, message:ID or input:KEY"
        )
    return SourceSelector(**{_SOURCES[kind]: value})


def _forget(memory: Memory, args: argparse.Namespace) -> int:
    erase: bool = args.erase
    receipt = memory.forget(parse_source(args.source), user_id=args.user_id, erase=erase)
    if args.json:
        events = [event_json(e) for e in receipt]
        shown = receipt.to_dict(events=False)
        _print_json({"source": args.source, "events": events, "receipt": shown})
        return 0
    for event in receipt:
        print(f"{event.event:<7} {event.memory_id}  {event.reason}")
    print_receipt(receipt)
    print(f"memreader: {args.source}: {_counts(receipt)}", file=sys.stderr)
    return 0


def _export_md(args: argparse.Namespace, url: str) -> int:
    from memreader.categories.markdown import export_report

    users = args.users or []
    if not users or any(not user.strip() for user in users):
        raise InputError("export-md needs --user-id U (repeatable; every memory has an owner)")
    if not args.out:
        raise InputError("export-md needs --output FOLDER (where the owners' folders go)")
    with open_cli_memory(url, embeds=False) as memory:  # the export never searches
        report = export_report(
            memory.store,
            users,
            args.out,
            allow_foreign_files=args.allow_foreign_files,
            layout=args.layout,
        )
    for path in sorted(report.written):
        print(path)
    counts = f"{len(report.written)} file(s) for {len(set(users))} user(s)"
    if report.removed:
        counts += f", {len(report.removed)} stale file(s) of its own removed"
    print(f"memreader: {counts}", file=sys.stderr)
    for path in sorted(report.kept):  # foreign files, allowed: never touched, said so
        print(f"memreader: left alone (not written by the export): {path}", file=sys.stderr)
    return 0


def _counts(events: Sequence[WriteEvent]) -> str:
    counts = Counter(event.event for event in events)
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "nothing changed"


class StoreOutput:
    """Where ``memreader read --store URL`` writes each call's items (one transaction per
    call), counting the events for the summary it prints at the end. It holds a
    :class:`~memreader.Memory` on the store with the read's reader config: the read uses its
    reader (:attr:`reader`), so the ``dedup`` and ``reconcile`` steps see this very store, and
    the Memory keeps the categories and the budget as the config says."""

    def __init__(self, url: str, config: Any) -> None:
        from memreader.front import Memory
        from memreader.stores.urls import public_url

        self.where = public_url(url)
        self.memory = Memory(config, store=url)
        self.events: list[WriteEvent] = []

    @property
    def reader(self) -> Any:
        """The reader the read runs (the Memory's)."""
        return self.memory.reader

    def write(self, results: Sequence[Sequence[TextualMemoryItem]], scene_offset: int = 0) -> None:
        """Write one call's items (their sources' scenes counted from ``scene_offset``, as
        the JSONL output counts them)."""
        items = [item for scene_items in results for item in scene_items]
        if scene_offset:
            items = [item.model_copy(deep=True) for item in items]
            for item in items:
                for source in item.metadata.sources:
                    source.scene_index += scene_offset
        if items:
            self.events.extend(self.memory.store.write(items))

    def summary(self) -> str:
        """One line: the store and how many of each event."""
        return f"{self.where}: {len(self.events)} items written ({_counts(self.events)})"

    def close(self) -> None:
        """Close the Memory (its store and its reader's clients)."""
        self.memory.close()


def _print_json(data: dict[str, Any]) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=1))
