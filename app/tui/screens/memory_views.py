"""What the memory screens show: the cards and jobs services' plain data mapped to the widgets'
states (widgets/cards/, widgets/pending/), which only draw them.

Pure: nothing here reads a store or the spool (app/services/cards.py and jobs.py do, off the
event loop); each function takes their data and returns frozen widget states.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from memory.constants import MANUAL_SOURCE
from memory.text.lines import one_line
from memory.text.names import sanitize_summary, sanitize_title
from memory.text.terminal import strip_terminal
from widgets.cards.card_list import CardRow, CiteLine
from widgets.cards.draft import CardConflict, CardDraft, ConflictSide
from widgets.pending.state import PendingJob, PendingJobState, PendingOp, PendingState

if TYPE_CHECKING:
    from app.services.cards import CardEntry, CardListing, CardText, ConflictVersion, StoredCard
    from app.services.jobs import JobInfo, PendingJobs, ProposedOp
    from app.tui.screens.applied_record import AppliedRecord
    from memory.model import Note, NoteMeta

__all__ = [
    "MERGE_MARK",
    "card_conflict",
    "card_row",
    "card_rows",
    "disk_draft",
    "draft_from",
    "draft_of",
    "merge_draft",
    "pending_job",
    "pending_state",
]


def _value(x: object) -> str:
    return str(getattr(x, "value", x) if x is not None else "")


# -- the card browser --------------------------------------------------------------------------


def _cites(entry: CardEntry) -> tuple[CiteLine, ...]:
    """The card's citations with their states as checked, terminal-safe."""
    return tuple(
        CiteLine(
            spec=strip_terminal(c.spec, keep_newlines=False),
            state=c.state,
            reason=strip_terminal(c.reason, keep_newlines=False),
        )
        for c in entry.cites
    )


def card_row(entry: CardEntry) -> CardRow:
    card = entry.card
    note, meta = card.note, card.note.meta
    return CardRow(
        level=note.level.value,
        filename=note.filename,
        type="" if note.broken and not meta.created else _value(meta.type),
        title=meta.title,
        summary=meta.summary,
        updated=meta.updated,
        source="manual" if meta.source == MANUAL_SOURCE else "model",
        body=note.body,
        sha256=note.sha256,
        untrusted=entry.untrusted,
        broken=note.broken,
        stale=None if entry.stale is None else strip_terminal(entry.stale, keep_newlines=False),
        cites=_cites(entry),
        reads=entry.reads,
        last_read=entry.last_read,
        use=entry.use,
        pinned=bool(getattr(meta, "pinned", False)),
        in_prompt=entry.in_prompt,
        conflict=card_conflict(card),
    )


def card_rows(listing: CardListing) -> tuple[list[CardRow], str | None]:
    """The browser's rows and its header's note. Each row folds its text for the filter once:
    build them off the event loop for a large store."""
    return [card_row(e) for e in listing.cards], listing.note


# -- conflicted cards -------------------------------------------------------------

# Opens the other version in a merge draft. The editor refuses a body that still holds it
# (app/tui/screens/cards.py): the person merges the two and deletes it, or takes one side.
MERGE_MARK = "▼▼▼ THE OTHER VERSION"


def _side_draft(
    level: str, mine: NoteMeta | None, body: str, other: NoteMeta | None, note: Note
) -> CardDraft:
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


def _side(level: str, mine: ConflictVersion, other: ConflictVersion, note: Note) -> ConflictSide:
    return ConflictSide(
        _label(mine.label), _side_draft(level, mine.meta, mine.body, other.meta, note), mine.problem
    )


def card_conflict(card: StoredCard) -> CardConflict | None:
    """Both versions of a card git left with conflict markers (None for any other card)."""
    versions = card.conflict
    if versions is None:
        return None
    level = card.note.level.value
    return CardConflict(
        ours=_side(level, versions.ours, versions.theirs, card.note),
        theirs=_side(level, versions.theirs, versions.ours, card.note),
    )


