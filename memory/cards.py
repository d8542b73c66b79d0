"""A person's card edits (the app's card browser and editor): one validated path to the stores.

Each edit is a ``source: manual`` batch through ``MemoryStores.apply``: the same validation,
redaction and transaction as the model's ops, recorded in the history (so ``undo`` reverts
it). Edits of an existing card carry the hash of the file as the editor read it: if the card
changed on disk since (an editor, ``git pull``, the worker), the edit is a conflict and nothing
is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from .model import (
    MANUAL_SOURCE,
    MAX_CONTENT_BYTES,
    MAX_SUMMARY,
    MAX_TITLE,
    Action,
    AppliedOp,
    BatchResult,
    Level,
    NoteType,
    Operation,
)
from .sanitize import is_strict_utf8
from .store import StoreError
from .transaction import key

if TYPE_CHECKING:
    from .stores import MemoryStores


class CardResult(BaseModel):
    """What a card edit did. ``applied``: written (``txid`` names the batch for the history);
    ``conflict``: the card changed since it was read; ``rejected``: the input is invalid.
    ``level``/``filename``/``sha256`` name the card as it is now (after a move: its new place;
    after a delete, or when nothing was written: as given, ``sha256`` None)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["applied", "conflict", "rejected"]
    level: Level
    filename: str
    reason: str = ""
    txid: str | None = None
    sha256: str | None = None
    applied: tuple[AppliedOp, ...] = ()


def _result(stores: MemoryStores, res: BatchResult, level: Level, filename: str) -> CardResult:
    problems = sorted([*res.conflicts, *res.rejected], key=lambda r: r.index)
    if problems:
        status: Literal["conflict", "rejected"] = "conflict" if res.conflicts else "rejected"
        first = problems[0]
        reason = first.reason
        if reason.startswith(f"op {first.index}: "):
            reason = reason.removeprefix(f"op {first.index}: ")
        return CardResult(status=status, level=level, filename=filename, reason=reason)
    last = res.applied[-1] if res.applied else None
    if last is not None and last.action is not Action.DELETE:
        level, filename = last.level, last.filename
    sha = None
    if last is not None and last.action is not Action.DELETE:
        try:
            sha = stores.store(level).read_note(filename).sha256
        except StoreError:
            sha = None
    return CardResult(
        status="applied", level=level, filename=filename, txid=res.txid, sha256=sha, applied=tuple(res.applied)
    )


def create_card(
    stores: MemoryStores, level: Level | str, type: NoteType | str, title: str, summary: str, body: str
) -> CardResult:
    lv = Level(level)
    op = {"action": "create", "level": str(level), "type": str(type), "title": title, "summary": summary,
          "content": body}
    res = stores.apply([(0, op)], source=MANUAL_SOURCE, label="card created")
    return _result(stores, res, lv, "")


def edit_card(
    stores: MemoryStores,
    level: Level | str,
    filename: str,
    title: str,
    summary: str,
    type: NoteType | str,
    body: str,
    expected_sha: str,
) -> CardResult:
    lv = Level(level)
    op = {"action": "update", "level": str(level), "filename": filename, "type": str(type), "title": title,
          "summary": summary, "content": body}
    res = stores.apply([(0, op)], source=MANUAL_SOURCE, expected={key(lv, filename): expected_sha},
                       label="card edited")
    return _result(stores, res, lv, filename)


def delete_card(stores: MemoryStores, level: Level | str, filename: str, expected_sha: str) -> CardResult:
    lv = Level(level)
    op = {"action": "delete", "level": str(level), "filename": filename}
    res = stores.apply([(0, op)], source=MANUAL_SOURCE, expected={key(lv, filename): expected_sha},
                       label="card deleted")
    return _result(stores, res, lv, filename)


