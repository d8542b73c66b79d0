"""One job's way to the stores: extract → parse → merge → commit.

The worker hands a picked job to ``Pipeline.run``. The snapshot is taken when the job runs;
the model's raw answers are stored on the job before they are used (a replay re-parses, never
re-asks); proposed updates are merged with the current bodies in bounded requests; the batch
is committed through one transaction over both stores that also removes the job file.

Retries: one budget per job per process, shared by extraction and merge (at most
``max_attempts`` failed requests, exponential backoff between them). An extraction answer
without JSON is asked again once; that re-ask is not a provider failure. A merge answer without
JSON is a failed attempt of that budget: it is asked again at once while the budget lasts, and
then the job fails (kept with its updates, retryable), so an update is never dropped for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from memory.constants import MAX_CONTENT_BYTES, Action, Level
from memory.events import HeldOpView, JobApplied, JobFailed, JobHeld, JobRetrying, MemoryEvent
from memory.extract.completion import Completion, CompletionError, CompletionRequest
from memory.extract.consolidate import build_consolidation_request
from memory.extract.parser import find_json, parse_and_validate
from memory.extract.prompt import MergeItem, build_extraction_request, build_merge_request, parse_merge_answer
from memory.jobs.consolidation import cluster_cards, consolidation_label, consolidation_scope
from memory.jobs.spool import ErrorKind, HeldOp, Job, JobNotFound, MergePart, RetryInfo, Spool, SpoolError
from memory.model import BatchResult, Operation, Rejection, dump_op, rfc3339
from memory.store.ops import op_pairs, validate_operations
from memory.store.stores import MemoryStores
from memory.store.transaction import JobAlreadyDone, TransactionError
from memory.store.trust import UNTRUSTED_REASON
from memory.text.names import quote

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # failed requests per job per process, extraction and merge together
BACKOFF_BASE = 1.0  # seconds: 1, 2, 4 …
REQUEST_TIMEOUT = 300.0  # one model request; a hung provider must not hold the worker forever
FALLBACK_SOURCE = "memory"
# A note whose current body is larger than a note may become cannot be merged into one.
MAX_MERGE_BODY_BYTES = MAX_CONTENT_BYTES
# Bodies (current + proposed) carried by one merge request; more updates go in further requests.
# Bounded so the answer (which repeats every body) stays well within one request's max_tokens.
MAX_MERGE_REQUEST_BYTES = 48 * 1024

REASK_NOTE = (
    "\n\nYour previous answer contained no JSON. Answer again with only the JSON array of "
    "operations (or [] if nothing is worth keeping), no prose."
)
MERGE_REASK_NOTE = (
    '\n\nYour previous answer contained no JSON. Answer again with only the {"merged": [...]} '
    "object, no prose."
)

T = TypeVar("T")
_OP_PREFIX = re.compile(r"^op \d+: ")
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


class JobFailure(Exception):
    def __init__(self, reason: str, *, kind: ErrorKind, retryable: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.retryable = retryable


def op_reason(index: int, reason: str) -> str:
    """``op <index>: <reason>``; a reason validated alone says ``op 0:``, which is replaced."""
    return f"op {index}: {_OP_PREFIX.sub('', reason)}"


def revalidate(index: int, op: Operation) -> tuple[Operation | None, Rejection | None]:
    """Run one op through the parser's validation again (a merged body, an approval)."""
    ops, rejected = validate_operations([dump_op(op, content_limit=None)])
    pairs = op_pairs(ops)
    if pairs:
        return pairs[0][1], None
    if not rejected:  # a noop stays a noop
        return op, None
    return None, Rejection(index=index, reason=op_reason(index, rejected[0].reason), op=dump_op(op))


def _merge_found(text: str) -> bool:
    def accept(value: Any) -> list[object] | None:
        return value["merged"] if isinstance(value, dict) and isinstance(value.get("merged"), list) else None

    return find_json(text, accept, starts="{") is not None


def _item_bytes(item: MergeItem) -> int:
    return len(item.current_body.encode("utf-8", "surrogatepass")) + len(
        item.proposed.encode("utf-8", "surrogatepass")
    )


def merge_chunks(items: list[MergeItem], budget: int = MAX_MERGE_REQUEST_BYTES) -> list[list[MergeItem]]:
    """Items in order, grouped so that no request carries more than ``budget`` bytes of bodies."""
    chunks: list[list[MergeItem]] = []
    size = 0
    for item in items:
        n = _item_bytes(item)
        if not chunks or size + n > budget:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += n
    return chunks


