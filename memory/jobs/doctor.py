"""``memory doctor``: find what is wrong with the stores and, with ``--fix``, repair what is safe.

Nothing a person wrote is ever removed: broken notes, symlinks and hard links are reported
with what to do, never "fixed" away. Safe repairs are finishing or dropping an interrupted
transaction and rebuilding ``MEMORY.md`` from the notes. ``MEMORY.md`` is derived data: one out of
step with the cards in a trusted store (a forged line, a hand edit) is rebuilt by the diagnosis
itself and said in one line, never a problem; an untrusted store is never written, so there it
is only said (it is rebuilt once the store is trusted). Stale cards are reported
as information, not problems: a card whose code moved on may still hold, and only a person (or
the memory model, from a turn that showed the code) can say; nothing is deleted for it.

Stores shared through git: a conflicted card is a finding naming both versions, and
a card this workspace deleted that is back (a merge kept another branch's change) is one for a
person to decide; neither is ever "fixed" by taking a side.
"""

from __future__ import annotations

import base64
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from memory.constants import INDEX_FILE, Level
from memory.jobs.spool import DAMAGED_DIR, Spool, SpoolError
from memory.model import Change, HistoryEntry, Note
from memory.sharing.log import last_author
from memory.store import journal
from memory.store.frontmatter import FrontMatterError, parse_meta, split_note
from memory.store.noteparse import sha256
from memory.store.store import GIT_FILES, TRASH_DIR, Store, filename_problem, render_index
from memory.store.stores import MemoryStores
from memory.store.transaction import TransactionError, rebuild_indexes_locked
from memory.text.conflict_sides import by_machine, side_names
from memory.text.names import quote, sanitize_summary, sanitize_title


@dataclass
class Finding:
    message: str
    fixable: bool


@dataclass
class DoctorReport:
    findings: list[Finding] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    # (filename, reason) of each stale project card: said, never a finding (``ok`` ignores it).
    stale: list[tuple[str, str]] = field(default_factory=list)
    # What an untrusted store holds that doctor leaves as it came: said, never a finding.
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def _store_notes(st: Store, level: Level, add: Callable[[Finding], None]) -> list[Note]:
    """The notes of one store folder, as the index reads them; what is not a note is a finding."""
    notes: list[Note] = []
    for name in st.entries():
        if name in (INDEX_FILE, TRASH_DIR, ".git", *GIT_FILES) or name.startswith(".pc-"):
            continue
        path = st.dir / name
        lst = path.lstat()
        if stat.S_ISLNK(lst.st_mode):
            add(
                Finding(
                    f"{level} store: {quote(name)} is a symlink; it is ignored "
                    "(replace it with a regular file)",
                    False,
                )
            )
            continue
        if not name.endswith(".md") or stat.S_ISDIR(lst.st_mode):
            add(Finding(f"{level} store: {quote(name)} is not a note (*.md file); it is ignored", False))
            continue
        reason = filename_problem(name) or st.regular_file_problem(name)
        if reason is not None:
            add(Finding(f"{level} store: {reason}; it is ignored (rename or copy it)", False))
            continue
        note = st.read_note(name)
        notes.append(note)
        if note.conflict is not None:
            add(Finding(conflict_message(note), False))
        elif note.broken:
            add(
                Finding(
                    f"{level} store: {name}: {note.broken} (edit the file; it is listed by filename)", False
                )
            )
    return notes


def diagnose(stores: MemoryStores) -> DoctorReport:
    report = DoctorReport()
    add = report.findings.append
    history = stores.history()
    jdir = stores.paths.journal_dir
    if jdir.exists():
        for name in sorted(p.name for p in jdir.iterdir()):
            add(Finding(f"interrupted transaction left {jdir / name}", True))
    for level, st in stores.stores.items():
        problem = st.folder_problem()
        if problem is not None:
            add(Finding(f"{problem} (remove the link and recreate the folder)", False))
            continue
        if not st.dir.exists():
            continue
        for name in st.temp_files():
            add(Finding(f"{level} store: leftover temporary file {name}", True))
        trash = st.trash_problem()
        if trash is not None:
            # A committed symlink would make every delete of this store fail; the fix replaces
            # the link (never what it points to) with a real folder.
            add(Finding(trash, "symlink" in trash))
        trusted = level is Level.USER or stores.project_trusted
        index_problem = st.index_file_problem()
        notes = _store_notes(st, level, add)
        if index_problem is not None or st.read_index_file() != render_index(notes):
            derived_index(stores, report, level, trusted, index_problem, notes)
        report.findings += deleted_here(stores, level, notes, history)
        git_files = git_file_findings(stores, level)
        if trusted:
            report.findings += git_files
        else:
            report.notes += [f"{f.message}; {_LEFT_AS_IT_CAME}" for f in git_files]
    for entry in Spool(stores.paths, stores.fs).list(None):
        if entry.problem is not None:
            add(
                Finding(f"spool: {entry.problem} (--fix moves it, bytes kept, to spool/{DAMAGED_DIR}/)", True)
            )
        elif entry.orphaned and entry.workspace == str(stores.paths.workspace):
            add(Finding(f"spool: job {entry.id} belongs to a workspace that no longer exists", False))
    report.stale = stale_cards(stores)
    return report


_LEFT_AS_IT_CAME = "left as it came: the store is not trusted yet (set right once you trust it)"


