"""One transaction over both stores: validate, plan, then commit through the journal.

Every op is validated again here (the store's admission rules, memory/store/ops.py), planned
on a ``Plan`` against what is on disk (a name taken, a note changed since it was proposed, an
untrusted project store: each a recorded rejection or conflict, never a silent skip), and the
batch is committed by memory/store/journal.py. Every function here runs with the stores' lock
held by the caller (``MemoryStores`` in memory/store/stores.py).
"""

from __future__ import annotations

import stat
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.constants import MANUAL_SOURCE, Action, Level
from memory.model import (
    AppliedOp,
    BatchResult,
    Cite,
    Conflict,
    DroppedCite,
    HistoryEntry,
    HistoryKind,
    Note,
    NoteMeta,
    Operation,
    Rejection,
    dump_op,
    rfc3339,
)
from memory.store import trust
from memory.store.author import tilde_home
from memory.store.frontmatter import dump_note
from memory.store.journal import commit
from memory.store.layout import StoreLayout
from memory.store.ops import op_pairs, validate_operations
from memory.store.plan import Plan, key
from memory.store.store import GIT_FILES, TRASH_DIR, Store, StoreError
from memory.text.names import note_filename, quote, sanitize_line, slugify
from memory.text.redact import redact

__all__ = [
    "JobAlreadyDone",
    "Moved",
    "TransactionError",
    "apply_locked",
    "confirm_locked",
    "rebuild_indexes_locked",
    "repair_trash_locked",
]


class TransactionError(Exception):
    """The batch could not be committed (nothing changed) or finished (recovery will)."""


class JobAlreadyDone(TransactionError):
    """A job this batch would complete was completed by an earlier commit."""


@dataclass(frozen=True)
class Moved:
    """What a create that continues a card the same batch deletes at the other level (a move)
    keeps of that card: when it was ``created`` and whether it is ``pinned``. A plain move
    changes no word, so the card also keeps its ``source`` (who wrote the words) and ``author``;
    an edit-and-move (``edited``) is the person's change, like an update: ``source: manual``,
    their git name when git knows it, else the card's author stays named."""

    meta: NoteMeta
    edited: bool = False


def _dump_op(op: Operation) -> dict[str, object]:
    """An op as kept in a rejection or conflict record: shortened, and redacted (a filename or
    slug the validation let through can still hold a key)."""
    return {k: redact(v) if isinstance(v, str) else v for k, v in dump_op(op).items()}


def _validated(index: int, op: Any) -> tuple[Operation | None, Rejection | None]:
    """The op as the parser would have made it: every op ``apply`` takes is re-validated (a
    person's card edit, an approved held op, a test) so none reaches a store unsanitized."""
    item = op.model_dump(mode="json", exclude_none=True) if isinstance(op, Operation) else op
    ops, rejected = validate_operations([item])
    if rejected:
        reason = rejected[0].reason.removeprefix("op 0: ")
        return None, Rejection(index=index, reason=f"op {index}: {reason}", op=rejected[0].op)
    return (ops[0].op if ops else None), None


def apply_locked(
    layout: StoreLayout,
    ops: Sequence[Any],
    *,
    source: str,
    expected: Mapping[str, str] | None,
    jobs: Sequence[Path],
    rejected: Sequence[Rejection],
    label: str,
    all_or_nothing: bool = False,
    moved: Mapping[int, Moved] | None = None,
    kind: HistoryKind | None = None,
    took_over: Sequence[str] = (),
    sources: Mapping[int, str] | None = None,
) -> BatchResult:
    pairs = op_pairs(ops)
    for job in jobs:
        if not layout.fs.exists(Path(job)):
            raise JobAlreadyDone(f"job {Path(job).stem} was already completed")
    now = rfc3339(layout.clock())
    batch = _Batch(
        layout,
        Plan(layout.stores),
        source,
        expected,
        now,
        BatchResult(rejected=list(rejected)),
        _closed(layout, source),
        moved or {},
        sources or {},
    )
    _plan_ops(batch, pairs)
    result = batch.result
    if all_or_nothing and (result.rejected or result.conflicts):
        # A card move is a create and a delete: either both happen or neither.
        result.applied = []
        return result
    if not result.applied and not jobs:
        # Nothing to write and no job to complete: no transaction, no history line.
        return result
    entry = HistoryEntry(
        txid="",
        time=now,
        workspace=str(layout.paths.workspace),
        kind=kind or ("manual" if source == MANUAL_SOURCE else "batch"),
        label=label,
        took_over=list(took_over),
        source=source,
        jobs=[Path(j).stem for j in jobs],
        applied=result.applied,
        rejected=result.rejected,
        conflicts=result.conflicts,
        dropped_cites=result.dropped_cites,
    )
    result.txid, refused = commit(layout, batch.plan, entry, jobs)
    _report_refused(result, refused)
    return result


