"""A state built from the stores, kept on disk so the next start can show it in its first frames.

Derived data, trusted over nothing: the file holds what the caller encodes of its last state
built from the stores, with a stamp of what it was built from — each store folder's
``memory.store.stamp.folder_stamp`` and the stat key of the project's trust record (and of the
workspace marker naming it). At start-up the stamp is recomputed from the file system's stat data
only; any card change, a ``git pull`` or a trust change makes it differ, and then nothing is
shown. A state too fresh for its stat keys (``folder_stamp`` None) is not kept.

What the state is and how it is written is the caller's (``encode``/``decode``); this module
knows the file, its stamp and when it may be written. Imports stdlib and
memory.store.{fs,stamp,paths} only: it is read before the stores' own imports (pydantic,
PyYAML) are done.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from memory.store.fs import FS
from memory.store.paths import PROJECT_STORE_REL, pseudoclaude_home
from memory.store.stamp import RACY_NS, folder_stamp

__all__ = ["MAX_BYTES", "Stamp", "StampedSnapshot", "compute_stamp", "kept_snapshot", "snapshot_path"]

log = logging.getLogger(__name__)

MAX_BYTES = 1 << 20
_ID_RE = re.compile(r"[0-9a-f]{32}")

Stamp = dict[str, str]
S = TypeVar("S")
K = TypeVar("K", bound="StampedSnapshot[Any]")


def snapshot_path(home: Path, workspace: Path | str) -> Path:
    digest = hashlib.sha256(os.path.realpath(workspace).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return Path(home) / "cache" / f"panel-{digest}.json"


def _key(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_mode}"


def _trust_key(fs: FS, home: Path, workspace: str) -> str | None:
    """The stat keys of what ``trust.project_trusted`` reads (the workspace marker, the record it
    names); None: not stampable (a ``.git`` file's worktree, a fresh or unreadable file)."""
    try:
        st = os.lstat(f"{workspace}/.git")
        git = "dir" if stat.S_ISDIR(st.st_mode) else "other"
    except FileNotFoundError:
        git = "absent"
    except OSError:
        return None
    if git == "other":
        return None  # trust.py follows a worktree's .git file: not worth repeating here
    marker = Path(workspace) / (
        ".git/pseudoclaude-id" if git == "dir" else PROJECT_STORE_REL.parent / "workspace-id"
    )
    parts, newest = [git], 0
    try:
        mst = fs.lstat(marker)
        ident = fs.read_bytes(marker, max_bytes=256).decode("ascii", "replace").strip()
        parts.append(_key(mst))
        newest = mst.st_mtime_ns
    except (FileNotFoundError, NotADirectoryError):
        ident = ""
        parts.append("absent")
    except OSError:
        return None
    if _ID_RE.fullmatch(ident):
        try:
            rst = fs.lstat(Path(home) / "trust" / f"{ident}.json")
            parts.append(_key(rst))
            newest = max(newest, rst.st_mtime_ns)
        except (FileNotFoundError, NotADirectoryError):
            parts.append("absent")
        except OSError:
            return None
    return "|".join(parts) if newest < time.time_ns() - RACY_NS else None


def compute_stamp(fs: FS, home: Path, workspace: Path | str) -> Stamp | None:
    """The stamp of the stores now; None when any part of it cannot be trusted yet."""
    ws = os.path.realpath(workspace)
    project = folder_stamp(fs, Path(ws) / PROJECT_STORE_REL)
    user = folder_stamp(fs, Path(home) / "memory") if project is not None else None
    trust = _trust_key(fs, home, ws) if user is not None else None
    if project is None or user is None or trust is None:
        return None
    return {"project": project, "user": user, "trust": trust}


class StampedSnapshot(ABC, Generic[S]):
    """A workspace's snapshot file: read back only while its stamp holds, written after each state
    built from the stores (in the build's thread). A subclass says how a state is encoded."""

    def __init__(self, home: Path | None, workspace: Path | str, fs: FS | None = None) -> None:
        self.home = Path(home) if home is not None else pseudoclaude_home()
        self.workspace = os.path.realpath(workspace)
        self.fs = fs or FS()
        self._last: bytes | None = None
        # When a build could not be stamped because the stores had just changed: the time
        # (monotonic) from which a new build can be. A start right after a change would
        # otherwise find no snapshot, however long the app ran after it.
        self._retry_at: float | None = None

    @abstractmethod
    def encode(self, state: S, stamp: Stamp, workspace: str) -> bytes:
        """The file's bytes for ``state`` built from stores stamped ``stamp``."""

    @abstractmethod
    def decode(self, data: bytes, stamp: Stamp, workspace: str) -> S | None:
        """The state of a file when it is well formed and stamped ``stamp``; else None."""

    def read(self) -> S | None:
        """The last state kept when nothing it was built from changed since; None otherwise
        (missing, unreadable, malformed, too large, or stamped otherwise). Never raises."""
        try:
            data = self.fs.read_bytes(snapshot_path(self.home, self.workspace), max_bytes=MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                return None
            stamp = compute_stamp(self.fs, self.home, self.workspace)
            return None if stamp is None else self.decode(data, stamp, self.workspace)
        except Exception as e:  # a cache: whatever is wrong with it, the caller waits for the stores
            log.debug("panel snapshot not read: %s", e)
            return None

    def retry_in(self) -> float | None:
        """Seconds until a build refused for a store folder changed a moment ago could be stamped
        (0: now); None when the last build was stamped or failed for another reason."""
        return None if self._retry_at is None else max(0.0, self._retry_at - time.monotonic())

    def _just_changed(self) -> bool:
        """A store folder's own entries changed a moment ago (a batch just committed): its cards
        are too fresh to stamp, so the snapshot waits for a later build; found with one lstat
        per folder instead of one per card (at 10,000 cards, a tenth of a second of CPU)."""
        racy = time.time_ns() - RACY_NS
        for folder in (Path(self.workspace) / PROJECT_STORE_REL, self.home / "memory"):
            try:
                if self.fs.lstat(folder).st_mtime_ns >= racy:
                    return True
            except OSError:
                continue
        return False

    def record(self, build: Callable[[], S]) -> S:
        """``build()``'s state, kept when the stores' stamp is the same before and after it (so
        the state is exactly the stamped stores'). A failed write is logged, never raised."""
        try:
            fresh = self._just_changed()
            before = None if fresh else compute_stamp(self.fs, self.home, self.workspace)
        except OSError:
            fresh, before = False, None
        # Only a store folder that changed a moment ago is worth a later try: a store that cannot
        # be stamped at all (a worktree's .git file) would be built again after every refresh.
        self._retry_at = time.monotonic() + RACY_NS / 1e9 + 0.1 if fresh else None
        state = build()
        if before is None:
            return state
        try:
            if compute_stamp(self.fs, self.home, self.workspace) == before:
                data = self.encode(state, before, self.workspace)
                if data != self._last:
                    path = snapshot_path(self.home, self.workspace)
                    self.fs.makedirs(path.parent, 0o700)
                    self.fs.atomic_write(path, data, 0o600)
                    self._last = data
        except (OSError, ValueError) as e:
            log.debug("panel snapshot not written: %s", e)
        return state


_kept: dict[tuple[type[StampedSnapshot[Any]], Path, str], StampedSnapshot[Any]] = {}


def kept_snapshot(kind: type[K], home: Path | None, workspace: Path | str) -> K:
    """The one ``kind`` snapshot of a home and workspace in this process: it remembers what it
    wrote last, so an unchanged state is not written again."""
    key = (kind, Path(home) if home is not None else pseudoclaude_home(), os.path.realpath(workspace))
    snap = _kept.get(key)
    if snap is None:
        snap = _kept[key] = kind(key[1], key[2])
    assert isinstance(snap, kind)
    return snap
