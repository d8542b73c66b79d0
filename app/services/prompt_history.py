"""The prompt's Up/Down history, kept per workspace across starts.

One JSON string per line in ``$PSEUDOCLAUDE_HOME/prompts/<workspace key>.jsonl`` (mode 0600: a
prompt can hold anything the user typed or pasted). Appends are single ``O_APPEND`` writes, so
two windows on one workspace interleave whole lines; when the file grows past twice the bound it
is rewritten, under a lock, to the last ``MAX_ENTRIES``. Synchronous: the App calls each step in
one thread (``asyncio.to_thread``). Not aiofiles: an append is a ``pread`` that repairs a torn
line and then a single ``O_APPEND`` write, and a rewrite is lock, write, fsync, replace; aiofiles
offers neither ``pread`` nor the lock, would hop to a thread per call, and its buffered file
object leaves it to the buffer how a line is split into writes (another window's line could land
between them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory.store.locks import file_lock
from memory.store.paths import pseudoclaude_home, workspace_key

__all__ = ["MAX_ENTRIES", "MAX_ENTRY_CHARS", "PromptHistory"]

MAX_ENTRIES = 1000
# A pasted log of megabytes stays recallable in this session only; the file keeps prompts.
MAX_ENTRY_CHARS = 64_000


class PromptHistory:
    """``home``: the app's folder (None: ``$PSEUDOCLAUDE_HOME``, default ``~/.PseudoClaude``)."""

    def __init__(self, home: Path | None, workspace: Path, *, max_entries: int = MAX_ENTRIES) -> None:
        self.path = (
            Path(home if home is not None else pseudoclaude_home())
            / "prompts"
            / f"{workspace_key(Path(workspace))}.jsonl"
        )
        self.max_entries = max_entries
        self._lines: int | None = None  # lines in the file as last seen (None: not counted yet)

    def load(self) -> list[str]:
        """The last ``max_entries`` prompts, oldest first ([] when none; bad lines skipped)."""
        entries = self._read()
        self._lines = len(entries)
        return entries[-self.max_entries :]

    def append(self, text: str) -> None:
        """Record a sent prompt (blank ones and too-long ones are not kept)."""
        if not text.strip() or len(text) > MAX_ENTRY_CHARS:
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = (json.dumps(text, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # after a torn write: start a line of our own
            _write_all(fd, line)
        finally:
            os.close(fd)
        if self._lines is None:
            self._lines = len(self._read())
        else:
            self._lines += 1
        if self._lines > 2 * self.max_entries:
            self._compact()

    def _read(self) -> list[str]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out: list[str] = []
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                value = json.loads(line.decode("utf-8", "surrogatepass"))
            except (ValueError, UnicodeDecodeError):
                continue  # a torn last line after a crash, a hand edit: skip it, keep the rest
            if isinstance(value, str):
                out.append(value)
        return out

    def _compact(self) -> None:
        lock = file_lock(self.path.with_name(self.path.name + ".lock"), 10.0)
        with lock:
            keep = self._read()[-self.max_entries :]
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                data = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in keep)
                _write_all(fd, data.encode("utf-8", "surrogatepass"))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            self._lines = len(keep)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
