"""One store folder: its notes and its ``MEMORY.md`` (the seed's ``Store``), read side.

Writes never happen here directly: the transaction plans them with the helpers below and
applies them through the filesystem layer, so both stores change together or not at all.
"""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass
from pathlib import Path

from .frontmatter import FrontMatterError, parse_meta, split_note
from .fs import FS, STAGE_PREFIX, TEMP_PREFIX, UnsafePathError
from .index import index_line
from .model import INDEX_FILE, MAX_CONTENT_BYTES, Level, Note, NoteMeta, NoteType
from .sanitize import check_filename, sanitize_summary, sanitize_title

# A hand-written note can be larger than a model's (16 KiB), but a store is no place for
# megabytes: past this a file is listed as broken rather than read into memory.
MAX_NOTE_FILE_BYTES = 1024 * 1024 + MAX_CONTENT_BYTES
MAX_INDEX_FILE_BYTES = 1024 * 1024

GITIGNORE = b"# Written by PseudoClaude: deleted notes and temporary files stay out of git.\n.trash/\n.pc-*\n"


class StoreError(Exception):
    """A one-line reason why a store (or a note in it) cannot be used."""


@dataclass(frozen=True)
class _Cached:
    key: tuple[int, int, int, int]
    note: Note


# Front matter cached by (inode, size, mtime, ctime) per file, shared by every Store object of
# this process, so a batch (and the index rebuild after it) does not re-parse every note.
_CACHE: dict[tuple[str, str], _Cached] = {}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fallback_type(filename: str) -> NoteType:
    for t in NoteType:
        if filename.startswith(f"{t}_"):
            return t
    return NoteType.PROJECT_KNOWLEDGE


def parse_note(level: Level, filename: str, data: bytes) -> Note:
    """Parse a note file; a broken one still yields a Note (flagged) so nothing is lost from view."""
    digest = sha256(data)
    broken: str | None = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        broken = "not valid UTF-8"
    try:
        fm, body = split_note(text)
        meta = parse_meta(fm, fallback_type=_fallback_type(filename))
    except FrontMatterError as e:
        broken = broken or str(e)
        body = text
        meta = NoteMeta(title=filename.removesuffix(".md"), type=_fallback_type(filename), created="", updated="")
    # Hand edits are not trusted to keep the index one line per note.
    meta = meta.model_copy(
        update={
            "title": sanitize_title(meta.title) or sanitize_title(filename.removesuffix(".md")) or filename,
            "summary": sanitize_summary(meta.summary),
        }
    )
    return Note(level=level, filename=filename, meta=meta, body=body, sha256=digest, broken=broken)


