"""A person's card edits (the app's card browser and editor): one validated path to the stores.

Each edit is a ``source: manual`` batch through ``MemoryStores.apply``: the same validation,
redaction and transaction as the model's ops, recorded in the history (so ``undo`` reverts
it). Edits of an existing card carry the hash of the file as the editor read it: if the card
changed on disk since (an editor, ``git pull``, the worker), the edit is a conflict and nothing
is written.

``$EDITOR`` never sees a card itself: it edits a private copy (``start_external_edit``), which is
read back like untrusted input and applied like any other edit (``finish_external_edit``).
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from memory.constants import MANUAL_SOURCE, MAX_CONTENT_BYTES, MAX_SUMMARY, MAX_TITLE, Action, Level, NoteType
from memory.model import AppliedOp, BatchResult, Conflict, DroppedCite, Note, Operation, Rejection
from memory.store.conflict import has_conflict
from memory.store.frontmatter import FrontMatterError, parse_meta, split_note
from memory.store.fs import FS, UnsafePathError
from memory.store.noteparse import sha256
from memory.store.paths import Paths
from memory.store.plan import key
from memory.store.store import MAX_NOTE_FILE_BYTES, Store, StoreError
from memory.store.transaction import Moved
from memory.text.names import quote
from memory.text.terminal import is_strict_utf8


class CardStores(Protocol):
    """What a card edit needs of the stores (``MemoryStores`` is one): the facade calls these
    functions, so they name only the few members they use, never the facade itself."""

    @property
    def fs(self) -> FS: ...

    @property
    def paths(self) -> Paths: ...

    @property
    def has_project_level(self) -> bool: ...

    def store(self, level: Level | str) -> Store: ...

    def read_note(self, level: Level | str, filename: str) -> Note: ...

    def apply(
        self,
        ops: Sequence[Any],
        *,
        source: str,
        expected: Mapping[str, str] | None = None,
        jobs: Sequence[Path] = (),
        rejected: Sequence[Rejection] = (),
        label: str = "",
        all_or_nothing: bool = False,
        moved: Mapping[int, Moved] | None = None,
    ) -> BatchResult: ...


class CardResult(BaseModel):
    """What a card edit did. ``applied``: written (``txid`` names the batch for the history);
    ``conflict``: the card changed since it was read; ``rejected``: the input is invalid.
    ``level``/``filename``/``sha256`` name the card as it is now (after a move: its new place;
    after a delete, or when nothing was written: as given, ``sha256`` None). ``dropped``: the
    citations the edit gave that were not kept, each with why."""

    model_config = ConfigDict(frozen=True)

    status: Literal["applied", "conflict", "rejected"]
    level: Level
    filename: str
    reason: str = ""
    txid: str | None = None
    sha256: str | None = None
    applied: tuple[AppliedOp, ...] = ()
    dropped: tuple[DroppedCite, ...] = ()


def _result(stores: CardStores, res: BatchResult, level: Level, filename: str) -> CardResult:
    problems: list[Conflict | Rejection] = sorted([*res.conflicts, *res.rejected], key=lambda r: r.index)
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
        status="applied",
        level=level,
        filename=filename,
        txid=res.txid,
        sha256=sha,
        applied=tuple(res.applied),
        dropped=tuple(res.dropped_cites),
    )


def _with_cites(op: dict[str, object], cites: Sequence[str] | None) -> dict[str, object]:
    """The op with the person's citations; None leaves them out (an update keeps the card's)."""
    if cites is not None:
        op["cites"] = list(cites)
    return op


def create_card(
    stores: CardStores,
    level: Level | str,
    type: NoteType | str,
    title: str,
    summary: str,
    body: str,
    *,
    cites: Sequence[str] | None = None,
) -> CardResult:
    lv = Level(level)
    op = _with_cites(
        {
            "action": "create",
            "level": str(level),
            "type": str(type),
            "title": title,
            "summary": summary,
            "content": body,
        },
        cites,
    )
    res = stores.apply([(0, op)], source=MANUAL_SOURCE, label="card created")
    return _result(stores, res, lv, "")


def edit_card(
    stores: CardStores,
    level: Level | str,
    filename: str,
    title: str,
    summary: str,
    type: NoteType | str,
    body: str,
    expected_sha: str,
    *,
    cites: Sequence[str] | None = None,
) -> CardResult:
    lv = Level(level)
    op = _with_cites(
        {
            "action": "update",
            "level": str(level),
            "filename": filename,
            "type": str(type),
            "title": title,
            "summary": summary,
            "content": body,
        },
        cites,
    )
    res = stores.apply(
        [(0, op)], source=MANUAL_SOURCE, expected={key(lv, filename): expected_sha}, label="card edited"
    )
    return _result(stores, res, lv, filename)


def delete_card(stores: CardStores, level: Level | str, filename: str, expected_sha: str) -> CardResult:
    lv = Level(level)
    op = {"action": "delete", "level": str(level), "filename": filename}
    res = stores.apply(
        [(0, op)], source=MANUAL_SOURCE, expected={key(lv, filename): expected_sha}, label="card deleted"
    )
    return _result(stores, res, lv, filename)


def move_card(
    stores: CardStores, level: Level | str, filename: str, to_level: Level | str, expected_sha: str
) -> CardResult:
    """A delete here and a create there in one transaction: both or neither. The card keeps its
    ``created``, source, author and pin (``Moved``); ``updated`` is now."""
    lv, to = Level(level), Level(to_level)
    if to is lv:
        return CardResult(
            status="rejected", level=lv, filename=filename, reason=f"the card is already a {lv} card"
        )
    try:
        note = stores.read_note(lv, filename)
    except StoreError as e:
        return CardResult(status="rejected", level=lv, filename=filename, reason=str(e))
    if note.sha256 != expected_sha:
        return CardResult(
            status="conflict",
            level=lv,
            filename=filename,
            reason="the note changed since the change was proposed",
        )
    if note.conflict is not None:
        # Its body is the raw file: moved, git's markers would make a new conflicted card.
        return CardResult(
            status="rejected",
            level=lv,
            filename=filename,
            reason=f"{quote(filename)} is conflicted (changed on two branches); resolve it first",
        )
    ops: list[tuple[int, Operation | dict[str, object]]] = [
        (0, {"action": "delete", "level": str(lv), "filename": filename}),
        (
            1,
            {
                "action": "create",
                "level": str(to),
                "type": str(note.meta.type),
                "title": note.meta.title,
                "summary": note.meta.summary,
                "content": note.body,
            },
        ),
    ]
    res = stores.apply(
        ops,
        source=MANUAL_SOURCE,
        expected={key(lv, filename): expected_sha},
        label=f"card moved to {to}",
        all_or_nothing=True,
        moved={1: Moved(note.meta)},
    )
    return _result(stores, res, lv, filename)


def check_card(
    stores: CardStores, level: str, type: str, title: str, summary: str, body: str
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
    elif has_conflict(body):
        # Saved, git's markers would leave the card conflicted (in no prompt) again.
        errors["body"] = (
            "the body still holds git's conflict markers (<<<<<<< ======= >>>>>>>): keep what it should say"
        )
    else:
        size = len(body.encode("utf-8"))
        if size > MAX_CONTENT_BYTES:
            errors["body"] = f"{size:,} bytes: a card holds at most {MAX_CONTENT_BYTES:,} (16 KiB)"
    return errors


def save_card(
    stores: CardStores,
    level: Level | str,
    type: NoteType | str,
    title: str,
    summary: str,
    body: str,
    *,
    filename: str | None = None,
    expected_sha: str | None = None,
    original_level: Level | str | None = None,
    cites: Sequence[str] | None = None,
) -> CardResult:
    """The editor's Ctrl+S: create (no ``filename``), edit in place, or edit and move to another
    level — the last as one all-or-nothing transaction (the old card leaves only if the new one
    is written). ``expected_sha``: the card's hash when the editor read it. ``cites``: the
    citations the person gave (specs); None keeps the card's (an edit) or gives none."""
    if filename is None:
        return create_card(stores, level, type, title, summary, body, cites=cites)
    if expected_sha is None:
        raise ValueError("an edit needs the hash of the card as it was read")
    old = Level(original_level if original_level is not None else level)
    to = Level(level)
    if to is old:
        return edit_card(stores, old, filename, title, summary, type, body, expected_sha, cites=cites)
    ops: list[tuple[int, Operation | dict[str, object]]] = [
        (0, {"action": "delete", "level": str(old), "filename": filename}),
        (
            1,
            _with_cites(
                {
                    "action": "create",
                    "level": str(to),
                    "type": str(type),
                    "title": title,
                    "summary": summary,
                    "content": body,
                },
                cites,
            ),
        ),
    ]
    try:
        # Its creation date and pin stay (the card as the editor read it: any other is a conflict).
        moved = {1: Moved(stores.read_note(old, filename).meta, edited=True)}
    except StoreError:
        moved = {}  # gone or unreadable: the delete below says why
    res = stores.apply(
        ops,
        source=MANUAL_SOURCE,
        expected={key(old, filename): expected_sha},
        label=f"card edited and moved to {to}",
        all_or_nothing=True,
        moved=moved,
    )
    return _result(stores, res, old, filename)


