"""What the memory screens show, read from the stores and the spool.

Synchronous and reading the disk: the bridge calls these in worker threads and hands the frozen
results to the screens (widgets/cards/browser.py, widgets/pending/screen.py), which only draw them.
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from memory.constants import MANUAL_SOURCE, Action, Level
from memory.model import rfc3339
from memory.store.frontmatter import FrontMatterError, parse_meta, split_note
from memory.store.store import StoreError
from memory.text.lines import one_line
from memory.text.names import sanitize_summary, sanitize_title
from memory.text.terminal import strip_terminal
from widgets.cards.card_list import CardRow, CiteLine
from widgets.cards.draft import CardConflict, CardDraft, ConflictSide
from widgets.pending.state import PendingJob, PendingJobState, PendingOp, PendingState

if TYPE_CHECKING:
    from memory.events import JobApplied
    from memory.grounding.staleness import CardCheck
    from memory.grounding.usage import CardUse
    from memory.jobs.views import JobView
    from memory.model import ConflictSides, Note, NoteMeta
    from memory.store.stores import MemoryStores

__all__ = [
    "MERGE_MARK",
    "AppliedRecord",
    "applied_record",
    "card_conflict",
    "card_rows",
    "card_text",
    "consolidation_title",
    "draft_of",
    "merge_draft",
    "pending_state",
    "read_draft",
]

PROPOSED_TEXT_LIMIT = 64 * 1024  # a hand-grown card is shown cut, never read whole into a diff

log = logging.getLogger(__name__)


def _value(x: object) -> str:
    return str(getattr(x, "value", x) if x is not None else "")


# -- the card browser --------------------------------------------------------------------------


def _cites(note: Note, check: CardCheck | None) -> tuple[CiteLine, ...]:
    """The card's citations (from its front matter) with their states as checked now."""
    states = {c.spec: c for c in check.cites} if check is not None else {}
    out = []
    for cite in note.meta.cites:
        state = states.get(cite.spec)
        out.append(
            CiteLine(spec=strip_terminal(cite.spec, keep_newlines=False),
                     state=state.state if state is not None else "",
                     reason=strip_terminal(state.reason, keep_newlines=False) if state is not None else "")
        )
    return tuple(out)


def _row(
    level: str, note: Note, untrusted: bool, check: CardCheck | None = None, use: CardUse | None = None,
    now: _dt.datetime | None = None, in_prompt: bool = True,
) -> CardRow:
    from memory.grounding.usage import use_text

    meta = note.meta
    stale = check.reason if check is not None and check.stale else None
    return CardRow(
        level=level,
        filename=note.filename,
        type="" if note.broken and not meta.created else _value(meta.type),
        title=meta.title,
        summary=meta.summary,
        updated=meta.updated,
        source="manual" if meta.source == MANUAL_SOURCE else "model",
        body=note.body,
        sha256=note.sha256,
        untrusted=untrusted,
        broken=note.broken,
        stale=None if stale is None else strip_terminal(stale, keep_newlines=False),
        cites=_cites(note, check),
        reads=use.reads if use is not None else 0,
        last_read=use.last_read if use is not None else "",
        use=use_text(use, now),
        pinned=bool(getattr(meta, "pinned", False)),
        in_prompt=in_prompt,
        conflict=card_conflict(note),
    )


# -- conflicted cards -------------------------------------------------------------

# Opens the other version in a merge draft. The editor refuses a body that still holds it
# (app/tui/screens/cards.py): the person merges the two and deletes it, or takes one side.
MERGE_MARK = "▼▼▼ THE OTHER VERSION"


def _parse_side(text: str, fallback: NoteMeta) -> tuple[NoteMeta | None, str, str]:
    """One side's (front matter, body, problem); a side that does not parse is all body."""
    try:
        head, body = split_note(text)
        return parse_meta(head, fallback_type=fallback.type), body, ""
    except FrontMatterError as e:
        return None, text, one_line(e, 200)


