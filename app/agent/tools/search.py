"""The grep tool: a regular expression over the workspace's text files, bounded in time and output.

It runs in a worker thread (its tool does that) and checks between lines whether it was
cancelled, so a stopped call frees its thread soon. The files searched are those list_files
would walk (same skipped folders, no symlink out of the workspace).
"""

from __future__ import annotations

import os
import re
import re._constants as sre_constants  # type: ignore[import-not-found]  # private stdlib module, no stubs; only to size a pattern
import re._parser as sre_parser  # type: ignore[import-not-found]  # the same
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import Any

# The model's pattern runs in `regex` (re-compatible syntax), not stdlib `re`: it takes a
# timeout, and with concurrent=True it releases the GIL, so catastrophic backtracking neither
# hangs the call nor freezes the app's event loop.
import regex

from app.agent.tools.base import ToolContext, ToolError, ToolResult, quote
from app.agent.tools.files import (
    _O_CLOEXEC,
    _O_NONBLOCK,
    MAX_FILE_BYTES,
    MAX_WALK_ENTRIES,
    NOTE_RESERVE,
    _check_regular,
    _folder,
    _is_binary,
    _os_reason,
    _sort_key,
    _Walk,
)
from app.agent.tools.globs import compile_glob, named_skip_dirs
from app.agent.tools.paths import SKIP_DIRS, Resolved, inside, rel_display
from memory.text.lines import format_bytes
from memory.text.names import quote as redacted_quote

GREP_LINE_CHARS = 500
MAX_GREP_MATCHES = 500
MAX_PATTERN_CHARS = 10_000
MAX_REPEAT_WEIGHT = 100_000
_REPEAT_OPS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)

_running_lock = threading.Lock()
_running = 0


def grep_running() -> int:
    """How many grep searches are still running in worker threads (a cancelled one ends soon)."""
    return _running


class _Stop(Exception):
    """The search was cancelled: nobody waits for the result any more."""


def _grep_line(line: str, m: regex.Match[str]) -> str:
    if len(line) <= GREP_LINE_CHARS:
        return line
    start = max(0, m.start() - 100)
    snippet = line[start : start + GREP_LINE_CHARS]
    return ("…" if start else "") + snippet + ("…" if start + GREP_LINE_CHARS < len(line) else "")


def _repeat_weight(items: Any, factor: int = 1) -> int:
    """The largest product of nested repeat counts in a parsed pattern (``(a{1000}){1000}`` is
    10**6): what `regex` spends its compile time on, in C, holding the GIL."""
    worst = factor
    if isinstance(items, sre_parser.SubPattern):
        items = list(items)
    if not isinstance(items, list | tuple):
        return worst
    for item in items:
        # Opcodes are singletons: ``is`` never mistakes a plain number (a RANGE's bounds) for one.
        if isinstance(item, tuple) and len(item) == 2 and any(item[0] is op for op in _REPEAT_OPS):
            lo, hi, sub = item[1]
            n = lo if hi == sre_constants.MAXREPEAT else hi
            worst = max(worst, _repeat_weight(sub, factor * max(n, 1)))
        elif isinstance(item, sre_parser.SubPattern | list | tuple):
            worst = max(worst, _repeat_weight(item, factor))
        if worst > MAX_REPEAT_WEIGHT:
            break
    return worst


def _compile_pattern(pattern: str) -> regex.Pattern[str]:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(
            f"the pattern is {len(pattern)} characters long; at most {MAX_PATTERN_CHARS} are searched for"
        )
    try:
        # The stdlib parser first: the contract is `re` syntax, and it tells the size cheaply.
        parsed = sre_parser.parse(pattern)
        if _repeat_weight(parsed) > MAX_REPEAT_WEIGHT:
            raise ToolError(
                f"the pattern {quote(pattern)} nests repeat counts too large to search for "
                f"(more than {MAX_REPEAT_WEIGHT} in all); use smaller counts"
            )
        return regex.compile(pattern)
    except (re.error, regex.error, OverflowError, RecursionError, ValueError) as e:
        raise ToolError(f"invalid regular expression {quote(pattern)}: {e}") from None


def grep(
    ctx: ToolContext,
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    cancel: threading.Event | None = None,
) -> ToolResult:
    """``pattern`` in the file or below the folder ``path`` (the files ``glob`` keeps). Bounded by
    ``ctx.grep_timeout`` seconds of wall time; ``cancel`` stops it between lines (a line being
    searched ends at the deadline at the latest)."""
    global _running
    with _running_lock:
        _running += 1
    try:
        return _grep(ctx, pattern, path, (glob or "").strip() or None, cancel or threading.Event())
    except _Stop:
        return ToolResult(content="grep was cancelled", is_error=True)
    finally:
        with _running_lock:
            _running -= 1