def _closed(layout: StoreLayout, source: str) -> bool:
    """Whether the batch may not write into the project store: the model never writes into a
    project store the person has not trusted (it did not see it either); a person's own edit
    (card, `memory apply`) may."""
    return source != MANUAL_SOURCE and not trust.project_trusted(layout)


def _plan_ops(batch: _Batch, pairs: Iterable[tuple[int, Any]]) -> None:
    """Each op validated again and planned; a refused one is a rejection of the batch's."""
    for index, raw in pairs:
        op, rejection = _validated(index, _without_home(raw))
        if rejection is not None:
            batch.result.rejected.append(rejection)
        elif op is not None:
            _plan_op(batch, index, op)


def _report_refused(result: BatchResult, refused: Sequence[tuple[Level, str, str]]) -> None:
    """A name taken between the plan and the link: the person's file stays, ours is kept aside."""
    for level, name, kept in refused:
        index = next((a.index for a in result.applied if a.level == level and a.filename == name), -1)
        result.applied = [a for a in result.applied if not (a.level == level and a.filename == name)]
        result.conflicts.append(
            Conflict(
                index=index,
                level=level,
                filename=name,
                reason=f"a file named {quote(name)} appeared before the create finished; "
                f"it was left alone and the new note kept as {kept}",
            )
        )


@dataclass
class _Batch:
    """What planning one batch shares: where, the plan, who proposes, and the result so far."""

    layout: StoreLayout
    plan: Plan
    source: str
    expected: Mapping[str, str] | None
    now: str
    result: BatchResult
    project_closed: bool
    moved: Mapping[int, Moved]  # by op index: the creates that are moves (see Moved)
    # By op index: a create's own ``source`` when it is not the batch's (an import's file and
    # section). Given by the app, never by a model; still one redacted line like any shown value.
    sources: Mapping[int, str] = field(default_factory=dict)

    def source_of(self, index: int) -> str:
        given = self.sources.get(index)
        return (sanitize_line(redact(given), 300) if given else "") or self.source

    def reject(self, index: int, op: Operation, reason: str) -> None:
        self.result.rejected.append(Rejection(index=index, reason=f"op {index}: {reason}", op=_dump_op(op)))

    def cites(self, index: int, op: Operation, level: Level) -> tuple[Cite, ...] | None:
        """The op's citations as the card records them (None: the op gave none); each one
        not kept is recorded with why."""
        if op.cites is None:
            return None
        if level is not Level.PROJECT:
            reason = "a user card is shared by every workspace: citations are kept on project cards only"
            self.result.dropped_cites.extend(
                DroppedCite(index=index, cite=_cite_label(c), reason=reason) for c in op.cites
            )
            return ()
        kept, dropped = self.layout.grounding.resolve(op.cites, index)
        self.result.dropped_cites.extend(dropped)
        return kept


def _cite_label(item: object) -> str:
    path = item.get("path") if isinstance(item, dict) else item
    # Unquoted, like Grounding.resolve's: whoever shows a DroppedCite quotes it once.
    return sanitize_line(redact(path if isinstance(path, str) else repr(path)), 200)


def _plan_op(batch: _Batch, index: int, op: Operation) -> None:
    if op.action is Action.NOOP:
        return
    if op.level is None:
        return batch.reject(index, op, "no level")
    level = op.level
    if level is Level.PROJECT and batch.project_closed:
        return batch.reject(index, op, trust.UNTRUSTED_REASON)
    store = batch.layout.store(level)
    problem = store.folder_problem()
    if problem is not None:
        return batch.reject(index, op, problem)
    if op.action is Action.CREATE:
        return _plan_create(batch, index, op, level)
    return _plan_change(batch, store, index, op, level)


def _without_home(raw: Any) -> Any:
    """A project card is pushed to the whole team: the person's home path is written ``~`` in
    its title, summary and content. Done before validation, which cuts a title to its length:
    a cut must never fall inside the home path."""
    item = raw.model_dump(mode="json", exclude_none=True) if isinstance(raw, Operation) else raw
    if not isinstance(item, dict) or item.get("level") != Level.PROJECT.value:
        return raw
    changed = {k: tilde_home(v) for k in ("title", "summary", "content") if isinstance(v := item.get(k), str)}
    changed = {k: v for k, v in changed.items() if v != item[k]}
    return {**item, **changed} if changed else raw