# -- $EDITOR: a private copy, read back as untrusted input, applied as one edit --------------------

EDIT_DIR = "tmp"  # under $PSEUDOCLAUDE_HOME, never inside a store


class ExternalEdit(BaseModel):
    """A card copied out for ``$EDITOR``: the copy ``path`` (mode 0600) in its own private folder
    ``folder`` (mode 0700, under ``$PSEUDOCLAUDE_HOME/tmp/``), and the card's bytes and hash as
    they were when copied (the hash is the edit's compare-and-swap token)."""

    model_config = ConfigDict(frozen=True)

    level: Level
    filename: str
    folder: Path
    path: Path
    sha256: str
    original: bytes


class CardFields(BaseModel):
    """A card's editable fields as a person wrote them."""

    model_config = ConfigDict(frozen=True)

    level: str
    type: str
    title: str
    summary: str
    body: str


class ExternalEditResult(BaseModel):
    """What came back from ``$EDITOR``. ``unchanged``: nothing to apply; ``invalid``: ``problem``
    (one line) says why nothing was written, ``text`` is the copy as far as it could be read;
    ``applied``: ``result`` is the edit's batch; ``conflict``: the card changed on disk since it
    was copied (``fields`` is the person's version, nothing was written)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["unchanged", "invalid", "applied", "conflict"]
    problem: str = ""
    text: str = ""
    fields: CardFields | None = None
    result: CardResult | None = None


class EditCopyError(ValueError):
    """A one-line reason why the edited copy cannot be used (nothing was written)."""


def start_external_edit(stores: CardStores, level: Level | str, filename: str) -> ExternalEdit:
    """Copy a card to a fresh private folder for ``$EDITOR``. StoreError (one line) when the card
    cannot be read (not a regular file, a symlink, too big, gone)."""
    lv = Level(level)
    stores.read_note(lv, filename)  # the name, the folder and the file checked; recovery first
    store = stores.store(lv)
    try:
        data = stores.fs.read_bytes(store.dir / filename, max_bytes=MAX_NOTE_FILE_BYTES)
    except UnsafePathError as e:
        raise StoreError(f"{quote(filename)}: {e.strerror}") from None
    except FileNotFoundError:
        raise StoreError(f"no note named {quote(filename)} in the {lv} store") from None
    if len(data) > MAX_NOTE_FILE_BYTES:
        raise StoreError(f"{quote(filename)} is larger than {MAX_NOTE_FILE_BYTES:,} bytes")
    root = stores.paths.home / EDIT_DIR
    stores.fs.makedirs(root, 0o700)
    folder = root / f"edit-{secrets.token_hex(8)}"
    stores.fs.makedirs(folder, 0o700)
    # The card's own name: the editor shows it and picks Markdown for it.
    path = folder / filename
    try:
        stores.fs.write_new(path, data, 0o600)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return ExternalEdit(
        level=lv, filename=filename, folder=folder, path=path, sha256=sha256(data), original=data
    )


def discard_external_edit(edit: ExternalEdit) -> None:
    """Remove the private folder and whatever the editor left in it (backups, swap files); a
    symlink in it is removed, never followed."""
    shutil.rmtree(edit.folder, ignore_errors=True)


def read_edit_copy(stores: CardStores, edit: ExternalEdit) -> bytes:
    """The copy's bytes, read as untrusted input: a regular file only (a symlink or a folder the
    editor left there is not followed), at most ``MAX_NOTE_FILE_BYTES``. EditCopyError otherwise."""
    try:
        data = stores.fs.read_bytes(edit.path, max_bytes=MAX_NOTE_FILE_BYTES)
    except UnsafePathError as e:
        what = "a symlink" if e.strerror == "is a symlink" else "not a regular file"
        raise EditCopyError(
            f"the editor left {what} in place of the card's copy; it was not followed"
        ) from None
    except FileNotFoundError:
        raise EditCopyError("the editor removed the card's copy") from None
    except IsADirectoryError:
        raise EditCopyError("the editor left not a regular file in place of the card's copy") from None
    if len(data) > MAX_NOTE_FILE_BYTES:
        raise EditCopyError(f"the edited card is larger than {MAX_NOTE_FILE_BYTES:,} bytes")
    return data


def _text_field(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if isinstance(value, dict | list):
        raise EditCopyError(f"the front matter's {name} must be one line of text")
    return "" if value is None else str(value)


def parse_card_file(data: bytes, level: Level | str) -> CardFields:
    """A card file a person wrote, strictly: UTF-8, front matter with a title and a known type,
    then the body. EditCopyError (one line) otherwise. ``created``/``updated``/``source`` and
    unknown keys are ignored: the app owns the first three."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise EditCopyError(f"the file is not valid UTF-8 (at byte {e.start})") from None
    try:
        head, body = split_note(text)
        for name in ("title", "summary", "type"):
            _text_field(head, name)
        meta = parse_meta(head)
    except FrontMatterError as e:
        raise EditCopyError(str(e)) from None
    summary = _text_field(head, "summary")
    return CardFields(
        level=str(Level(level)), type=str(meta.type), title=meta.title, summary=summary, body=body
    )