@dataclass
class _Search:
    """One grep call: its pattern, its deadline, and what it found so far."""

    pattern: str
    rx: regex.Pattern[str]
    cancel: threading.Event
    limit: float  # seconds of wall time
    budget: int  # characters of output
    deadline: float = 0.0
    out: list[str] = field(default_factory=list)
    used: int = 0
    total: int = 0
    shown_all: bool = True
    too_big: list[str] = field(default_factory=list)

    def timed_out(self, where: str) -> ToolError:
        return ToolError(
            f"grep timed out after {self.limit:g} s searching for {redacted_quote(self.pattern)}{where}; "
            "the pattern may backtrack catastrophically: simplify it (avoid nested repeats like (a+)+), "
            "or narrow the path or glob"
        )

    def check(self, where: str = "") -> float:
        """Seconds left; raises when the call was cancelled or its time is up."""
        if self.cancel.is_set():
            raise _Stop
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.timed_out(where)
        return left

    def lines(self, display: str, text: str) -> None:
        shown = quote(display)
        for lineno, line in enumerate(text.split("\n"), 1):
            if line.endswith("\r"):
                line = line[:-1]
            if self.cancel.is_set():
                raise _Stop
            left = self.deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                m = self.rx.search(line, timeout=left, concurrent=True)
            except TimeoutError:
                raise self.timed_out(f" (in {shown}, line {lineno})") from None
            if m is None:
                continue
            self.total += 1
            if not self.shown_all:
                continue
            entry = f"{display}:{lineno}: {_grep_line(line, m)}"
            if len(self.out) >= MAX_GREP_MATCHES or (self.out and self.used + len(entry) + 1 > self.budget):
                self.shown_all = False
                continue
            self.out.append(entry)
            self.used += len(entry) + 1


def _grep(
    ctx: ToolContext, pattern: str, raw: str | None, glob: str | None, cancel: threading.Event
) -> ToolResult:
    limit = max(ctx.grep_timeout, 0.001)
    deadline = time.monotonic() + limit  # compiling the pattern counts too
    rx = _compile_pattern(pattern)
    search = _Search(pattern, rx, cancel, limit, max(ctx.max_output_chars - NOTE_RESERVE, 1), deadline)
    r = _folder(ctx, raw)
    single = not os.path.isdir(r.real)
    files, stopped = ([(r.display, r.real)], False) if single else _files_to_search(r, glob, search)
    for display, path in files:
        search.check(f" (before {quote(display)})")
        text = _read_searchable(display, path, single, search)
        if text is not None:
            search.lines(display, text)
    notes: list[str] = []
    if not search.shown_all:
        notes.append(
            f"[output truncated: showing {len(search.out)} of {search.total} matches; "
            "narrow the pattern, path or glob]"
        )
    if search.too_big:
        names = ", ".join(search.too_big[:5]) + (" …" if len(search.too_big) > 5 else "")
        notes.append(
            f"[not searched: {len(search.too_big)} file(s) over {format_bytes(MAX_FILE_BYTES)}: {names}]"
        )
    if stopped:
        notes.append(f"[search stopped after {MAX_WALK_ENTRIES} entries; narrow the path or glob]")
    if search.total == 0:
        where = "the workspace" if r.display == "." else quote(r.display)
        extra = f" (files matching {quote(glob)})" if glob and not single else ""
        return ToolResult(content="\n".join([f"[no matches for {quote(pattern)} in {where}{extra}]", *notes]))
    return ToolResult(content="\n".join(search.out + notes))


def _files_to_search(r: Resolved, glob: str | None, search: _Search) -> tuple[list[tuple[str, str]], bool]:
    """The regular files below folder ``r`` that ``glob`` keeps, sorted: (display path, path to
    open); and whether the walk stopped at its bound."""
    ws = r.workspace
    try:
        grx = compile_glob(glob) if glob else None
    except ValueError as e:
        raise ToolError(str(e)) from None
    by_name = glob is not None and "/" not in glob.strip("/")
    skip = SKIP_DIRS - named_skip_dirs(glob, SKIP_DIRS)
    walk = _Walk(r.real, ws, skip, float("inf"))
    files: list[tuple[str, str]] = []
    for rel, is_dir, entry in walk:
        if walk.visited % 256 == 0:
            search.check(" (while listing files)")
        if is_dir:
            continue
        if grx is not None and not grx.fullmatch(entry.name if by_name else rel):
            continue
        try:
            if not entry.is_file():  # FIFOs, devices and sockets are never opened
                continue
        except OSError:
            continue
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if not inside(target, ws) or not os.path.isfile(target):
                continue
        files.append((rel_display(entry.path, ws), entry.path))
    files.sort(key=lambda t: _sort_key(t[0]))
    return files, walk.stopped


def _read_searchable(display: str, path: str, single: bool, search: _Search) -> str | None:
    """A file's text, or None when it is skipped. The one file named by ``path`` is refused
    with a reason instead of skipped; a file of a folder over 10 MB is noted as not searched."""
    if single:
        _check_regular(path, display)
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
    except OSError as e:
        if single:
            raise ToolError(f"cannot open {quote(display)}: {_os_reason(e)}") from None
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            if single:
                raise ToolError(f"{quote(display)} is not a regular file; refused")
            return None
        if st.st_size > MAX_FILE_BYTES:
            if single:
                raise ToolError(
                    f"{quote(display)} is {format_bytes(st.st_size)}, over the "
                    f"{format_bytes(MAX_FILE_BYTES)} grep limit"
                )
            search.too_big.append(display)
            return None
        if _is_binary(fd):
            if single:
                raise ToolError(f"{quote(display)} is a binary file; not searched")
            return None
        return f.read().decode("utf-8", "replace")