def _side_draft(level: str, mine: NoteMeta | None, body: str, other: NoteMeta | None, note: Note) -> CardDraft:
    """A side as the editor would save it: sanitized like any card read from a clone. An
    unparsed side borrows the other side's title and type (else the file's), nothing else."""
    fields = mine or other
    title = sanitize_title(fields.title) if fields is not None else ""
    return CardDraft(
        level=level,
        type=_value(fields.type if fields is not None else note.meta.type),
        title=title or sanitize_title(note.filename.removesuffix(".md")) or note.filename,
        summary=sanitize_summary(mine.summary) if mine is not None else "",
        body=strip_terminal(body, keep_newlines=True),
        cites=tuple(one_line(c.spec) for c in mine.cites) if mine is not None else (),
        pinned=bool(mine.pinned) if mine is not None else False,
    )


def _label(label: str) -> str:
    """git's label for a side, one short line: a commit id (``git pull`` from a URL) cut to 12."""
    text = one_line(label, 60)
    return text[:12] if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", text) else text


def card_conflict(note: Note) -> CardConflict | None:
    """Both versions of a card git left with conflict markers (None for any other card)."""
    sides: ConflictSides | None = note.conflict
    if sides is None:
        return None
    level = note.level.value
    ours = _parse_side(sides.ours, note.meta)
    theirs = _parse_side(sides.theirs, note.meta)
    return CardConflict(
        ours=ConflictSide(_label(sides.ours_label), _side_draft(level, ours[0], ours[1], theirs[0], note),
                          ours[2]),
        theirs=ConflictSide(_label(sides.theirs_label),
                            _side_draft(level, theirs[0], theirs[1], ours[0], note), theirs[2]),
    )


def merge_draft(conflict: CardConflict) -> CardDraft:
    """"Edit the merge": the fields of our side (of theirs when ours does not parse); the body
    that side's, then, when anything differs, the other version under ``MERGE_MARK`` (its
    differing fields, then its body) for the person to merge by hand. Never git's markers."""
    names = conflict.names()
    first, second, which = conflict.ours, conflict.theirs, names[1]
    if conflict.ours.problem and not conflict.theirs.problem:
        first, second, which = conflict.theirs, conflict.ours, names[0]
    a, b = first.draft, second.draft
    fields: list[str] = []
    if not second.problem:  # an unparsed side's fields are borrowed: only its text is its own
        for name, mine, other in (("title", a.title, b.title), ("summary", a.summary, b.summary),
                                  ("type", a.type, b.type), ("cites", ", ".join(a.cites), ", ".join(b.cites))):
            if mine != other:
                fields.append(f"{name}: {other}")
    if not fields and a.body == b.body:
        return a
    label = f"{which.name} · {which.detail}" if which.detail else which.name
    head = f"{MERGE_MARK} ({label}): merge it into the text above, then delete from this line down ▼▼▼"
    block = "\n".join([head, *fields])
    body = f"{a.body.rstrip()}\n\n{block}\n\n{b.body}" if a.body.strip() else f"{block}\n\n{b.body}"
    return CardDraft(level=a.level, type=a.type, title=a.title, summary=a.summary, body=body, cites=a.cites,
                     pinned=a.pinned)


def _grounding(stores: MemoryStores) -> tuple[Mapping[str, CardCheck], dict[str, dict[str, CardUse]]]:
    """The project cards' citation checks and each level's use counts. Neither may keep the
    cards from being listed: a failure is logged and the browser shows the cards without it."""
    try:
        checks: Mapping[str, CardCheck] = stores.staleness()
    except Exception:
        log.warning("checking the cards' citations failed", exc_info=True)
        checks = {}
    uses: dict[str, dict[str, CardUse]] = {}
    for level in stores.stores:
        try:
            uses[level.value] = stores.usage_of(level)
        except Exception:
            log.warning("reading the %s cards' use failed", level.value, exc_info=True)
    return checks, uses


def _shown(stores: MemoryStores) -> frozenset[str]:
    """The ``level/filename`` of the cards a new Run's index shows (the browser's "in the
    prompt" filter); an unreadable store only costs the filter its answer."""
    try:
        return stores.prompt_index().shown
    except Exception:
        log.warning("building the prompt's index failed", exc_info=True)
        return frozenset()


