"""The memory jobs of a workspace, as a person reviews them: the spooled jobs with the changes a
held job proposes (each beside the card it changes), approve, reject, retry and dismiss, the
turn a job came from, and consolidation asked for or due.

What comes back is plain data defined here (or ``memory.model``'s), never a widget's state: the
pending screen maps it. ``pending_jobs`` is module-level and blocking (the command line and tests
call it directly); ``JobsService`` runs it off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory.store.store import StoreError
from memory.text.terminal import strip_terminal

if TYPE_CHECKING:
    from memory.constants import MemoryMode
    from memory.jobs.consolidation import ConsolidateOutcome
    from memory.jobs.manager import Manager
    from memory.jobs.views import JobView
    from memory.model import BatchResult
    from memory.store.stores import MemoryStores

__all__ = [
    "IN_FLIGHT",
    "PROPOSED_TEXT_LIMIT",
    "Consolidation",
    "JobInfo",
    "JobsService",
    "PendingJobs",
    "ProposedOp",
    "card_text",
    "consolidation_title",
    "job_info",
    "pending_jobs",
]

IN_FLIGHT = frozenset({"queued", "extracting", "applying", "retrying"})
PROPOSED_TEXT_LIMIT = 64 * 1024  # a hand-grown card is shown cut, never read whole into a diff


@dataclass(frozen=True)
class ProposedOp:
    """One op of a job: ``held`` (waiting for review; ``before``: the card's text now, None when
    it is not there; ``after``: the text proposed) or ``rejected`` (``reason`` says why)."""

    index: int  # the op's index in its job: what approve and reject take
    action: str  # "create" | "update" | "delete"
    level: str
    type: str
    title: str
    summary: str
    filename: str  # "" for a create not written yet
    status: str  # "held" | "rejected"
    reason: str = ""
    before: str | None = None
    after: str | None = None


@dataclass(frozen=True)
class JobInfo:
    """One spooled job. ``state``: queued, extracting, applying, retrying, held, failed, damaged
    or orphaned; ``title``: a consolidation's ("" for a turn's job)."""

    id: str
    state: str
    excerpt: str
    created: str  # RFC 3339 UTC, when the job was spooled
    attempt: int = 0
    max_attempts: int = 3
    next_try_at: str | None = None
    reason: str | None = None
    ops: tuple[ProposedOp, ...] = ()
    workspace: str = ""
    split_from: str | None = None
    turns: int = 1
    title: str = ""


@dataclass(frozen=True)
class PendingJobs:
    """This workspace's spooled jobs (oldest first), the orphaned jobs of every workspace, and
    the memory mode."""

    jobs: tuple[JobInfo, ...]
    orphans: tuple[JobInfo, ...]
    mode: str


@dataclass(frozen=True)
class Consolidation:
    """What a consolidation request became: a spooled job (``job_id``), or ``reason`` why none."""

    level: str
    job_id: str | None
    clusters: int
    cards: int
    reason: str


def _value(x: object) -> str:
    return str(getattr(x, "value", x) if x is not None else "")


def card_text(title: str, summary: str, type: str, body: str) -> str:
    """A card as a review compares it: the fields a change can touch, then the body."""
    head = [f"title: {title}", f"summary: {summary}" if summary else "summary:", f"type: {type}"]
    return "\n".join(head) + "\n\n" + body


def _held_op(stores: MemoryStores, index: int, op: Any) -> ProposedOp:
    action = _value(op.action)
    level = _value(op.level)
    title = op.title or ""
    summary = op.summary or ""
    type_ = _value(op.type)
    before: str | None = None
    after: str | None = None
    if action in ("update", "delete") and op.filename:
        try:
            note = stores.read_note(level, op.filename)
        except (StoreError, OSError, ValueError):
            note = None
        if note is not None:
            m = note.meta
            before = card_text(m.title, m.summary, _value(m.type), note.body[:PROPOSED_TEXT_LIMIT])
            title = title or m.title
            if action == "update":
                # Fields an update leaves out keep the card's values.
                after = card_text(
                    op.title or m.title,
                    op.summary if op.summary is not None else m.summary,
                    type_ or _value(m.type),
                    op.content or "",
                )
            type_ = type_ or _value(m.type)
            summary = summary or m.summary
    elif action == "create":
        after = card_text(title, summary, type_, op.content or "")
    if action == "update" and before is None:
        after = op.content or ""
    return ProposedOp(
        index=index,
        action=action,
        level=level,
        type=type_,
        title=title,
        summary=summary,
        filename=op.filename or "",
        status="held",
        before=before,
        after=after,
    )


def _rejected_ops(view: JobView) -> list[ProposedOp]:
    out = []
    for r in view.rejected:
        op = r.op or {}
        out.append(
            ProposedOp(
                index=r.index,
                action=str(op.get("action", "")),
                level=str(op.get("level", "")),
                type=str(op.get("type", "")),
                title=str(op.get("title", "")),
                summary=str(op.get("summary", "")),
                filename=str(op.get("filename", "")),
                status="rejected",
                reason=r.reason,
            )
        )
    return out


def consolidation_title(view: JobView) -> str:
    """ "Consolidation · project store · 3 clusters" for a consolidation job, else ""."""
    if getattr(view, "purpose", "extract") != "consolidate":
        return ""
    clusters = tuple(getattr(view, "clusters", ()))
    level = strip_terminal(str(getattr(view, "level", None) or "memory"), keep_newlines=False)
    n = len(clusters)
    cards = f", {sum(clusters)} cards" if clusters else ""
    return f"Consolidation · {level} store · {n} cluster{'' if n == 1 else 's'}{cards}"


def job_info(stores: MemoryStores, view: JobView) -> JobInfo:
    """A job as a review shows it: a held job's ops each with the card it changes, read now."""
    ops = [_held_op(stores, h.index, h.op) for h in view.held_ops] if view.state == "held" else []
    ops = sorted([*ops, *_rejected_ops(view)], key=lambda o: (o.index, o.status))
    reason = view.reason
    if view.state == "orphaned":
        reason = reason or f"its workspace {view.workspace} no longer exists"
    return JobInfo(
        id=view.id,
        state=_value(view.state),
        excerpt=view.excerpt,
        created=view.created,
        attempt=view.attempt,
        max_attempts=view.max_attempts,
        next_try_at=view.next_try_at,
        reason=reason,
        ops=tuple(ops),
        workspace=view.workspace or "",
        split_from=view.split_from,
        turns=max(view.turns, 1),
        title=consolidation_title(view),
    )