def move_card(
    stores: MemoryStores, level: Level | str, filename: str, to_level: Level | str, expected_sha: str
) -> CardResult:
    """A delete here and a create there in one transaction: both or neither."""
    lv, to = Level(level), Level(to_level)
    if to is lv:
        return CardResult(status="rejected", level=lv, filename=filename, reason=f"the card is already a {lv} card")
    try:
        note = stores.read_note(lv, filename)
    except StoreError as e:
        return CardResult(status="rejected", level=lv, filename=filename, reason=str(e))
    if note.sha256 != expected_sha:
        return CardResult(status="conflict", level=lv, filename=filename,
                          reason="the note changed since the change was proposed")
    ops: list[tuple[int, Operation | dict[str, object]]] = [
        (0, {"action": "delete", "level": str(lv), "filename": filename}),
        (1, {"action": "create", "level": str(to), "type": str(note.meta.type), "title": note.meta.title,
             "summary": note.meta.summary, "content": note.body}),
    ]
    res = stores.apply(ops, source=MANUAL_SOURCE, expected={key(lv, filename): expected_sha},
                       label=f"card moved to {to}", all_or_nothing=True)
    return _result(stores, res, lv, filename)


CARD_FIELDS = ("title", "summary", "type", "level", "body")


def check_card(
    stores: MemoryStores, level: str, type: str, title: str, summary: str, body: str
) -> dict[str, str]:
    """What is wrong with a person's card, by field (empty: nothing). The editor shows each reason
    next to its field and writes nothing; ``apply`` validates again (this is for the person, not
    the only guard). A person is told about a limit instead of having text silently cut."""
    errors: dict[str, str] = {}
    if not title.strip():
        errors["title"] = "a title is needed"
    elif len(title) > MAX_TITLE:
        errors["title"] = f"at most {MAX_TITLE} characters (this one has {len(title)})"
    elif "\n" in title or "\r" in title:
        errors["title"] = "one line only"
    if len(summary) > MAX_SUMMARY:
        errors["summary"] = f"at most {MAX_SUMMARY} characters (this one has {len(summary)})"
    elif "\n" in summary or "\r" in summary:
        errors["summary"] = "one line only"
    if type not in {t.value for t in NoteType}:
        errors["type"] = "choose a type"
    if level not in {lv.value for lv in Level}:
        errors["level"] = "choose a level"
    elif level == Level.PROJECT and not stores.has_project_level:
        errors["level"] = "this workspace has no project level (its project store is the user store)"
    if not all(is_strict_utf8(v) for v in (title, summary, body)):
        errors.setdefault("body", "the text is not valid UTF-8")
    elif not body.strip():
        errors["body"] = "the body is empty: write what should be remembered"
    else:
        size = len(body.encode("utf-8"))
        if size > MAX_CONTENT_BYTES:
            errors["body"] = f"{size:,} bytes: a card holds at most {MAX_CONTENT_BYTES:,} (16 KiB)"
    return errors


def save_card(
    stores: MemoryStores,
    level: Level | str,
    type: NoteType | str,
    title: str,
    summary: str,
    body: str,
    *,
    filename: str | None = None,
    expected_sha: str | None = None,
    original_level: Level | str | None = None,
) -> CardResult:
    """The editor's Ctrl+S: create (no ``filename``), edit in place, or edit and move to another
    level — the last as one all-or-nothing transaction (the old card leaves only if the new one
    is written). ``expected_sha``: the card's hash when the editor read it."""
    if filename is None:
        return create_card(stores, level, type, title, summary, body)
    if expected_sha is None:
        raise ValueError("an edit needs the hash of the card as it was read")
    old = Level(original_level if original_level is not None else level)
    to = Level(level)
    if to is old:
        return edit_card(stores, old, filename, title, summary, type, body, expected_sha)
    ops: list[tuple[int, Operation | dict[str, object]]] = [
        (0, {"action": "delete", "level": str(old), "filename": filename}),
        (1, {"action": "create", "level": str(to), "type": str(type), "title": title, "summary": summary,
             "content": body}),
    ]
    res = stores.apply(ops, source=MANUAL_SOURCE, expected={key(old, filename): expected_sha},
                       label=f"card edited and moved to {to}", all_or_nothing=True)
    return _result(stores, res, old, filename)