def _same_card(a: CardFields, b: CardFields) -> bool:
    def body(text: str) -> str:
        return text if not text or text.endswith("\n") else text + "\n"  # the writer adds the newline

    return (a.type, a.title, a.summary, body(a.body)) == (b.type, b.title, b.summary, body(b.body))


def _problem(errors: dict[str, str]) -> str:
    return " · ".join(f"{name}: {reason}" for name, reason in errors.items())


def finish_external_edit(
    stores: CardStores, edit: ExternalEdit, *, refuse: str | None = None
) -> ExternalEditResult:
    """Read the copy back and apply it as one ``source: manual`` edit of the card (the same
    checks as the card editor's save; the filename is kept when the title or type changed).

    Nothing is written unless the copy is a valid card that differs from what was copied, and the
    card on disk still has the hash it had when copied (else ``conflict``). The copy is left in
    place: the caller removes it (``discard_external_edit``) or hands it to the editor again.
    ``refuse``: a reason not to apply it (the editor failed): a changed copy comes back invalid
    with that reason."""
    try:
        data = read_edit_copy(stores, edit)
    except EditCopyError as e:
        return ExternalEditResult(status="invalid", problem=str(e))
    if data == edit.original:
        return ExternalEditResult(status="unchanged")
    text = data.decode("utf-8", "replace")
    if refuse is not None:
        return ExternalEditResult(status="invalid", problem=refuse, text=text)
    try:
        fields = parse_card_file(data, edit.level)
    except EditCopyError as e:
        return ExternalEditResult(status="invalid", problem=str(e), text=text)
    try:
        before = parse_card_file(edit.original, edit.level)
    except EditCopyError:
        before = None  # a broken card being repaired: any valid text is a change
    if before is not None and _same_card(fields, before):
        return ExternalEditResult(status="unchanged")
    errors = check_card(stores, fields.level, fields.type, fields.title, fields.summary, fields.body)
    if errors:
        return ExternalEditResult(status="invalid", problem=_problem(errors), text=text, fields=fields)
    result = save_card(
        stores,
        fields.level,
        fields.type,
        fields.title,
        fields.summary,
        fields.body,
        filename=edit.filename,
        expected_sha=edit.sha256,
    )
    if result.status == "applied":
        return ExternalEditResult(status="applied", fields=fields, result=result, text=text)
    if result.status == "conflict":
        return ExternalEditResult(
            status="conflict", problem=result.reason, fields=fields, result=result, text=text
        )
    return ExternalEditResult(status="invalid", problem=result.reason, text=text, fields=fields)
