"""``memory import``: other agents' instruction files and memory folders made into cards.

The sources are only ever read: each file is opened read-only (a FIFO or device is refused
before a byte is read), bounded, and must be UTF-8 text. What they say becomes create ops (the
text side is memory/extract/importing.py) that go where any create goes: planned here against
the store as the transaction will see it (an identical card, or one already held for review, is
not made twice; the name a card would get is the name the transaction gives), then either held
for review as one spooled job or applied as one batch, each card with its own ``source``.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memory.constants import Action, Level
from memory.extract.importing import (
    SourceCard,
    document_cards,
    drop_index_links,
    normalize_text,
    note_card,
    split_front_matter,
)
from memory.jobs.spool import HeldOp, Job, Spool, make_job
from memory.model import BatchResult, Operation, Turn, TurnMessage
from memory.store.author import tilde_home
from memory.store.ops import validate_operations
from memory.store.plan import Plan
from memory.store.stores import MemoryStores
from memory.store.trust import UNTRUSTED_REASON
from memory.text.lines import format_bytes
from memory.text.markup import card_markup
from memory.text.names import note_filename, sanitize_line, slugify
from memory.text.redact import redact

__all__ = [
    "IMPORT_SOURCE",
    "MAX_SOURCE_BYTES",
    "Gathered",
    "PlannedCard",
    "Problem",
    "apply_import",
    "display_path",
    "gather",
    "hold_import",
    "level_problem",
    "plan_import",
]

# The batch's (and the held job's) source; each card's own is ``import:<file>#<section>``.
IMPORT_SOURCE = "import"
# What is read of one source file: more is a log or a dump, not instructions (said, not a failure).
MAX_SOURCE_BYTES = 1024 * 1024
# Notes taken from one folder; the rest are named in one line.
MAX_FOLDER_NOTES = 1000
INDEX_NAME = "MEMORY.md"
# What marks a Codex memories folder, and what of it is memory (the rest is derived or raw).
CODEX_MARKS = ("memory_summary.md", "raw_memories.md", "rollout_summaries")
CODEX_SUMMARY = "memory_summary.md"
CODEX_NOTES = Path("extensions") / "ad_hoc" / "notes"


@dataclass(frozen=True)
class Problem:
    """A path that gave no cards, and why in one line. ``usage``: it does not exist at all."""

    path: str
    reason: str
    usage: bool = False


@dataclass
class Gathered:
    """The cards of every path, in the order given, and what went wrong or was left out."""

    cards: list[SourceCard] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)


class _Bad(Exception):
    pass


# -- reading the sources (never written) -----------------------------------------------------------


def _read_text(path: str, shown: str, notices: list[str]) -> str:
    """The file's text: opened read-only and non-blocking (a FIFO never hangs the import),
    a regular file only, at most ``MAX_SOURCE_BYTES`` (cut at a line end, said in ``notices``),
    strict UTF-8 without NUL bytes. Raises _Bad with the reason."""
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise _Bad(f"cannot read it: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Bad("not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_SOURCE_BYTES:
            chunk = os.read(fd, min(1 << 16, MAX_SOURCE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise _Bad(f"cannot read it: {e.strerror or e}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    cut = len(data) > MAX_SOURCE_BYTES
    if cut:
        data = data[: data.rfind(b"\n", 0, MAX_SOURCE_BYTES) + 1] or data[:MAX_SOURCE_BYTES]
        notices.append(
            f"{shown}: only its first {format_bytes(len(data))} imported "
            f"(the file has {format_bytes(st.st_size)})"
        )
    if b"\x00" in data:
        raise _Bad("a binary file (it holds NUL bytes), not Markdown")
    try:
        # A cut file may end inside a character: not final, so that tail is left out, not refused.
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=not cut)
    except UnicodeDecodeError as e:
        raise _Bad(f"not UTF-8 text (invalid byte at offset {e.start})") from None


def display_path(path: str, workspace: Path) -> str:
    """How a source is named in its cards' ``source``: relative to the workspace inside it,
    ``~/…`` under the home folder, else absolute. The last component is not resolved (a
    symlinked ``CLAUDE.md`` stays ``CLAUDE.md``)."""
    ab = os.path.abspath(path)
    real = os.path.join(os.path.realpath(os.path.dirname(ab)), os.path.basename(ab))
    for root, prefix in (
        (os.path.realpath(workspace), ""),
        (os.path.realpath(os.path.expanduser("~")), "~/"),
    ):
        if real == root:
            return prefix.rstrip("/") or "."
        if real.startswith(root.rstrip(os.sep) + os.sep):
            return prefix + Path(os.path.relpath(real, root)).as_posix()
    return real


def _file_cards(path: str, shown: str, notices: list[str]) -> list[SourceCard]:
    """A file given by name: a memory note when its front matter names it (``name``, ``title``
    or ``description``), else an instruction document cut into sections."""
    text = _read_text(path, shown, notices)
    meta, _ = split_front_matter(normalize_text(text))
    if any(isinstance(meta.get(k), str) for k in ("name", "title", "description")):
        card = note_card(text, shown, stem=Path(path).stem)
        return [card] if card else []
    return document_cards(text, shown, title=os.path.basename(path))


def _is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _notes_in(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        n
        for n in names
        if n.lower().endswith(".md") and not n.startswith(".") and _is_file(os.path.join(folder, n))
    ]


def _folder_cards(folder: str, shown: str, out: Gathered) -> list[SourceCard]:
    """A memory folder. A Codex one (``memory_summary.md``, ``raw_memories.md`` or
    ``rollout_summaries/`` in it): its ``MEMORY.md`` handbook by section (else its summary) and
    its ad-hoc notes, one card each. Any other (Claude Code's auto-memory): each ``.md`` note one
    card, and its ``MEMORY.md`` index by section without the lines that point at its notes."""
    names = _notes_in(folder)
    codex = any(os.path.exists(os.path.join(folder, m)) for m in CODEX_MARKS)
    if codex:
        main = [n for n in names if n == INDEX_NAME] or [n for n in names if n == CODEX_SUMMARY]
        extra = os.path.join(folder, CODEX_NOTES)
        todo = [(os.path.join(folder, n), n, True) for n in main]
        todo += [(os.path.join(extra, n), f"{CODEX_NOTES.as_posix()}/{n}", False) for n in _notes_in(extra)]
    else:
        todo = [(os.path.join(folder, n), n, n.casefold() == INDEX_NAME.casefold()) for n in names]
    if not todo:
        raise _Bad("no notes in this folder (no .md files)")
    if len(todo) > MAX_FOLDER_NOTES:
        out.notices.append(f"{shown}: only its first {MAX_FOLDER_NOTES} of {len(todo)} notes imported")
        todo = todo[:MAX_FOLDER_NOTES]
    cards: list[SourceCard] = []
    for path, rel, sectioned in todo:
        where = f"{shown.rstrip('/')}/{rel}"
        try:
            text = _read_text(path, where, out.notices)
        except _Bad as e:
            out.problems.append(Problem(where, str(e)))
            continue
        if not sectioned:
            card = note_card(text, where, stem=Path(rel).stem)
            cards += [card] if card else []
            continue
        if rel == CODEX_SUMMARY:
            text = normalize_text(text).removeprefix("v1\n")  # the summary's format version line
        elif not codex:
            text = drop_index_links(text, names)
        cards += document_cards(text, where, title=os.path.basename(rel))
    return cards


def gather(paths: Sequence[str], workspace: Path) -> Gathered:
    """The cards of ``paths`` (files and memory folders), in order; a path that gives none is a
    Problem and the others still count."""
    out = Gathered()
    for path in paths:
        shown = display_path(path, workspace)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            out.problems.append(Problem(path, "no such file or folder", usage=True))
            continue
        except OSError as e:
            out.problems.append(Problem(path, f"cannot read it: {e.strerror or e}"))
            continue
        try:
            if stat.S_ISDIR(st.st_mode):
                cards = _folder_cards(path, shown, out)
            else:
                cards = _file_cards(path, shown, out.notices)
        except _Bad as e:
            out.problems.append(Problem(path, str(e)))
            continue
        if not cards:
            why = "no notes with any text in this folder" if stat.S_ISDIR(st.st_mode) else "no text to import"
            out.problems.append(Problem(path, why))
            continue
        out.cards += cards
        out.origins.append(shown)
    return out


# -- planning against the store -----------------------------------------------------------------


@dataclass(frozen=True)
class PlannedCard:
    """A source card as the store would take it: the validated create ``op`` and the name it
    would get, or ``skip``, why it will not be made (an identical card, one held for review, or
    the validation's reason). ``markup``: what the card made would hide from a rendered view
    (its kind, the fragment on one printable line), as the trust window finds it."""

    index: int
    card: SourceCard
    op: Operation | None
    filename: str = ""
    skip: str = ""
    markup: tuple[str, str] | None = None


def level_problem(stores: MemoryStores, level: Level) -> str | None:
    """Why cards cannot go to ``level`` in this workspace, or None."""
    if level is Level.PROJECT and not stores.has_project_level:
        return "this workspace has no project level (its project store is the user store): use --level user"
    if level is Level.PROJECT and not stores.project_trusted:
        return f"the project store {stores.project.dir}: {UNTRUSTED_REASON}; or import with --level user"
    return stores.store(level).folder_problem()


def _body_key(body: str) -> str:
    # As the store compares bodies for identical creates: line ends and surrounding blanks aside.
    return body.replace("\r\n", "\n").strip()


def _held_cards(spool: Spool, workspace: Path, level: Level) -> dict[tuple[str, str], str]:
    """(title, body) -> job id of each create of ``level`` held for review in this workspace."""
    held: dict[tuple[str, str], str] = {}
    for e in spool.list(workspace, include_orphans=False):
        if e.job is None or e.job.state != "held":
            continue
        for h in e.job.held_ops:
            op = h.op
            if op.action is Action.CREATE and op.level is level and op.title and op.content is not None:
                held.setdefault((op.title, _body_key(op.content)), e.job.id)
    return held


def _validated(card: SourceCard, level: Level) -> tuple[Operation | None, str]:
    item = {
        "action": "create",
        "level": level.value,
        "type": card.type.value,
        "title": card.title,
        "summary": card.summary,
        "content": card.body,
    }
    if level is Level.PROJECT:
        # What the transaction does to a project card before validating it (the team sees it):
        # done here too, so the duplicate check compares what would be written.
        item = {k: tilde_home(v) for k, v in item.items()}
    ops, rejected = validate_operations([item])
    if rejected:
        return None, rejected[0].reason.removeprefix("op 0: ")
    return ops[0].op, ""


def plan_import(stores: MemoryStores, cards: Sequence[SourceCard], level: Level) -> list[PlannedCard]:
    """Each card as the store would take it now, in order (``index``: its op number). Nothing
    is written. The transaction checks all of this again when the cards are applied."""
    plan = Plan(stores.layout.stores)
    held = _held_cards(Spool(stores.paths, stores.fs), stores.paths.workspace, level)
    mine: set[str] = set()
    out: list[PlannedCard] = []
    for index, card in enumerate(cards):
        op, reason = _validated(card, level)
        if op is None or op.title is None or op.content is None or op.type is None:
            out.append(PlannedCard(index, card, None, skip=reason or "not a valid card"))
            continue
        same = plan.duplicate_of(level, op.title, op.content)
        job = held.get((op.title, _body_key(op.content)))
        if same is not None:
            why = (
                "the same title and text as an earlier card of this import"
                if same in mine
                else f"already a {level.value} card: {same}"
            )
            out.append(PlannedCard(index, card, op, skip=why))
        elif job is not None:
            out.append(PlannedCard(index, card, op, skip=f"already held for review in job {job}"))
        else:
            name = plan.unique_name(level, note_filename(op.type, slugify(op.title, None)))
            plan.remember_created(level, op.title, op.content, name)
            mine.add(name)
            # Scanned as written (the op's text), so the count matches what the trust window
            # and the card browser will find in the card.
            markup = card_markup(op.content, op.title, op.summary or "")
            out.append(PlannedCard(index, card, op, filename=name, markup=markup))
    return out


def _label(origins: Sequence[str]) -> str:
    names = ", ".join(sanitize_line(redact(o), 80) for o in origins) or "nothing"
    return f"memory import {names}"[:300]


def hold_import(stores: MemoryStores, planned: Sequence[PlannedCard], origins: Sequence[str]) -> Job:
    """The cards to make, held for review as one spooled job of this workspace (``memory
    approve`` and the pending screen apply it like any held job). Its one turn only names the
    import, for listings: a held job is never sent to a model."""
    todo = [p for p in planned if p.op is not None and not p.skip]
    n = len(todo)
    hiding = sum(1 for p in todo if p.markup)
    counts = f"{n} card{'s' if n != 1 else ''}" + (f", {hiding} with hidden markup" if hiding else "")
    text = f"{_label(origins)} ({counts})"
    turn = Turn(messages=[TurnMessage(role="user", text=text)], session=IMPORT_SOURCE)
    job = make_job(stores.paths.workspace, [turn], session=IMPORT_SOURCE, mode="review")
    job.state = "held"
    job.snapshot_hashes = {}
    job.held_ops = [
        HeldOp(index=p.index, op=p.op, source=p.card.provenance) for p in todo if p.op is not None
    ]
    Spool(stores.paths, stores.fs).submit(job)
    return job


def apply_import(stores: MemoryStores, planned: Sequence[PlannedCard], origins: Sequence[str]) -> BatchResult:
    """The cards to make, applied now as one batch (``memory undo`` reverts it)."""
    todo = [(p.index, p.op, p.card.provenance) for p in planned if p.op is not None and not p.skip]
    return stores.apply(
        [(i, op) for i, op, _ in todo],
        source=IMPORT_SOURCE,
        sources={i: src for i, _, src in todo},
        label=_label(origins),
        kind="manual",
    )