class Pipeline:
    """Runs one job at a time for the worker. ``save``/``gone`` keep the manager's view of its own writes."""

    def __init__(
        self,
        *,
        stores: MemoryStores,
        spool: Spool,
        emit: Callable[[MemoryEvent], None],
        in_thread: Callable[..., Awaitable[Any]],
        save: Callable[[Job], Awaitable[None]],
        gone: Callable[[str], None],
        source: Callable[[Job], str],
        sleep: Sleep,
        clock: Clock,
        max_attempts: int = MAX_ATTEMPTS,
        request_timeout: float | None = REQUEST_TIMEOUT,
        backoff_base: float | None = None,
    ) -> None:
        self.stores = stores
        self.spool = spool
        self._emit = emit
        self._in_thread = in_thread
        self._save = save
        self._gone = gone
        self._source = source
        self._sleep = sleep
        self._clock = clock
        # Seconds before the 2nd attempt (then doubling): what the job's next_try_at says is
        # exactly what the worker sleeps.
        self.backoff_base = BACKOFF_BASE if backoff_base is None else max(0.0, backoff_base)
        self.max_attempts = max(1, max_attempts)
        self._request_timeout = request_timeout
        # Failed requests per job id in this process: the retry budget.
        self._failures: dict[str, int] = {}
        # Jobs this process failed: one picked again was re-queued by a person (in any process:
        # the pending screen's retry, `memory flush`), so it gets a fresh budget here.
        self._ended_failed: set[str] = set()

    def reset_budget(self, job_id: str) -> None:
        """A person asked for the job again (flush, retry): it gets a fresh budget."""
        self._failures.pop(job_id, None)

    async def run(self, job: Job, completion: Completion) -> None:
        if job.id in self._ended_failed:
            self._ended_failed.discard(job.id)
            self.reset_budget(job.id)
        try:
            await self._process(job, completion)
        except asyncio.CancelledError:
            raise  # stays spooled as it is: the next worker picks it up
        except JobFailure as f:
            await self._fail(job, f.reason, f.kind, f.retryable)
        except JobNotFound:
            log.info("memory job %s left the spool while it ran", job.id)
        except Exception as e:
            log.exception("memory job %s failed", job.id)
            await self._fail(job, f"internal error: {type(e).__name__}: {e}", "internal", True)

    async def _fail(self, job: Job, reason: str, kind: ErrorKind, retryable: bool) -> None:
        job.state = "failed"
        job.phase = None
        job.retry = None
        job.error = reason
        job.error_kind = kind
        job.retryable = retryable
        try:
            await self._save(job)
        except JobNotFound:
            return
        log.warning("memory job %s failed: %s", job.id, reason)
        self._ended_failed.add(job.id)
        self._emit(JobFailed(job_id=job.id, reason=reason, retryable=retryable))

    # -- the steps -----------------------------------------------------------------------------

    async def _process(self, job: Job, completion: Completion) -> None:
        consolidating = job.purpose == "consolidate"
        ask = self._consolidate_ask if consolidating else self._extract
        if job.raw_answer is None:
            if not await ask(job, completion, reask=False):
                return
        assert job.raw_answer is not None
        # Parsing an untrusted answer is bounded but not free: off the loop, like file work.
        parsed = await asyncio.to_thread(parse_and_validate, job.raw_answer)
        if not parsed.found and not job.reasked:
            await ask(job, completion, reask=True)
            parsed = await asyncio.to_thread(parse_and_validate, job.raw_answer)
        if not parsed.found:
            raise JobFailure(
                "the model's answer held no JSON operations, also when asked again "
                "(its raw answer is kept on the job)",
                kind="unparseable",
                retryable=True,
            )
        pairs = op_pairs(parsed.ops)
        rejected = list(parsed.rejected)
        if consolidating:
            # No merge request: the model saw the bodies, its updates replace them as given.
            pairs, refused = await self._in_thread(consolidation_scope, self.stores, job, pairs)
            rejected += refused
        else:
            pairs, merge_rejected = await self._merge_updates(job, completion, pairs)
            rejected += merge_rejected
        effective = [(i, op) for i, op in pairs if op.action is not Action.NOOP]
        if job.mode == "review" and effective:
            job.held_ops = [HeldOp(index=i, op=op) for i, op in effective]
            job.rejected = rejected
            job.state = "held"
            job.phase = None
            job.error = None
            job.error_kind = None
            await self._save(job)
            self._emit(
                JobHeld(
                    job_id=job.id,
                    ops=tuple(HeldOpView(index=h.index, op=h.op) for h in job.held_ops),
                    rejected=tuple(rejected),
                    purpose=job.purpose,
                )
            )
            return
        job.rejected = rejected  # kept on the job if the commit fails
        await self._commit(job, effective, rejected)

    async def _consolidate_ask(self, job: Job, completion: Completion, *, reask: bool) -> bool:
        """Ask the memory model to clean the job's store, with its clusters' current bodies.
        False when none of the clusters' cards is left (the job is done, nothing to ask)."""
        level = job.level
        if level is None:
            raise JobFailure("a consolidation job names no store", kind="internal", retryable=False)
        if level is Level.PROJECT and not await self._in_thread(lambda: self.stores.project_trusted):
            # The model never sees a store the person has not trusted.
            raise JobFailure(UNTRUSTED_REASON, kind="apply", retryable=True)
        snap = await self._in_thread(self.stores.snapshot)
        cards, clusters = await self._in_thread(cluster_cards, self.stores, level, job.clusters)
        if not cards:
            await self._commit(job, [], [])
            return False
        index_md = snap.project_md if level is Level.PROJECT else snap.user_md
        stale = snap.stale if level is Level.PROJECT else {}
        request = build_consolidation_request(level, index_md, cards, stale, clusters=clusters)
        if reask:
            request = request.model_copy(update={"prompt": request.prompt + REASK_NOTE})
        answer = await self._ask(job, completion, request)
        # Kept before parsing, with the hashes the model saw: a replay re-parses, never re-asks.
        job.raw_answer = answer
        job.snapshot_hashes = dict(snap.hashes)
        job.reasked = job.reasked or reask
        job.phase = "applying"
        await self._save(job)
        return True

    async def _extract(self, job: Job, completion: Completion, *, reask: bool) -> bool:
        # The snapshot is taken now, when the job runs: it sees every batch committed before.
        snap = await self._in_thread(self.stores.snapshot)
        request = build_extraction_request(list(job.turns), snap.project_md, snap.user_md, stale=snap.stale)
        if reask:
            request = request.model_copy(update={"prompt": request.prompt + REASK_NOTE})
        answer = await self._ask(job, completion, request)
        # Kept before parsing, with the hashes the model saw: a replay re-parses, never re-asks.
        job.raw_answer = answer
        job.snapshot_hashes = dict(snap.hashes)
        job.reasked = job.reasked or reask
        job.merge_raw = None
        job.phase = "applying"
        await self._save(job)
        return True

    async def _ask(self, job: Job, completion: Completion, request: CompletionRequest) -> str:
        """One request, retried with exponential backoff while the job's budget lasts."""
        while True:
            retryable = True
            try:
                async with asyncio.timeout(self._request_timeout):
                    answer = await completion(request)
                if not isinstance(answer, str):
                    raise TypeError(f"the completion returned {type(answer).__name__}, not text")
                return answer
            except CompletionError as e:
                retryable = e.retryable
                reason = str(e) or type(e).__name__
            except TimeoutError:
                reason = f"no answer within {self._request_timeout:g} s"
            except Exception as e:
                reason = f"{type(e).__name__}: {e}"
            used = self._spend(job)
            # The attempt count is the job's retry info alone (shown as "retrying 2/3"): the
            # reason does not repeat a count of its own.
            job.error = f"{request.purpose} request failed: {reason}"
            job.error_kind = "provider"
            if not retryable:
                raise JobFailure(
                    f"{request.purpose} request failed: {reason}", kind="provider", retryable=False
                )
            if used >= self.max_attempts:
                raise JobFailure(
                    f"{request.purpose} request failed; {used} attempts used in all; last: {reason}",
                    kind="provider",
                    retryable=True,
                )
            delay = self.backoff_base * 2 ** (used - 1)
            next_try = rfc3339(_dt.datetime.fromtimestamp(self._clock() + delay, _dt.UTC))
            info = RetryInfo(
                attempt=used, max_attempts=self.max_attempts, next_try_at=next_try, reason=reason
            )
            phase = job.phase
            job.retry, job.phase = info, "retrying"
            try:
                await self._save(job)
            except JobNotFound:
                raise
            except (SpoolError, OSError):
                log.warning("memory job %s: cannot record the retry", job.id)
            self._emit(JobRetrying(job_id=job.id, **info.model_dump()))
            await self._sleep(delay)
            job.retry, job.phase = None, phase
            with contextlib.suppress(SpoolError, OSError):
                await self._save(job)  # other windows: no longer waiting, asking again

    def _spend(self, job: Job) -> int:
        """One failed attempt of the job's budget; returns the attempts used in this process."""
        used = self._failures[job.id] = self._failures.get(job.id, 0) + 1
        job.attempts += 1
        return used

    async def _ask_merge(self, job: Job, completion: Completion, request: CompletionRequest) -> str:
        """A merge answer that holds the ``{"merged": [...]}`` object.

        An answer without it is a failed attempt of the job's budget and is asked again at once,
        saying so; when the budget is spent the job fails (kind ``merge``, retryable) with its
        updates kept, so a retry asks for these merges again.
        """
        asking, unparsed = request, 0
        while True:
            answer = await self._ask(job, completion, asking)
            if _merge_found(answer):
                return answer
            unparsed += 1
            used = self._spend(job)
            log.warning(
                "memory job %s: merge answer without JSON (attempt %d of %d)", job.id, used, self.max_attempts
            )
            if used >= self.max_attempts:
                again = ", also when asked again" if unparsed > 1 else ""
                raise JobFailure(
                    f"the merge answer held no JSON{again}; {used} attempts used in all "
                    "(the updates are kept on the job: retry asks again)",
                    kind="merge",
                    retryable=True,
                )
            asking = request.model_copy(update={"prompt": request.prompt + MERGE_REASK_NOTE})

    async def _merge_updates(
        self, job: Job, completion: Completion, pairs: list[tuple[int, Operation]]
    ) -> tuple[list[tuple[int, Operation]], list[Rejection]]:
        """Merge every proposed update with the note's current body, in bounded requests: the
        model proposes a new body, a second request merges it with what the note says now."""
        updates = [(i, op) for i, op in pairs if op.action is Action.UPDATE]
        if not updates:
            return pairs, []
        keys = {i: f"op{i}" for i, _ in updates}
        refused: dict[int, str] = {}
        parts = list(job.merge_raw or [])
        asked = {k for p in parts for k in p.keys}
        if "*" not in asked:  # "*": a first-version job whose one answer covered every update
            items = await self._merge_items(
                [(i, op) for i, op in updates if keys[i] not in asked], keys, refused
            )
            for chunk in merge_chunks(items):
                answer = await self._ask_merge(job, completion, build_merge_request(chunk))
                parts.append(MergePart(keys=[it.key for it in chunk], answer=answer))
                job.merge_raw = list(parts)  # kept before use, like the extraction answer
                await self._save(job)
        merged = _merged_bodies(job.id, parts, list(keys.values()))
        return _with_merged(pairs, keys, merged, refused)

    async def _merge_items(
        self, updates: list[tuple[int, Operation]], keys: dict[int, str], refused: dict[int, str]
    ) -> list[MergeItem]:
        """The merge request's items for ``updates``; an update that cannot be merged gets its
        reason in ``refused`` instead."""
        items: list[MergeItem] = []
        # An untrusted project note's body must not reach a merge request: the model never
        # sees a store the person has not trusted.
        project_open = not any(op.level is Level.PROJECT for _, op in updates) or await self._in_thread(
            lambda: self.stores.project_trusted
        )
        for i, op in updates:
            if op.level is Level.PROJECT and not project_open:
                refused[i] = UNTRUSTED_REASON
                continue
            try:
                note = await self._in_thread(self.stores.read_note, op.level, op.filename)
            except Exception as e:
                refused[i] = f"cannot read {op.level} note {quote(op.filename)}: {e}"
                continue
            # The file's final newline is the store's, not the note's content.
            size = len(note.body.removesuffix("\n").encode("utf-8", "surrogatepass"))
            if size > MAX_MERGE_BODY_BYTES:
                refused[i] = (
                    f"{op.level} note {quote(op.filename)} is too large to merge ({size} bytes, limit "
                    f"{MAX_MERGE_BODY_BYTES}): edit it by hand"
                )
                continue
            assert op.level is not None  # validation gives every update a level
            items.append(
                MergeItem(
                    key=keys[i],
                    filename=op.filename or "",
                    level=op.level,
                    title=note.meta.title,
                    current_body=note.body,
                    proposed=op.content or "",
                )
            )
        return items

    async def _commit(self, job: Job, ops: list[tuple[int, Operation]], rejected: list[Rejection]) -> None:
        path = self.spool.path(job.id)
        if not ops and not rejected:
            # Nothing to keep and nothing to record: no transaction, no history entry.
            await self._in_thread(self.spool.delete, job.id)
            self._gone(job.id)
            self._emit(JobApplied(job_id=job.id, created=job.created))
            return
        try:
            result = await self._in_thread(
                self.stores.apply,
                ops,
                source=self._source(job),
                expected=job.snapshot_hashes or {},
                jobs=[path],
                rejected=rejected,
                label=job_label(job),
                kind="consolidation" if job.purpose == "consolidate" else "turn",
                took_over=job.merged_from,
            )
        except JobAlreadyDone:
            log.info("memory job %s was committed before; dropped", job.id)
            self._gone(job.id)
            return
        except (TransactionError, OSError) as e:
            raise JobFailure(f"could not commit the batch: {e}", kind="apply", retryable=True) from None
        self._gone(job.id)
        emit_result(self._emit, job.id, result, created=job.created)