def pending_jobs(
    stores: MemoryStores, views: Sequence[JobView], orphans: Iterable[JobView], mode: str
) -> PendingJobs:
    """``views`` (this workspace's jobs) and ``orphans`` as a review shows them. Blocking: reads
    the card each held update or delete changes."""
    return PendingJobs(
        jobs=tuple(job_info(stores, v) for v in views),
        orphans=tuple(job_info(stores, v) for v in orphans),
        mode=mode,
    )


def _consolidation(outcome: ConsolidateOutcome) -> Consolidation:
    return Consolidation(
        level=_value(outcome.level),
        job_id=outcome.job_id,
        clusters=int(outcome.clusters),
        cards=int(outcome.cards),
        reason=outcome.reason,
    )


class JobsService:
    """The memory jobs feature over the workspace's manager; ``mode`` reads the memory mode now."""

    def __init__(self, manager: Manager, stores: MemoryStores, mode: Callable[[], MemoryMode]) -> None:
        self.manager = manager
        self.stores = stores
        self._mode = mode
        # job id -> its turn's excerpt, as last listed: a job applied later is named by its turn
        # (its applied event carries no text).
        self.excerpts: dict[str, str] = {}

    async def jobs(self) -> list[JobView]:
        """This workspace's spooled jobs, oldest first (their excerpts are kept)."""
        views = await self.manager.jobs()
        for v in views:
            self.excerpts[v.id] = v.excerpt
        return views

    def excerpt(self, job_id: str) -> str:
        """The turn's excerpt of a job as last listed ("" when it never was)."""
        return self.excerpts.get(job_id, "")

    async def in_flight(self) -> int:
        """How many of this workspace's jobs are queued or being worked on; 0 when the spool
        cannot be read (a quit must not fail on it)."""
        try:
            return sum(1 for j in await self.jobs() if j.state in IN_FLIGHT)
        except Exception:
            return 0

    async def pending(self) -> PendingJobs:
        """This workspace's jobs and every workspace's orphans, with the cards held ops change."""
        views = await self.manager.jobs()
        everyone = await self.manager.jobs(all_workspaces=True)
        orphans = [v for v in everyone if v.state == "orphaned"]
        mode = _value(self._mode())
        return await asyncio.to_thread(pending_jobs, self.stores, views, orphans, mode)

    async def approve(self, job_id: str, ops: tuple[int, ...] | None) -> BatchResult:
        """Write the held ops ``ops`` (all when None); the others stay held in a new job."""
        return await self.manager.approve(job_id, ops)

    async def reject(self, job_id: str, ops: tuple[int, ...] | None) -> int | None:
        """Drop the held ops ``ops`` (all when None), writing nothing. How many ops of the job are
        still held, or None when none is (the job is done)."""
        remaining = await self.manager.reject(job_id, ops)
        return None if remaining is None else len(remaining.held_ops)

    async def retry(self, job_id: str) -> None:
        """A failed job run again now, with a fresh retry budget."""
        await self.manager.retry(job_id)

    async def dismiss(self, job_id: str) -> None:
        await self.manager.dismiss(job_id)

    async def turn_text(self, job_id: str) -> str:
        """The job's turns as text (redacted), for a person to read before dismissing it."""
        return await self.manager.turn_text(job_id)

    async def consolidate(self, level: str | None) -> list[Consolidation]:
        """``/consolidate [level]``: per level the job queued, or why none."""
        return [_consolidation(o) for o in await self.manager.consolidate(level)]

    async def maybe_consolidate(self) -> list[Consolidation]:
        """The automatic consolidation: per store that grew enough, the job queued (or why none)."""
        return [_consolidation(o) for o in await self.manager.maybe_consolidate()]