def card_rows(stores: MemoryStores, *, now: _dt.datetime | None = None) -> tuple[list[CardRow], str | None]:
    """Every card of both levels (project first, each sorted by filename), with its citations'
    states and its use, and a note for the browser's header (an untrusted project store, a
    level that cannot be read)."""
    rows: list[CardRow] = []
    notes: list[str] = []
    checks, uses = _grounding(stores)
    shown = _shown(stores)
    trusted = bool(stores.project_trusted) if stores.has_project_level else True
    for level in (Level.PROJECT, Level.USER) if stores.has_project_level else (Level.USER,):
        try:
            found = stores.notes(level)
        except (StoreError, OSError) as e:
            notes.append(f"{level} memory could not be read: {strip_terminal(str(e), keep_newlines=False)}")
            continue
        untrusted = level is Level.PROJECT and not trusted
        if untrusted and found:
            notes.append("project memory is untrusted: its cards are not used until you trust it (asked at start)")
        checked = checks if level is Level.PROJECT else {}
        used = uses.get(level.value, {})
        rows.extend(
            _row(level.value, n, untrusted, checked.get(n.filename), used.get(n.filename), now,
                 in_prompt=f"{level.value}/{n.filename}" in shown)
            for n in found
        )
    if not stores.has_project_level:
        notes.append("this workspace has no project level: its project store is the user store")
    return rows, " · ".join(notes) or None


def draft_of(note: Note) -> CardDraft:
    """A card as the editor loads it; a conflicted card as its merge (``merge_draft``), never
    with git's markers (saved, they would leave it conflicted)."""
    conflict = card_conflict(note)
    if conflict is not None:
        return merge_draft(conflict)
    return CardDraft(
        level=note.level.value,
        type="" if note.broken and not note.meta.created else _value(note.meta.type),
        title=note.meta.title,
        summary=note.meta.summary,
        body=note.body,
        cites=tuple(c.spec for c in note.meta.cites),
        pinned=bool(getattr(note.meta, "pinned", False)),
    )


def read_draft(stores: MemoryStores, level: str, filename: str) -> tuple[CardDraft, str] | None:
    """The card on disk now (draft, sha256), or None when it is gone."""
    try:
        note = stores.read_note(level, filename)
    except (StoreError, OSError):
        return None
    return draft_of(note), note.sha256


# -- the pending screen ------------------------------------------------------------------------


@dataclass(frozen=True)
class AppliedRecord:
    """A job finished while this app ran (by this window or another on the workspace): applied,
    or ``rejected`` when it had ops and every one was refused (nothing written)."""

    job_id: str
    seen: str  # RFC 3339 UTC: when the app heard of it (the order of the session's rows)
    excerpt: str
    ops: tuple[PendingOp, ...]
    counts: tuple[int, int, int]
    created: str = ""  # RFC 3339 UTC: when the job was spooled (the row's age); "" unknown
    state: Literal["applied", "rejected"] = "applied"
    dropped: tuple[str, ...] = ()  # "op N: 'x' leaves the workspace…", one per dropped citation


def applied_record(event: JobApplied, excerpt: str, *, now: _dt.datetime | None = None) -> AppliedRecord:
    ops: list[PendingOp] = []
    counts = [0, 0, 0]
    for a in event.applied:
        counts[{Action.CREATE: 0, Action.UPDATE: 1, Action.DELETE: 2}.get(a.action, 1)] += 1
        ops.append(
            PendingOp(index=a.index, action=_value(a.action), level=_value(a.level), type="", title=a.title,
                      summary="", filename=a.filename, status="applied")
        )
    for c in event.conflicts:
        op = c.op or {}
        ops.append(
            PendingOp(index=c.index, action=str(op.get("action", "update")), level=_value(c.level),
                      type=str(op.get("type", "")), title=str(op.get("title", "")), summary="",
                      filename=c.filename, status="conflict", reason=c.reason)
        )
    for r in event.rejected:
        op = r.op or {}
        ops.append(
            PendingOp(index=r.index, action=str(op.get("action", "")), level=str(op.get("level", "")),
                      type=str(op.get("type", "")), title=str(op.get("title", "")), summary="",
                      filename=str(op.get("filename", "")), status="rejected", reason=r.reason)
        )
    ops.sort(key=lambda o: o.index)
    when = rfc3339(now or _dt.datetime.now(_dt.UTC))
    dropped = tuple(
        f"op {d.index}: {d.reason}" if repr(d.cite) in d.reason else f"op {d.index}: {d.cite!r}: {d.reason}"
        for d in event.dropped_cites
    )
    return AppliedRecord(job_id=event.job_id, seen=when, excerpt=excerpt, ops=tuple(ops),
                         counts=(counts[0], counts[1], counts[2]), created=event.created,
                         state="rejected" if event.all_refused else "applied", dropped=dropped)


