"""The one filesystem layer every store, journal, spool and history write goes through.

Why one layer: crash safety depends on the order of writes, fsyncs and renames, and tests
must be able to inject a fault (or a hard exit) at any single operation and read back the
exact call order. Nothing here follows a symlink: reads and creates use ``O_NOFOLLOW`` and
refuse anything that is not a regular file.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

# Files the layer makes while staging: recovery removes any it finds without a committed
# journal record, so the prefix must never collide with a note's name (notes never start with ".").
TEMP_PREFIX = ".pc-tmp-"
STAGE_PREFIX = ".pc-stage-"

Hook = Callable[[str, str], None]


class UnsafePathError(OSError):
    """A path that is a symlink, not a regular file, or otherwise not ours to touch."""


_READS = frozenset({"lstat", "listdir", "read"})


class FS:
    """File operations with a per-call hook for fault injection and an optional call log.

    ``hook(op, path)`` runs before the operation and may raise ``OSError`` (a fault) or call
    ``os._exit`` (a crash). ``log`` (when enabled) records ``(op, path, src)`` in call order;
    ``src`` is the source of a rename, else "".
    """

    def __init__(
        self, hook: Hook | None = None, record: bool = False, pace: Callable[[], None] | None = None
    ) -> None:
        self.hook = hook
        self.log: list[tuple[str, str, str]] | None = [] if record else None
        # A checkpoint run before every operation: background work makes room for a busy
        # foreground there (memory.jobs.pace.Pacer; the app sets one).
        self.pace = pace
        # How many changes this object made in each folder (every operation but a read, by the
        # folder of the path it names): a listing made since can still be taken as the folder's
        # state by a short command (Store.pinned); a lock, a cache or a stamp elsewhere is none.
        self._changes: dict[str, int] = {}

    def changes_in(self, folder: str) -> int:
        return self._changes.get(folder, 0)

    def _op(self, op: str, path: str | Path, src: str | Path = "") -> None:
        p = str(path)
        if op not in _READS:
            folder = os.path.dirname(p)
            self._changes[folder] = self._changes.get(folder, 0) + 1
        if self.pace is not None:
            self.pace()
        if self.hook is not None:
            self.hook(op, p)
        if self.log is not None:
            self.log.append((op, p, str(src)))

    # -- reading -------------------------------------------------------------------------

    def lstat(self, path: Path | str) -> os.stat_result:
        self._op("lstat", path)
        return os.lstat(path)

    def exists(self, path: Path) -> bool:
        try:
            self.lstat(path)
        except FileNotFoundError:
            return False
        return True

    def listdir(self, path: Path) -> list[str]:
        self._op("listdir", path)
        return sorted(os.listdir(path))

    def read_bytes(self, path: Path, *, max_bytes: int | None = None) -> bytes:
        """Read a regular file without following a symlink at its last component.

        Opened with ``O_NONBLOCK`` and checked with ``fstat`` before any read: a FIFO or a
        device planted at a note's (or ``MEMORY.md``'s) name is refused at once instead of
        hanging the command until some writer appears.
        """
        self._op("read", path)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UnsafePathError(errno.ELOOP, "is a symlink", str(path)) from None
            if e.errno == errno.ENXIO:  # a socket or a FIFO opened in some other way
                raise UnsafePathError(errno.EINVAL, "not a regular file", str(path)) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnsafePathError(errno.EINVAL, "not a regular file", str(path))
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            total = 0
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if max_bytes is not None and total > max_bytes:
                    break
            data = b"".join(chunks)
            return data if max_bytes is None else data[: max_bytes + 1]
        finally:
            os.close(fd)

    # -- writing -------------------------------------------------------------------------

    def makedirs(self, path: Path, mode: int = 0o755) -> None:
        """Create missing folders one by one (refusing symlinked ones), fsyncing each parent."""
        path = Path(path)
        missing: list[Path] = []
        cur = path
        while True:
            try:
                st = os.lstat(cur)
            except FileNotFoundError:
                missing.append(cur)
                cur = cur.parent
                continue
            if stat.S_ISLNK(st.st_mode) and cur == path:
                raise UnsafePathError(errno.ELOOP, "folder is a symlink", str(cur))
            break
        for d in reversed(missing):
            self._op("mkdir", d)
            try:
                os.mkdir(d, mode)
            except FileExistsError:
                pass
            self.fsync_dir(d.parent)
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePathError(errno.ELOOP, "folder is a symlink", str(path))
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafePathError(errno.ENOTDIR, "not a folder", str(path))

    def write_new(self, path: Path, data: bytes, mode: int = 0o644, *, sync: bool = True) -> None:
        """No-clobber create: fails with FileExistsError if anything (even a dangling link) is there.

        The data is written and fsynced before the call returns (unless ``sync`` is False: a
        cache that checks itself when read); the caller fsyncs the folder when the name itself
        must be durable.
        """
        self._op("create", path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, mode)
        try:
            self._op("write", path)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if sync:
                self._op("fsync", path)
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(path)
            except OSError:
                pass
            raise
        os.close(fd)
        # O_CREAT's mode is masked by the umask; private files must really be private.
        if mode & 0o077 == 0:
            os.chmod(path, mode)

    def temp_path(self, folder: Path, prefix: str = TEMP_PREFIX) -> Path:
        return Path(folder) / f"{prefix}{secrets.token_hex(8)}"

    def replace(self, src: Path, dst: Path) -> None:
        """``os.replace``: atomic, and never follows a symlink at ``dst`` (it replaces the link)."""
        self._op("replace", dst, src)
        os.replace(src, dst)

    def link(self, src: Path, dst: Path) -> None:
        """Hard-link ``src`` at ``dst``; ``FileExistsError`` if anything is at ``dst``.

        The final step of a create: unlike ``os.replace`` it never replaces a file that
        appeared meanwhile, and the file system's own name lookup decides what "exists"
        means (so a case-insensitive volume refuses ``Build.md`` when ``build.md`` is there).
        """
        self._op("link", dst, src)
        os.link(src, dst, follow_symlinks=False)

    def unlink(self, path: Path, missing_ok: bool = True) -> None:
        self._op("unlink", path)
        try:
            os.unlink(path)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def fsync_dir(self, path: Path) -> None:
        self._op("fsync_dir", path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def atomic_write(self, path: Path, data: bytes, mode: int = 0o644, *, sync: bool = True) -> None:
        """Temp file in the same folder, fsync, ``os.replace``, fsync of the folder (no fsync at
        all with ``sync`` False: readers still see the old file or the new one, never a part)."""
        path = Path(path)
        tmp = self.temp_path(path.parent)
        self.write_new(tmp, data, mode, sync=sync)
        try:
            self.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if sync:
            self.fsync_dir(path.parent)

    def create_durable(self, path: Path, data: bytes, mode: int = 0o644) -> None:
        """No-clobber create whose name is durable on return (the folder is fsynced)."""
        self.write_new(path, data, mode)
        self.fsync_dir(Path(path).parent)


DEFAULT_FS = FS()
