"""History of applied batches, ``undo``, and the trash.

Each commit writes one entry under ``$PSEUDOCLAUDE_HOME/history/<workspace key>/``; deleted
notes go to their store's ``.trash/`` (named ``<txid>-<filename>``). Undo plans the reverse of
the last batch still applied and commits it through the same journal; the functions here run with
the stores' lock held by the caller (``MemoryStores``).
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from memory.constants import MANUAL_SOURCE, Action
from memory.model import AppliedOp, BatchResult, HistoryEntry, HistoryKind, rfc3339
from memory.store.journal import commit
from memory.store.layout import StoreLayout
from memory.store.plan import Plan
from memory.text.names import quote

log = logging.getLogger(__name__)


class UndoError(Exception):
    """Why ``undo`` refused, in one line."""


# What the labels of entries written before ``kind`` and ``took_over`` were fields began with.
_OLD_PREFIXES: tuple[tuple[str, HistoryKind], ...] = (
    ("approve ", "approve"),
    ("reject ", "reject"),
    ("dismiss ", "dismiss"),
)
_OLD_JOB, _OLD_CONSOLIDATION, _OLD_TOOK_OVER, _OLD_EXCERPT_SEP = (
    "memory job ",
    " (consolidation of the ",
    " took over ",
    ": ",
)


def _derive_old(data: dict[str, Any]) -> dict[str, Any]:
    """An entry written before ``kind`` and ``took_over`` were fields (every entry written now
    has ``took_over``): both are derived from its label here, once at read, so that such a history
    still says which batch completed a coalesced job and which removed a dismissed one. Nothing
    else reads a label."""
    label = data.get("label")
    label = label if isinstance(label, str) else ""
    # The excerpt after the first ": " is a person's text: it may say " took over " too.
    head = label.partition(_OLD_EXCERPT_SEP)[0]
    kind: HistoryKind = "undo" if data.get("kind") == "undo" else "batch"
    took: list[str] = []
    if kind == "batch":
        if head.startswith(_OLD_JOB):
            kind = "consolidation" if _OLD_CONSOLIDATION in head else "turn"
            took = head.partition(_OLD_TOOK_OVER)[2].split()
        else:
            kind = next(
                (k for prefix, k in _OLD_PREFIXES if label.startswith(prefix)),
                "manual" if data.get("source") == MANUAL_SOURCE else "batch",
            )
    return {**data, "kind": kind, "took_over": took}


def entry_from_json(raw: bytes) -> HistoryEntry:
    """One history file's entry (ValueError: not one)."""
    data = json.loads(raw)
    if isinstance(data, dict) and "took_over" not in data:
        data = _derive_old(data)
    return HistoryEntry.model_validate(data)


def read_history(layout: StoreLayout) -> list[HistoryEntry]:
    """This workspace's batches, oldest first (unreadable entries are skipped)."""
    hdir = layout.paths.history_dir
    try:
        names = [n for n in layout.fs.listdir(hdir) if n.endswith(".json") and not n.startswith(".")]
    except FileNotFoundError:
        return []
    out = []
    for name in sorted(names):
        try:
            out.append(entry_from_json(layout.fs.read_bytes(hdir / name)))
        except (ValueError, OSError):
            log.warning("unreadable history entry %s", name)
    return out


def undoable(entries: list[HistoryEntry]) -> list[HistoryEntry]:
    """The batches an undo can still revert, oldest first: applied, with changes, not undone."""
    return [e for e in entries if e.kind != "undo" and e.changes and not e.undone_by]


def undo_locked(layout: StoreLayout, expect: str | None = None) -> BatchResult:
    """Revert the last applied batch of this workspace, refusing if a note changed since.
    ``expect``: that batch's txid; refused when another batch is the last one now."""
    candidates = undoable(read_history(layout))
    if not candidates:
        raise UndoError("nothing to undo: no applied batch in this workspace's history")
    target = candidates[-1]
    if expect is not None and target.txid != expect:
        raise UndoError(f"memory batch {target.txid} came after {expect}; not undoing")
    plan = Plan(layout.stores)
    for ch in target.changes:
        if ch.level not in plan.writes:
            raise UndoError(f"this workspace has no {ch.level} level now; not undoing")
        store = layout.store(ch.level)
        problem = store.folder_problem()
        if problem is not None:
            raise UndoError(problem)
        current = plan.disk[ch.level].get(ch.filename)
        present = layout.fs.exists(store.dir / ch.filename)
        if ch.after_sha is None:
            if present:
                raise UndoError(f"{ch.level} note {quote(ch.filename)} was recreated since; not undoing")
        else:
            if current is None or current.sha256 != ch.after_sha:
                raise UndoError(f"{ch.level} note {quote(ch.filename)} changed since that batch; not undoing")
            if ch.before_b64 is None and store.trash_problem() is not None:
                raise UndoError(f"{store.trash_problem()} (`pseudoclaude memory doctor --fix` repairs it)")
        plan.writes[ch.level][ch.filename] = (
            None if ch.before_b64 is None else base64.b64decode(ch.before_b64)
        )
    result = BatchResult(
        applied=[
            AppliedOp(
                index=i,
                action=Action.UPDATE
                if ch.before_b64 and ch.after_sha
                else (Action.DELETE if ch.before_b64 is None else Action.CREATE),
                level=ch.level,
                filename=ch.filename,
            )
            for i, ch in enumerate(target.changes)
        ]
    )
    entry = HistoryEntry(
        txid="",
        time=rfc3339(layout.clock()),
        workspace=str(layout.paths.workspace),
        kind="undo",
        label=f"undo of {target.txid}",
        source="manual",
        applied=result.applied,
        undo_of=target.txid,
    )
    # The original entry is rewritten (marked undone) in the same commit, so undo twice
    # never reverts the same batch twice.
    result.txid, _refused = commit(layout, plan, entry, (), undone=target)
    return result
