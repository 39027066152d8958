"""What every request of one service shares: the reader, the :class:`~memreader.Memory` that
holds it with the store (the routes call it, each call bounded by its request's deadline), the
keys, the limits, the idempotency answers, the metrics and the jobs."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from pydantic_core import to_json
from starlette.requests import Request
from starlette.responses import Response

from memreader.calls.deadlines import Deadline, in_thread
from memreader.cores import PROCESSES_ENV, core_share
from memreader.errors import DeadlineExceeded, StoreError
from memreader.front.memory import Memory
from memreader.readers.base import BaseMemReader
from memreader.service.config import ServiceConfig
from memreader.service.idempotency import IdempotencyCache, KeyedRequest, StoredAnswer
from memreader.service.index_repair import IndexRepairTask
from memreader.service.jobs import JobManager
from memreader.service.keys import LOCAL_PRINCIPAL, KeyRing, Principal
from memreader.service.limits import KeyRates, KeySlots, deadline_problem
from memreader.service.maintenance import MaintainTask
from memreader.service.metrics import ServiceMetrics
from memreader.service.problems import ProblemError, shown
from memreader.service.reading import http_reader_config
from memreader.service.request_scope import admitted_principal, request_deadline
from memreader.service.search_cache import SearchCache, sqlite_version
from memreader.service.shared import SharedState, open_shared_state
from memreader.stores import MemoryStore
from memreader.stores.urls import public_url

__all__ = ["ServiceState", "json_body", "json_response"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def json_body(data: Any) -> bytes:
    """``data`` as the body of a JSON answer: compact UTF-8, not ASCII-escaped.

    Encoded by pydantic-core (already the models' serializer), not :func:`json.dumps`: a page
    of ten hits (~19 KB) costs ~0.1 ms instead of ~0.3. Strings are escaped exactly as
    ``json.dumps(..., ensure_ascii=False)`` escapes them; floats are written in their
    shortest form (``1e-05`` may read ``0.00001``: the same number); NaN and infinities as
    ``NaN``/``Infinity``, as ``json.dumps`` writes them.

    >>> json_body({"memory": "Åsa lives in Porto.", "score": 0.5, "passages": []})
    b'{"memory":"\xc3\x85sa lives in Porto.","score":0.5,"passages":[]}'

    Raises:
        PydanticSerializationError: ``data`` holds something JSON has no value for (a
            ``ValueError``, as :func:`json.dumps` raises for a circular value).
    """
    return to_json(data)


def json_response(data: Any, status: int = 200) -> Response:
    """``data`` as a JSON response (:func:`json_body`)."""
    return Response(json_body(data), status_code=status, media_type="application/json")


class ServiceState:
    """Built once per app; closed when the app stops."""

    def __init__(
        self,
        config: ServiceConfig,
        *,
        reader: BaseMemReader | None = None,
        store: MemoryStore | None = None,
    ) -> None:
        settings = config.settings
        self.config = config
        self.reader_config = http_reader_config(config.reader, settings.content, config.store_url)
        self.reader = reader if reader is not None else self.reader_config.build()
        self._given_store = store
        self._memory: Memory | None = None
        self._search_cache: SearchCache | None = None
        self.keys = KeyRing(config.keys)
        #: What every worker and replica shares (slots, idempotency answers, jobs).
        self.shared = _shared_state(config)
        self.slots = KeySlots(settings.max_concurrent_per_key, self.shared)
        self.rates = KeyRates(settings.requests_per_minute_per_key, self.shared)
        self.idempotency = IdempotencyCache(
            settings.idempotency_ttl_s, settings.idempotency_max_entries, self.shared
        )
        self.metrics = ServiceMetrics()
        self.timeout_s = settings.request_timeout_s
        #: Reads and refinements running at once in this worker (default: its share of the
        #: cores); a read waits for a turn within its deadline.
        self.max_reads = settings.max_concurrent_reads or core_share()
        self._reads = asyncio.Semaphore(self.max_reads)
        # The store calls of search/get/history/forget run here, not on the loop's default
        # executor where reads run their steps: one key's reads never queue another's search.
        self.store_pool = ThreadPoolExecutor(
            max_workers=max(4, self.max_reads), thread_name_prefix="memreader-store"
        )
        self.jobs = JobManager(
            reader=self.reader_config.model_dump(mode="python"),
            store_url=config.store_url,
            roots=config.job_roots(),
            state_dir=config.resolve(settings.jobs.state_dir),
            max_running_per_key=settings.jobs.max_running_per_key,
            keep_finished=settings.jobs.keep_finished,
            metrics=self.metrics,
            shared=self.shared,
        )

    @property
    def memory(self) -> Memory:
        """The service's :class:`~memreader.Memory`: its reader and its store (opened on first
        use by ``Memory``, which wires the embedder, the category keeper and the budget).

        Raises:
            ProblemError: 409, the config names no store.
        """
        if self._memory is None:
            url = self.config.store_url
            if url is None and self._given_store is None:
                raise ProblemError(
                    409,
                    "no-store",
                    "No store",
                    "this service has no memory store: set `store:` in the reader config",
                )
            if url is not None:
                _make_folder_of(url)
            store = self._given_store if self._given_store is not None else url
            self._memory = Memory(self.reader_config, store=store, reader=self.reader)
        return self._memory

    @property
    def store(self) -> MemoryStore:
        """The store :attr:`memory` holds (409 as it)."""
        return self.memory.store

    @property
    def search_cache(self) -> SearchCache:
        """The cache of search answers (:mod:`memreader.service.search_cache`): on for a
        SQLite store, whose writes it sees (the store is opened first).

        Raises:
            ProblemError: 409, the config names no store.
        """
        if self._search_cache is None:
            from memreader.stores.urls import sqlite_file

            self.memory  # noqa: B018 - opened first: its file must exist to be watched
            file = sqlite_file(self.config.store_url or "")
            ttl = self.config.settings.search_cache_s
            version = sqlite_version(file) if file is not None and ttl > 0 else None
            self._search_cache = SearchCache(version, ttl)
        return self._search_cache

    def principal(self, request: Request) -> Principal:
        """Who sent ``request``: what admission found from its headers
        (:mod:`memreader.service.admission`), else authenticated now.

        Raises:
            ProblemError: 401, no key or an unknown one (when keys are configured).
        """
        found = admitted_principal(request)
        return found if found is not None else self.authenticate(request.headers)

    def deadline(self, request: Request) -> Deadline:
        """The request's deadline, counted from its first byte (``request_timeout_s``)."""
        return request_deadline(request, self.timeout_s)

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """Who sends ``headers`` (``Authorization: Bearer KEY``).

        Raises:
            ProblemError: 401, no key or an unknown one (when keys are configured).
        """
        if not self.keys:
            return LOCAL_PRINCIPAL
        scheme, _, presented = headers.get("authorization", "").partition(" ")
        found = self.keys.find(presented.strip()) if scheme.lower() == "bearer" else None
        if found is None:
            raise ProblemError(
                401,
                "unauthorized",
                "Unauthorized",
                "send an API key of this service as `Authorization: Bearer KEY`",
                headers={"WWW-Authenticate": 'Bearer realm="memreader"'},
            )
        return found

    @staticmethod
    def check_user(principal: Principal, user_id: object, where: str = "user_id") -> str:
        """``user_id``, which ``principal`` may read and write.

        Raises:
            ProblemError: 422 not a non-empty string; 403 another key's user.
        """
        if not isinstance(user_id, str) or not user_id:
            raise ProblemError(
                422, "invalid-input", "Invalid input", f"{where} must be a non-empty string"
            )
        if not principal.may_use(user_id):
            raise ProblemError(
                403,
                "forbidden-user",
                "User not allowed",
                f"this key may not read or write the memories of {where} {shown(user_id)}",
            )
        return user_id

    async def blocking(
        self,
        call: Callable[[], T],
        what: str,
        deadline: Deadline | None = None,
        *,
        writes: bool = False,
    ) -> T:
        """``call()`` (of :attr:`memory`) on the store's own threads within ``deadline``
        (default: ``request_timeout_s`` from now; :meth:`Memory.within`), waited
        for until it has ended (a thread cannot be stopped: the request holds its slot until
        then). A read that ended past the deadline is 504; a call that ``writes`` is answered
        with what it did, however late (it is committed).

        Raises:
            ProblemError: 409, no store; 504, the deadline passed (``Memory``'s
                ``DeadlineExceeded``).
        """
        memory = self.memory
        deadline = deadline if deadline is not None else Deadline.after(self.timeout_s)
        if deadline.expired:
            raise deadline_problem(deadline, what)

        def bounded() -> T:
            with memory.within(deadline):
                return call()

        try:
            return await in_thread(bounded, executor=self.store_pool, keep_result=writes)
        except DeadlineExceeded:
            # A write stopped before it committed; a read that answered too late.
            raise deadline_problem(deadline, what, stopped=writes) from None

    @asynccontextmanager
    async def read_turn(self, deadline: Deadline, what: str) -> AsyncIterator[None]:
        """Hold one of the service's ``max_concurrent_reads`` turns for the block, waiting
        for one within ``deadline``.

        Raises:
            ProblemError: 504, no turn came free before the deadline.
        """
        remaining = deadline.remaining
        if deadline.expired:
            raise deadline_problem(deadline, f"{what} (waiting for a free reader)")
        try:
            await asyncio.wait_for(
                self._reads.acquire(), None if remaining == float("inf") else remaining
            )
        except TimeoutError:
            raise deadline_problem(deadline, f"{what} (waiting for a free reader)") from None
        try:
            yield
        finally:
            self._reads.release()

    async def idempotent(
        self,
        request: Request,
        principal: Principal,
        route: str,
        answer: Callable[[], Awaitable[Response]],
    ) -> Response:
        """``answer()``, or the first answer of a retried ``Idempotency-Key`` request (the
        key names the request's method, path, query and body; ``route`` names it in logs)."""
        key = request.headers.get("idempotency-key")
        if key is None:
            return await answer()
        keyed = KeyedRequest(
            request.method, request.url.path, request.url.query, await request.body()
        )
        kept = self.idempotency.begin(principal.name, key, keyed)
        if kept is not None:
            logger.debug("%s: replayed the answer of Idempotency-Key %r", route, key)
            return Response(
                kept.body,
                status_code=kept.status,
                media_type=kept.media_type,
                headers={"Idempotent-Replayed": "true"},
            )
        try:
            response = await answer()
        except BaseException:
            self.idempotency.abandon(principal.name, key)
            raise
        if response.status_code >= 500 or response.status_code == 429:
            self.idempotency.abandon(principal.name, key)
        else:
            stored = StoredAnswer(
                response.status_code, bytes(response.body), response.media_type or ""
            )
            self.idempotency.finish(principal.name, key, stored)
        return response

    def erased(self, texts: Sequence[str]) -> None:
        """Withdraw the kept answers holding ``texts`` (what an erase removed: ids, words);
        a failure is logged as an error (the erase itself is done and answered)."""
        try:
            withdrawn = self.idempotency.withdraw(texts)
        except StoreError as exc:
            logger.error("erase: kept answers holding erased text were not withdrawn: %s", exc)
            return
        if withdrawn:
            logger.info("erase: withdrew %d kept answer(s) holding erased text", withdrawn)

    def maintenance(self) -> MaintainTask | None:
        """The background ``maintain`` of ``maintain_every_s`` (``None``: off, or no store)."""
        every = self.config.settings.maintain_every_s
        if every is None or self.config.store_url is None:
            return None
        return MaintainTask(lambda: self.memory, self.shared, self.store_pool, every)

    def index_repair(self) -> IndexRepairTask | None:
        """The index check and repair at start-up (``None``: ``repair_index_on_start`` off, or
        no store)."""
        if not self.config.settings.repair_index_on_start:
            return None
        if self.config.store_url is None and self._given_store is None:
            return None
        return IndexRepairTask(lambda: self.memory, self.shared, self.store_pool, self.metrics)

    def close(self) -> None:
        """Cancel the jobs, close the shared state and the memory (its store and reader)."""
        self.jobs.close()
        self.shared.close()
        self.store_pool.shutdown(wait=True)
        if self._memory is not None:
            self._memory.close()
            return
        if self._given_store is not None:
            self._given_store.close()
        self.reader.close()


def _shared_state(config: ServiceConfig) -> SharedState:
    """The service's shared state. A lone worker whose default state file cannot be opened
    (the store's folder cannot be made: its requests will say why) keeps it in memory.

    Raises:
        StoreError: the configured state, or that of several workers, cannot be opened.
    """
    try:
        return open_shared_state(config.state_url)
    except StoreError as exc:
        if config.settings.state is not None or os.environ.get(PROCESSES_ENV, "1") != "1":
            raise
        logger.warning("%s; this worker keeps slots, answers and jobs in memory", exc)
        return open_shared_state("memory")


def _make_folder_of(url: str) -> None:
    """Create the folder of a SQLite store file (the service writes: a new store is made).

    Raises:
        StoreError: the folder cannot be created.
    """
    from memreader.stores.urls import sqlite_file

    file = sqlite_file(url)
    if file is None or not os.path.dirname(file):
        return
    try:
        os.makedirs(os.path.dirname(file), exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder of {public_url(url)}: {exc}") from None