class Store:
    def __init__(self, level: Level, folder: Path, fs: FS, *, guard: Path | None = None) -> None:
        self.level = level
        self.dir = Path(folder)
        self.fs = fs
        # Folders between ``guard`` and the store that must not be symlinks either (a cloned
        # repository could point ``.PseudoClaude`` anywhere).
        self._guard = guard

    def __repr__(self) -> str:
        return f"Store({self.level}, {self.dir})"

    # -- folder checks -------------------------------------------------------------------------

    def folder_problem(self) -> str | None:
        """A reason the folder must not be read or written, or None (a missing folder is fine)."""
        chain = [self.dir]
        if self._guard is not None:
            cur = self.dir.parent
            while cur != self._guard and self._guard in cur.parents:
                chain.append(cur)
                cur = cur.parent
        for p in chain:
            try:
                st = self.fs.lstat(p)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                return f"{self.level} store folder {p} is a symlink; refusing to use it"
            if not stat.S_ISDIR(st.st_mode):
                return f"{self.level} store path {p} is not a folder"
        return None

    def exists(self) -> bool:
        return self.folder_problem() is None and self.fs.exists(self.dir)

    # -- listing and reading ---------------------------------------------------------------------

    def entries(self) -> list[str]:
        """Every name in the folder (for doctor and unique-name checks); [] if absent or unsafe."""
        if self.folder_problem() is not None:
            return []
        try:
            return self.fs.listdir(self.dir)
        except FileNotFoundError:
            return []

    def note_names(self) -> list[str]:
        """Names of the notes: ``*.md`` regular files with safe names, sorted."""
        out = []
        for name in self.entries():
            if name == INDEX_FILE or not name.endswith(".md") or check_filename(name) is not None:
                continue
            if self.regular_file_problem(name) is None:
                out.append(name)
        return out

    def regular_file_problem(self, filename: str) -> str | None:
        """Why ``filename`` cannot be read or targeted (not there, symlink, hard-linked), or None."""
        try:
            st = self.fs.lstat(self.dir / filename)
        except FileNotFoundError:
            return f"no note named {filename!r} in the {self.level} store"
        if stat.S_ISLNK(st.st_mode):
            return f"{filename!r} is a symlink; refusing to follow it"
        if not stat.S_ISREG(st.st_mode):
            return f"{filename!r} is not a regular file"
        if st.st_nlink > 1:
            return f"{filename!r} has {st.st_nlink} hard links; refusing to touch it"
        if st.st_size > MAX_NOTE_FILE_BYTES:
            return f"{filename!r} is larger than {MAX_NOTE_FILE_BYTES} bytes"
        return None

    def target_problem(self, filename: str) -> str | None:
        """Full check of a name an operation targets (DESIGN.md §5)."""
        reason = check_filename(filename)
        if reason is not None:
            return reason
        if filename == INDEX_FILE:
            return f"{INDEX_FILE} is not a note"
        return self.folder_problem() or self.regular_file_problem(filename)

    def read_note(self, filename: str) -> Note:
        reason = self.target_problem(filename)
        if reason is not None:
            raise StoreError(reason)
        path = self.dir / filename
        try:
            st = self.fs.lstat(path)
        except FileNotFoundError:
            raise StoreError(f"no note named {filename!r} in the {self.level} store") from None
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        ck = (str(self.dir), filename)
        hit = _CACHE.get(ck)
        if hit is not None and hit.key == key:
            return hit.note
        try:
            data = self.fs.read_bytes(path)
        except UnsafePathError as e:
            raise StoreError(f"{filename!r}: {e.strerror}") from None
        except FileNotFoundError:
            raise StoreError(f"no note named {filename!r} in the {self.level} store") from None
        note = parse_note(self.level, filename, data)
        _CACHE[ck] = _Cached(key, note)
        return note

    def notes(self) -> list[Note]:
        out = []
        for name in self.note_names():
            try:
                out.append(self.read_note(name))
            except (StoreError, FileNotFoundError):
                continue
        return out

    def read_index_file(self) -> str:
        """``MEMORY.md`` as on disk ('' when absent or unsafe). Callers filter its lines."""
        if self.folder_problem() is not None:
            return ""
        try:
            data = self.fs.read_bytes(self.dir / INDEX_FILE, max_bytes=MAX_INDEX_FILE_BYTES)
        except (FileNotFoundError, UnsafePathError, NotADirectoryError):
            return ""
        return data[:MAX_INDEX_FILE_BYTES].decode("utf-8", "replace")

    def hashes(self) -> dict[str, str]:
        return {n.filename: n.sha256 for n in self.notes()}

    def temp_files(self) -> list[str]:
        return [n for n in self.entries() if n.startswith((TEMP_PREFIX, STAGE_PREFIX))]


def render_index(notes: list[Note]) -> str:
    """``MEMORY.md``: exactly one line per note, sorted by filename, rebuilt, never patched."""
    lines = [
        index_line(str(n.meta.type), n.meta.title, n.meta.summary, n.filename)
        for n in sorted(notes, key=lambda n: n.filename)
    ]
    return "".join(line + "\n" for line in lines)