def card_text(title: str, summary: str, type: str, body: str) -> str:
    """A card as the pending screen compares it: the fields a change can touch, then the body."""
    head = [f"title: {title}", f"summary: {summary}" if summary else "summary:", f"type: {type}"]
    return "\n".join(head) + "\n\n" + body


def _held_op(stores: MemoryStores, index: int, op: Any) -> PendingOp:
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
                after = card_text(op.title or m.title, op.summary if op.summary is not None else m.summary,
                                  type_ or _value(m.type), op.content or "")
            type_ = type_ or _value(m.type)
            summary = summary or m.summary
    elif action == "create":
        after = card_text(title, summary, type_, op.content or "")
    if action == "update" and before is None:
        after = op.content or ""
    return PendingOp(index=index, action=action, level=level, type=type_, title=title, summary=summary,
                     filename=op.filename or "", status="held", before=before, after=after)


def _rejected_ops(view: JobView) -> list[PendingOp]:
    out = []
    for r in view.rejected:
        op = r.op or {}
        out.append(
            PendingOp(index=r.index, action=str(op.get("action", "")), level=str(op.get("level", "")),
                      type=str(op.get("type", "")), title=str(op.get("title", "")),
                      summary=str(op.get("summary", "")), filename=str(op.get("filename", "")),
                      status="rejected", reason=r.reason)
        )
    return out


def consolidation_title(view: JobView) -> str:
    """"Consolidation · project store · 3 clusters" for a consolidation job, else ""."""
    if getattr(view, "purpose", "extract") != "consolidate":
        return ""
    clusters = tuple(getattr(view, "clusters", ()))
    level = strip_terminal(str(getattr(view, "level", None) or "memory"), keep_newlines=False)
    n = len(clusters)
    cards = f", {sum(clusters)} cards" if clusters else ""
    return f"Consolidation · {level} store · {n} cluster{'' if n == 1 else 's'}{cards}"


def _job(stores: MemoryStores, view: JobView) -> PendingJob:
    ops = [_held_op(stores, h.index, h.op) for h in view.held_ops] if view.state == "held" else []
    ops = sorted([*ops, *_rejected_ops(view)], key=lambda o: (o.index, o.status))
    reason = view.reason
    if view.state == "orphaned":
        reason = reason or f"its workspace {view.workspace} no longer exists"
    return PendingJob(
        title=consolidation_title(view),
        id=view.id,
        state=PendingJobState(view.state),
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
    )


def pending_state(
    stores: MemoryStores,
    views: Sequence[JobView],
    orphans: Iterable[JobView],
    applied: Iterable[AppliedRecord],
    mode: str,
    note: str | None = None,
) -> PendingState:
    """The pending screen's state: this workspace's spooled jobs (oldest first), the jobs finished
    in this session (newest first; "rejected" when every op was refused), then orphaned jobs of
    any workspace. Every row's age counts from when its job was spooled, retries included."""
    jobs = [_job(stores, v) for v in views]
    seen = {j.id for j in jobs}
    for rec in sorted(applied, key=lambda r: r.seen, reverse=True):
        if rec.job_id in seen:
            continue
        jobs.append(PendingJob(id=rec.job_id, state=PendingJobState(rec.state), excerpt=rec.excerpt, created=rec.created or rec.seen,
                               counts=rec.counts, ops=rec.ops, dropped=rec.dropped))
    jobs.extend(_job(stores, v) for v in orphans if v.id not in seen)
    return PendingState(jobs=tuple(jobs), mode=mode, note=note)