def merge_draft(conflict: CardConflict) -> CardDraft:
    """ "Edit the merge": the fields of our side (of theirs when ours does not parse); the body
    that side's, then, when anything differs, the other version under ``MERGE_MARK`` (its
    differing fields, then its body) for the person to merge by hand. Never git's markers."""
    names = conflict.names()
    first, second, which = conflict.ours, conflict.theirs, names[1]
    if conflict.ours.problem and not conflict.theirs.problem:
        first, second, which = conflict.theirs, conflict.ours, names[0]
    a, b = first.draft, second.draft
    fields: list[str] = []
    if not second.problem:  # an unparsed side's fields are borrowed: only its text is its own
        for name, mine, other in (
            ("title", a.title, b.title),
            ("summary", a.summary, b.summary),
            ("type", a.type, b.type),
            ("cites", ", ".join(a.cites), ", ".join(b.cites)),
        ):
            if mine != other:
                fields.append(f"{name}: {other}")
    if not fields and a.body == b.body:
        return a
    label = f"{which.name} · {which.detail}" if which.detail else which.name
    head = f"{MERGE_MARK} ({label}): merge it into the text above, then delete from this line down ▼▼▼"
    block = "\n".join([head, *fields])
    body = f"{a.body.rstrip()}\n\n{block}\n\n{b.body}" if a.body.strip() else f"{block}\n\n{b.body}"
    return CardDraft(
        level=a.level,
        type=a.type,
        title=a.title,
        summary=a.summary,
        body=body,
        cites=a.cites,
        pinned=a.pinned,
    )


# -- the editor --------------------------------------------------------------------------------


def draft_of(card: StoredCard) -> CardDraft:
    """A card as the editor loads it; a conflicted card as its merge (``merge_draft``), never
    with git's markers (saved, they would leave it conflicted)."""
    conflict = card_conflict(card)
    if conflict is not None:
        return merge_draft(conflict)
    note = card.note
    return CardDraft(
        level=note.level.value,
        type="" if note.broken and not note.meta.created else _value(note.meta.type),
        title=note.meta.title,
        summary=note.meta.summary,
        body=note.body,
        cites=tuple(c.spec for c in note.meta.cites),
        pinned=bool(getattr(note.meta, "pinned", False)),
    )


def disk_draft(card: StoredCard | None) -> tuple[CardDraft, str] | None:
    """The card on disk as (draft, sha256) — what a conflict shows beside the person's version —
    or None when it is gone."""
    return None if card is None else (draft_of(card), card.note.sha256)


def draft_from(text: CardText) -> CardDraft:
    return CardDraft(
        level=text.level,
        type=text.type,
        title=text.title,
        summary=text.summary,
        body=text.body,
        cites=text.cites,
        pinned=text.pinned,
    )


# -- the pending screen ------------------------------------------------------------------------


def _op(op: ProposedOp) -> PendingOp:
    return PendingOp(
        index=op.index,
        action=op.action,
        level=op.level,
        type=op.type,
        title=op.title,
        summary=op.summary,
        filename=op.filename,
        status=op.status,
        reason=op.reason,
        before=op.before,
        after=op.after,
    )


def pending_job(job: JobInfo) -> PendingJob:
    return PendingJob(
        title=job.title,
        id=job.id,
        state=PendingJobState(job.state),
        excerpt=job.excerpt,
        created=job.created,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        next_try_at=job.next_try_at,
        reason=job.reason,
        ops=tuple(_op(o) for o in job.ops),
        workspace=job.workspace,
        split_from=job.split_from,
        turns=job.turns,
    )


def pending_state(
    data: PendingJobs, applied: Iterable[AppliedRecord], note: str | None = None
) -> PendingState:
    """The pending screen's state: this workspace's spooled jobs (oldest first), the jobs finished
    in this session (newest first; "rejected" when every op was refused), then orphaned jobs of
    any workspace. Every row's age counts from when its job was spooled, retries included."""
    jobs = [pending_job(j) for j in data.jobs]
    seen = {j.id for j in jobs}
    for rec in sorted(applied, key=lambda r: r.seen, reverse=True):
        if rec.job_id in seen:
            continue
        jobs.append(
            PendingJob(
                id=rec.job_id,
                state=PendingJobState(rec.state),
                excerpt=rec.excerpt,
                created=rec.created or rec.seen,
                counts=rec.counts,
                ops=rec.ops,
                dropped=rec.dropped,
            )
        )
    jobs.extend(pending_job(j) for j in data.orphans if j.id not in seen)
    return PendingState(jobs=tuple(jobs), mode=data.mode, note=note)
