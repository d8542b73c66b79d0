"""A store folder's stat stamp: whether anything in it changed since ``MEMORY.md`` was last
checked against the cards (the rule that MEMORY.md is derived from the cards, at the price of a listing).

Every ``memory`` command rebuilds ``MEMORY.md`` when it no longer matches the cards; checking that
means parsing every card, seconds for a cold process over 10,000 cards. The stamp is a digest of
the folder's entries with each one's (inode, size, mtime, ctime, mode, links): while it is what the last
check recorded, no card, ``MEMORY.md`` or git file changed since, so the check is skipped. Any
change at all (an editor, ``git pull``, a batch) changes it and the next command checks again.
Like the parse cache, it trusts only the file system's own stat data, never a file's content.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from memory.store.fs import FS, STAGE_PREFIX, TEMP_PREFIX

__all__ = ["folder_stamp", "read_stamp", "stamp_path", "write_stamp"]


def stamp_path(home: Path, folder: Path) -> Path:
    digest = hashlib.sha256(os.path.realpath(folder).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return Path(home) / "cache" / f"index-{digest}.stamp"


# A file changed within this long of a stamp could change again with the same stat key (same
# size and inode, an mtime in the same clock tick): such a state is not stamped ("racy git").
RACY_NS = 2_000_000_000


def folder_stamp(fs: FS, folder: Path) -> str | None:
    """The digest of ``folder``'s entries and their stat keys ("absent" when it is not there);
    None when an entry changed too recently for its stat key to be trusted."""
    try:
        names = fs.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    racy = time.time_ns() - RACY_NS
    h = hashlib.sha256()
    base = str(folder)
    for name in sorted(names):
        if name.startswith((TEMP_PREFIX, STAGE_PREFIX)):
            continue  # a batch's staging files come and go; what they become is seen
        try:
            st = fs.lstat(f"{base}/{name}")
        except FileNotFoundError:
            continue
        if st.st_mtime_ns >= racy:
            # The answer is None whatever follows (a batch's MEMORY.md, sorted near the top, is
            # usually the one): no stat of each of 10,000 cards to find it out.
            return None
        # The ctime too: a card rewritten to its old size with its old mtime put back changes it.
        key = (
            f"{name}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0"
            f"{st.st_ctime_ns}\0{st.st_mode}\0{st.st_nlink}\n"
        )
        h.update(key.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def read_stamp(fs: FS, path: Path) -> str | None:
    try:
        return fs.read_bytes(path, max_bytes=256).decode("ascii", "replace").strip() or None
    except (OSError, ValueError):
        return None


def write_stamp(fs: FS, path: Path, stamp: str) -> None:
    """Best effort: a stamp that cannot be written only means the next command checks again."""
    try:
        fs.makedirs(path.parent, 0o700)
        fs.atomic_write(path, stamp.encode("ascii"), 0o600)
    except OSError:
        pass
