"""``memory doctor``: find what is wrong with the stores and, with ``--fix``, repair what is safe.

Nothing a person wrote is ever removed: broken notes, symlinks and hard links are reported
with what to do, never "fixed" away. Safe repairs are finishing or dropping an interrupted
transaction and rebuilding ``MEMORY.md`` from the notes. Stale cards (DESIGN §14) are reported
as information, not problems: a card whose code moved on may still hold, and only a person (or
the memory model, from a turn that showed the code) can say; nothing is deleted for it.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field

from memory.constants import INDEX_FILE, Level
from memory.jobs.spool import DAMAGED_DIR, Spool, SpoolError
from memory.store.store import GIT_FILES, TRASH_DIR, filename_problem, render_index
from memory.store.stores import MemoryStores
from memory.text.names import quote


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

    @property
    def ok(self) -> bool:
        return not self.findings


def diagnose(stores: MemoryStores) -> DoctorReport:
    report = DoctorReport()
    add = report.findings.append
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
        index_problem = st.index_file_problem()
        if index_problem is not None:
            add(Finding(f"{index_problem} (it is rebuilt from the notes)", True))
        notes = []
        for name in st.entries():
            if name in (INDEX_FILE, TRASH_DIR, ".git", *GIT_FILES) or name.startswith(".pc-"):
                continue
            path = st.dir / name
            lst = path.lstat()
            if stat.S_ISLNK(lst.st_mode):
                add(Finding(f"{level} store: {quote(name)} is a symlink; it is ignored (replace it with a regular file)", False))
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
            if note.broken:
                add(Finding(f"{level} store: {name}: {note.broken} (edit the file; it is listed by filename)", False))
        if index_problem is None and st.read_index_file() != render_index(notes):
            add(Finding(f"{level} store: {INDEX_FILE} does not match the notes", True))
        if level is Level.PROJECT and not (st.dir / ".gitignore").exists():
            add(Finding("project store: .gitignore (keeping .trash/ out of git) is missing", True))
    for entry in Spool(stores.paths, stores.fs).list(None):
        if entry.problem is not None:
            add(Finding(f"spool: {entry.problem} (--fix moves it, bytes kept, to spool/{DAMAGED_DIR}/)", True))
        elif entry.orphaned and entry.workspace == str(stores.paths.workspace):
            add(Finding(f"spool: job {entry.id} belongs to a workspace that no longer exists", False))
    report.stale = stale_cards(stores)
    return report


def stale_cards(stores: MemoryStores) -> list[tuple[str, str]]:
    """Each stale project card (filename, one-line reason), checked without recovering first:
    a diagnosis changes nothing, an interrupted transaction included."""
    checks = stores.staleness(recover=False)
    return [(name, check.reason) for name, check in sorted(checks.items()) if check.stale]


def fix(stores: MemoryStores) -> DoctorReport:
    fixed = stores.recover()
    fixed += fix_spool(stores)
    fixed += stores.repair_trash()
    rebuilt = stores.rebuild_indexes()
    fixed += [f"{lv} store: rebuilt {INDEX_FILE}" for lv in rebuilt]
    report = diagnose(stores)
    report.fixed = fixed
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