TOOK_OVER = " took over "
# What follows it in a label is the turn's excerpt (a person's words, for ``memory log``).
EXCERPT_SEP = ": "


def job_label(job: Job) -> str:
    """The history label of a job's batch, for people (``memory log``): the job, the jobs it took
    over, then the turn's excerpt (which turn a batch came from). Code reads the entry's
    ``kind`` and ``took_over`` instead."""
    label = f"memory job {job.id}{consolidation_label(job)}"
    if job.merged_from:
        label += f"{TOOK_OVER}{' '.join(job.merged_from)}"
    excerpt = job.excerpt() if job.purpose != "consolidate" else ""
    return f"{label}{EXCERPT_SEP}{excerpt}" if excerpt else label


def emit_result(
    emit: Callable[[MemoryEvent], None], job_id: str, result: BatchResult, *, created: str = ""
) -> None:
    """``JobApplied`` for a committed job (``created``: when it was spooled)."""
    emit(
        JobApplied(
            job_id=job_id,
            applied=tuple(result.applied),
            rejected=tuple(result.rejected),
            conflicts=tuple(result.conflicts),
            dropped_cites=tuple(result.dropped_cites),
            txid=result.txid,
            created=created,
        )
    )


def _merged_bodies(job_id: str, parts: list[MergePart], all_keys: list[str]) -> dict[str, str]:
    """The merged body by item key, from every merge answer kept on the job (first one wins)."""
    merged: dict[str, str] = {}
    for part in parts:
        try:
            got = parse_merge_answer(part.answer, all_keys if "*" in part.keys else part.keys)
        except Exception as e:
            log.warning("memory job %s: unreadable merge answer: %s", job_id, e)
            continue
        for k, v in got.items():
            merged.setdefault(k, v)
    return merged


