"""Content ids of cited files, and what git knows of them.

A citation records the git blob id of a tracked file (``sha1("blob <size>\\0" + bytes)``, what
``git hash-object`` prints for an unfiltered file), so a teammate's checkout computes the same
value; an untracked file gets ``sha256:<hex>``. Ids are cached by (device, inode, size, mtime):
a warm check of a thousand cards is a ``stat`` per cited file, never a read.

Git is asked only through ``git`` itself (``ls-files``, ``diff``, ``log``), with a short
timeout, never through a shell; a workspace without git, or a machine without it, simply has no
tracked files and no rename history.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["FileIds", "GitProbe", "git_blob_id", "id_kind"]

_CHUNK = 1024 * 1024
_GIT_TIMEOUT = 10.0
_CACHE_MAX = 50_000


def git_blob_id(data: bytes) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def id_kind(blob: str) -> str:
    """``git`` for a git blob id (40 or 64 hex), ``sha256`` for ``sha256:<hex>``."""
    return "sha256" if blob.startswith("sha256:") else "git"


def _file_id(real: str, kind: str, size: int) -> str:
    h = hashlib.sha256() if kind == "sha256" else hashlib.sha1(usedforsecurity=False)
    if kind == "git":
        h.update(b"blob %d\0" % size)
    # O_NOFOLLOW: the path was checked; a symlink swapped in since is not followed.
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    finally:
        os.close(fd)
    return f"sha256:{h.hexdigest()}" if kind == "sha256" else h.hexdigest()


class FileIds:
    """Content ids by path, cached by the file's stat key. Thread-safe; shared by a process."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], tuple[tuple[int, int, int, int], str]] = {}
        self._lock = threading.Lock()
        self.reads = 0  # files hashed (for tests and the benchmark: a warm check reads none)

    def of(self, real: str, kind: str, st: os.stat_result | None = None) -> str:
        """The id of the regular file at ``real``; raises OSError when it cannot be read."""
        if st is None:
            st = os.stat(real)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        ck = (real, kind)
        with self._lock:
            hit = self._cache.get(ck)
        if hit is not None and hit[0] == key:
            return hit[1]
        digest = _file_id(real, kind, st.st_size)
        with self._lock:
            self.reads += 1
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[ck] = (key, digest)
        return digest


class GitProbe:
    """What git says about a workspace: which paths are tracked, the index's blob ids, renames."""

    def __init__(self, workspace: Path | str) -> None:
        self.workspace = str(workspace)
        self._is_repo = os.path.exists(os.path.join(self.workspace, ".git"))

    def _git(self, args: Sequence[str]) -> bytes | None:
        if not self._is_repo:
            return None
        try:
            done = subprocess.run(
                ["git", "-C", self.workspace, "-c", "core.quotepath=off", *args],
                capture_output=True,
                timeout=_GIT_TIMEOUT,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    def tracked(self, rels: Iterable[str]) -> set[str]:
        """The given workspace-relative paths that git tracks."""
        rels = list(rels)
        if not rels:
            return set()
        out = self._git(["ls-files", "-z", "--", *[f":(literal){r}" for r in rels]])
        return {p for p in (out or b"").decode("utf-8", "surrogateescape").split("\0") if p}

    def index_blobs(self) -> dict[str, str]:
        """blob id -> a path holding it in git's index (the first, by path order)."""
        out = self._git(["ls-files", "-s", "-z"])
        blobs: dict[str, str] = {}
        for entry in (out or b"").decode("utf-8", "surrogateescape").split("\0"):
            head, _, path = entry.partition("\t")
            fields = head.split()
            if len(fields) == 3 and path:
                blobs.setdefault(fields[1], path)
        return blobs

    def others(self) -> list[str] | None:
        """Untracked, not ignored files (where an unstaged ``mv`` puts a file); None when git
        cannot say (no repository, no git)."""
        out = self._git(["ls-files", "-o", "--exclude-standard", "-z"])
        if out is None:
            return None
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]

    def renames(self, since: str | None) -> dict[str, str]:
        """old path -> new path by git's rename detection: staged or committed (since ``since``,
        an RFC 3339 time), oldest rename first so chains can be followed."""
        found: dict[str, str] = {}
        args = ["log", "-M", "--diff-filter=R", "--name-status", "-z", "--format=", "--reverse", "-n", "500"]
        if since:
            args.insert(1, f"--since={since}")
        for out in (self._git(args), self._git(["diff", "-M", "--cached", "--name-status", "-z", "HEAD"])):
            fields = (out or b"").decode("utf-8", "surrogateescape").split("\0")
            i = 0
            while i + 2 < len(fields):
                status = fields[i].strip()
                if status.startswith("R"):
                    found[fields[i + 1]] = fields[i + 2]
                    i += 3
                elif status:
                    i += 2
                else:
                    i += 1
        return found

    def state_token(self) -> tuple[object, ...]:
        """Changes whenever git's index or HEAD moves: cached answers are kept while it holds."""
        token: list[object] = []
        for name in ("index", "HEAD", "packed-refs"):
            try:
                st = os.stat(os.path.join(self.workspace, ".git", name))
                token.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                token.append(None)
        return tuple(token)