def derived_index(
    stores: MemoryStores,
    report: DoctorReport,
    level: Level,
    trusted: bool,
    problem: str | None,
    notes: list[Note],
) -> None:
    """A ``MEMORY.md`` out of step with the cards (``problem``: not even a regular file). It is
    derived, so in a trusted store it is rebuilt from the cards now (through the fs layer, no
    history entry, as every command does before it reads) and said as fixed; an untrusted store
    is never written, so there it is said and left. Only a rebuild that cannot happen (a batch
    waiting for its recovery, the stores locked, an I/O error) is a problem."""
    what = problem or f"{level} store: {INDEX_FILE} does not match the cards"
    if not trusted:
        report.notes.append(f"{what}; {_LEFT_AS_IT_CAME}")
        return
    why = "an interrupted transaction must be finished first"
    if not journal.needs_recovery(stores.layout):
        try:
            with stores.locked():
                rebuild_indexes_locked(stores.layout, None, [level])
            st = stores.store(level)
            if st.index_file_problem() is None and st.read_index_file() == render_index(notes):
                report.fixed.append(f"{level} store: rebuilt {INDEX_FILE} from the cards")
                return
            why = "the rebuilt file still differs"
        except (TransactionError, OSError) as e:
            why = str(e) or type(e).__name__
    report.findings.append(Finding(f"{what} and was not rebuilt from the cards: {why}", True))


def git_file_findings(stores: MemoryStores, level: Level) -> list[Finding]:
    """The git files a store in git lacks: written before doctor runs (``refresh_indexes``)
    unless that could not write them; ``--fix`` writes them."""
    folder = stores.store(level).dir
    out: list[Finding] = []
    if level is Level.PROJECT and not (folder / ".gitignore").exists():
        out.append(Finding("project store: .gitignore (keeping .trash/ out of git) is missing", True))
    if (level is Level.PROJECT or stores.layout.user_in_git) and not (folder / ".gitattributes").exists():
        out.append(
            Finding(
                f"{level} store: .gitattributes (MEMORY.md merge=union, so merges of cards do not "
                "conflict on it) is missing",
                True,
            )
        )
    return out


def _side(text: str) -> str:
    """One side of a conflicted card as ``title — summary`` (its own front matter), or why not."""
    try:
        meta = parse_meta(split_note(text)[0])
    except FrontMatterError as e:
        return f"(its front matter does not parse: {e})"
    title = sanitize_title(meta.title) or "(no title)"
    summary = sanitize_summary(meta.summary)
    return f"{title} — {summary}" if summary else title


def conflict_message(note: Note) -> str:
    """A conflicted card's finding, naming both versions."""
    assert note.conflict is not None
    sides = note.conflict
    first, second = side_names(sides.ours_label, sides.theirs_label)
    where = f"on {first.name} and on {second.name}" if by_machine((first, second)) else "on two branches"
    return (
        f"{note.level} store: {note.filename} is conflicted (changed {where}): "
        f"{first.name}: {_side(sides.ours)}, {second.name}: {_side(sides.theirs)}; "
        "resolve it in the card editor or with `memory apply` of an update"
    )


def deleted_here(
    stores: MemoryStores, level: Level, notes: list[Note], history: list[HistoryEntry]
) -> list[Finding]:
    """A card present now whose last change by this workspace's batches was a delete: it came
    back from outside (a merge kept another branch's change of it). A person
    decides; any later batch of ours writing it (an edit, a confirm) settles it."""
    last: dict[str, tuple[HistoryEntry, Change]] = {}
    for entry in history:
        for ch in entry.changes:
            if ch.level is level:
                last[ch.filename] = (entry, ch)
    present = {n.filename: n for n in notes}
    out: list[Finding] = []
    for name, (entry, ch) in sorted(last.items()):
        note = present.get(name)
        if ch.after_sha is not None or note is None:
            continue
        keep = "keep it (edit or `memory confirm` it) or delete it again"
        if ch.before_b64 is not None and sha256(base64.b64decode(ch.before_b64)) == note.sha256:
            out.append(
                Finding(
                    f"{level} store: {name} was deleted here ({entry.time}) and is back unchanged "
                    f"(restored from git?); {keep}",
                    False,
                )
            )
            continue
        author = note.meta.author or last_author(stores, level, name) or "someone"
        out.append(
            Finding(
                f"{level} store: {name} was deleted here ({entry.time}) and changed by {author} "
                f"on another branch; {keep}",
                False,
            )
        )
    return out


def stale_cards(stores: MemoryStores) -> list[tuple[str, str]]:
    """Each stale project card (filename, one-line reason), checked without recovering first:
    a diagnosis changes nothing, an interrupted transaction included."""
    checks = stores.staleness(recover=False)
    return [(name, check.reason) for name, check in sorted(checks.items()) if check.stale]


def fix(stores: MemoryStores) -> DoctorReport:
    fixed = stores.recover()
    fixed += fix_spool(stores)
    fixed += stores.repair_trash()
    # An untrusted project store is never written: its MEMORY.md waits for the person's trust.
    rebuilt = stores.rebuild_indexes(
        [lv for lv in stores.stores if lv is Level.USER or stores.project_trusted]
    )
    fixed += [f"{lv} store: rebuilt {INDEX_FILE}" for lv in rebuilt]
    report = diagnose(stores)
    report.fixed = fixed + report.fixed
    return report


def fix_spool(stores: MemoryStores) -> list[str]:
    """Move every damaged job file, bytes kept, to ``spool/damaged/``: it no longer blocks anything."""
    spool = Spool(stores.paths, stores.fs)
    out: list[str] = []
    for entry in spool.list(None):
        if entry.problem is None:
            continue
        try:
            dst = spool.quarantine(entry.path.name)
        except (SpoolError, OSError):
            continue  # still damaged: the report that follows names it
        out.append(f"spool: moved damaged {entry.path.name} to {dst}")
    return out