def _plan_create(batch: _Batch, index: int, op: Operation, level: Level) -> None:
    plan = batch.plan
    if op.type is None or not op.title or op.content is None:
        return batch.reject(index, op, "create needs type, title and content")
    # The title was redacted by validation; a proposed slug is redacted here, before it is
    # lowercased out of the patterns' reach, so no name or index line carries a secret.
    same = plan.duplicate_of(level, op.title, op.content)
    if same is not None:
        # Not a second copy under `-2`: the card is already there, say which one.
        return batch.reject(
            index, op, f"a {level} card with this title and content already exists: {quote(same)}"
        )
    slug = slugify(op.title, redact(op.slug) if op.slug else None)
    name = plan.unique_name(level, note_filename(op.type, slug))
    plan.remember_created(level, op.title, op.content, name)
    now = batch.now
    created, source, author, pinned = now, batch.source_of(index), batch.layout.author(level), False
    moved = batch.moved.get(index)
    if moved is not None:
        # A move is not a new card: its history stays, only ``updated`` says it changed.
        old = moved.meta
        created, pinned = old.created or now, old.pinned
        if moved.edited:
            author = author or old.author
        else:
            source, author = old.source or source, old.author or author
    meta = NoteMeta(
        title=op.title,
        summary=op.summary or "",
        type=op.type,
        created=created,
        updated=now,
        source=source,
        author=author,
        cites=batch.cites(index, op, level) or (),
        pinned=pinned,
    )
    plan.writes[level][name] = dump_note(meta, op.content)
    batch.result.applied.append(
        AppliedOp(index=index, action=op.action, level=level, filename=name, title=op.title)
    )


def _plan_change(batch: _Batch, store: Store, index: int, op: Operation, level: Level) -> None:
    """An update or a delete of an existing note."""
    writes = batch.plan.writes[level]
    filename = op.filename or ""
    if filename in writes:
        if writes[filename] is None:
            return batch.reject(index, op, f"{quote(filename)} is deleted earlier in this batch")
        return batch.reject(index, op, f"{quote(filename)} is changed earlier in this batch")
    reason = store.target_problem(filename)
    if reason is not None:
        return batch.reject(index, op, reason)
    if op.action is Action.DELETE:
        trash = store.trash_problem()
        if trash is not None:
            return batch.reject(index, op, f"{trash} (`pseudoclaude memory doctor --fix` repairs it)")
    try:
        note = store.read_note(filename)
    except StoreError as e:
        # Refusals only: an I/O error aborts the whole batch (the job is retried), it never
        # turns into a silently rejected op.
        return batch.reject(index, op, str(e))
    if note.conflict is not None and batch.source != MANUAL_SOURCE:
        # Both branches' versions stay until a person chooses: the model never picks a side.
        return batch.reject(
            index, op, f"{quote(filename)} is conflicted (changed on two branches); a person resolves it"
        )
    if batch.expected is not None:
        seen = batch.expected.get(key(level, filename))
        if seen != note.sha256:
            why = (
                "the note did not exist when the change was proposed"
                if seen is None
                else "the note changed since the change was proposed"
            )
            conflict = Conflict(index=index, level=level, filename=filename, reason=why, op=_dump_op(op))
            batch.result.conflicts.append(conflict)
            return
    if op.action is Action.DELETE:
        writes[filename] = None
    elif op.content is None:
        return batch.reject(index, op, "update needs content")
    else:
        cites = batch.cites(index, op, level)
        meta = _updated_meta(note, op, batch.source, batch.now, cites)
        # The person who changed it, when git knows them; else whoever wrote it stays named.
        author = batch.layout.author(level) or note.meta.author
        writes[filename] = dump_note(meta.model_copy(update={"author": author}), op.content)
    title = op.title or note.meta.title
    batch.result.applied.append(
        AppliedOp(index=index, action=op.action, level=level, filename=filename, title=title)
    )


def _updated_meta(
    note: Note, op: Operation, source: str, now: str, cites: tuple[Cite, ...] | None
) -> NoteMeta:
    # An update that gives no citations keeps the card's (a merged body still rests on them).
    keep = note.meta.cites if cites is None else cites
    return note.meta.model_copy(
        update={
            "cites": keep,
            "title": op.title or note.meta.title,
            "summary": op.summary if op.summary is not None else note.meta.summary,
            "type": op.type or note.meta.type,
            "created": note.meta.created or now,
            "updated": now,
            "source": source,
        }
    )