def _with_merged(
    pairs: list[tuple[int, Operation]], keys: dict[int, str], merged: dict[str, str], refused: dict[int, str]
) -> tuple[list[tuple[int, Operation]], list[Rejection]]:
    """The batch with each update's content replaced by its merged body (validated again); an
    update without one is rejected, with the reason it was refused if it was."""
    out: list[tuple[int, Operation]] = []
    rejected: list[Rejection] = []
    for i, op in pairs:
        if op.action is not Action.UPDATE:
            out.append((i, op))
            continue
        body = merged.get(keys[i])
        if body is None:
            why = (
                refused.get(i)
                or f"the merge answer has no merged body for {op.level} note {quote(op.filename)}"
            )
            rejected.append(Rejection(index=i, reason=op_reason(i, why), op=dump_op(op)))
            continue
        new_op, rejection = revalidate(i, op.model_copy(update={"content": body}))
        if rejection is not None:
            rejected.append(rejection)
        elif new_op is not None:
            out.append((i, new_op))
    return out, rejected


__all__ = [
    "BACKOFF_BASE",
    "MAX_ATTEMPTS",
    "MAX_MERGE_BODY_BYTES",
    "MAX_MERGE_REQUEST_BYTES",
    "MERGE_REASK_NOTE",
    "REASK_NOTE",
    "JobFailure",
    "Pipeline",
    "emit_result",
    "job_label",
    "merge_chunks",
    "revalidate",
]