def confirm_locked(
    layout: StoreLayout, level: Level, filename: str, expected_sha: str | None = None
) -> tuple[BatchResult, list[str]]:
    """A person's "still true" for a card: its citations taken again from the workspace (a
    renamed file followed, a deleted one dropped) and ``confirmed`` set, body and the rest
    unchanged; a ``source: manual`` batch, so ``memory undo`` reverts it. Returns the result and
    one line per citation that changed. Raises StoreError when the card cannot be confirmed."""
    note = _card_for_meta(layout, level, filename, expected_sha, "confirmed")
    cites, said = layout.grounding.refresh(note.meta.cites)
    now = rfc3339(layout.clock())
    meta = note.meta.model_copy(update={"cites": cites, "confirmed": now})
    return _commit_meta(layout, note, meta, f"{filename} confirmed by you", now), said


def pin_locked(
    layout: StoreLayout, level: Level, filename: str, pinned: bool, expected_sha: str | None = None
) -> BatchResult:
    """Set or clear a card's ``pinned``, body and the rest unchanged; a ``source:
    manual`` batch, undoable. A card already in that state is left as it is (an empty result)."""
    note = _card_for_meta(layout, level, filename, expected_sha, "pinned" if pinned else "unpinned")
    if note.meta.pinned is pinned:
        return BatchResult()
    now = rfc3339(layout.clock())
    meta = note.meta.model_copy(update={"pinned": pinned})
    label = f"{filename} {'pinned' if pinned else 'unpinned'} by you"
    return _commit_meta(layout, note, meta, label, now)


def _card_for_meta(
    layout: StoreLayout, level: Level, filename: str, expected_sha: str | None, what: str
) -> Note:
    store = layout.store(level)
    problem = store.folder_problem() or store.target_problem(filename)
    if problem is not None:
        raise StoreError(problem)
    note = store.read_note(filename)
    if note.unparsed:
        raise StoreError(
            f"{quote(filename)} does not parse ({note.broken}); fix it first (nothing was {what})"
        )
    if expected_sha is not None and note.sha256 != expected_sha:
        raise StoreError(f"{quote(filename)} changed since it was opened; nothing was {what}")
    return note


def _commit_meta(layout: StoreLayout, note: Note, meta: NoteMeta, label: str, now: str) -> BatchResult:
    """One card's front matter changed by a person, as one undoable batch."""
    plan = Plan(layout.stores)
    plan.writes[note.level][note.filename] = dump_note(meta, note.body)
    applied = [
        AppliedOp(index=0, action=Action.UPDATE, level=note.level, filename=note.filename, title=meta.title)
    ]
    result = BatchResult(applied=applied)
    entry = HistoryEntry(
        txid="",
        time=now,
        workspace=str(layout.paths.workspace),
        kind="manual",
        label=label,
        source=MANUAL_SOURCE,
        applied=applied,
    )
    result.txid, _ = commit(layout, plan, entry, ())
    return result


def rebuild_indexes_locked(
    layout: StoreLayout,
    label: str | None = "index rebuilt by doctor",
    levels: Collection[Level] | None = None,
) -> list[Level]:
    """Rewrite each ``MEMORY.md`` that differs from its cards (a union merge's order, duplicated
    lines, conflict markers, a hand edit), and the git files a store in git lacks. ``label``
    None: no history entry (the app and every ``memory`` command do this before they read a
    store; it is no batch of anyone's)."""
    fs = layout.fs
    due: set[Level] = set()
    for lv, st in layout.stores.items():
        if (
            (levels is not None and lv not in levels)
            or st.folder_problem() is not None
            or not fs.exists(st.dir)
        ):
            continue
        # Checked on the cards' heads (the card cache on disk serves a new process): a batch's
        # plan, which parses every card, is made only when there is something to rewrite.
        want = st.derived_index()
        in_git = lv is Level.PROJECT or layout.user_in_git
        missing = in_git and any(not fs.exists(st.dir / name) for name in GIT_FILES)
        if st.index_file_problem() is not None or st.read_index_file() != want or missing:
            due.add(lv)
    if due:
        plan = Plan(layout.stores)
        plan.rebuild |= due
        entry = HistoryEntry(
            txid="",
            time=rfc3339(layout.clock()),
            workspace=str(layout.paths.workspace),
            kind="manual",
            label=label or "",
            source="manual",
        )
        commit(layout, plan, entry, (), history=label is not None)
    return sorted(due)


def repair_trash_locked(layout: StoreLayout) -> list[str]:
    """Replace a ``.trash`` that is a symlink with a real folder (the link's target is untouched)."""
    fs = layout.fs
    fixed: list[str] = []
    for st in layout.stores.values():
        if st.folder_problem() is not None or st.trash_problem() is None:
            continue
        trash = st.dir / TRASH_DIR
        if stat.S_ISLNK(fs.lstat(trash).st_mode):
            fs.unlink(trash)
            fs.makedirs(trash)
            fs.fsync_dir(st.dir)
            fixed.append(f"{st.level} store: replaced the {TRASH_DIR} symlink with a folder")
    return fixed
