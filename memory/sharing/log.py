"""The history of a store's cards (``memory log``): this workspace's batches from the
app's own history, and the git commits that touched the store, merged newest first.

Commit subjects and author names come from whoever wrote the repository (a clone is hostile):
each is read from NUL-separated fields (a subject cannot forge a record) and sanitized to one
plain line. Git missing, or a store not in a repository, gives the app's batches only.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory.constants import Level
from memory.model import HistoryEntry, rfc3339
from memory.sharing.git import GitError, git, repo_root
from memory.store.stores import MemoryStores
from memory.text.names import sanitize_line

__all__ = [
    "LogEntry",
    "batch_entries",
    "format_entry",
    "format_log",
    "git_entries",
    "last_author",
    "parse_git_log",
    "store_log",
]

MAX_SUBJECT = 200
MAX_NAME = 100
MAX_DETAIL = 300
GIT_LOG_TIMEOUT = 30.0
_HASH = re.compile(r"[0-9a-f]{4,64}")
_FIELDS = 4  # short id, author time, author name, subject


class LogEntry(BaseModel):
    """One block of ``memory log``: a header line and its detail lines (all plain text)."""

    model_config = ConfigDict(frozen=True)

    time: str  # RFC 3339, UTC
    kind: Literal["batch", "undo", "commit"]
    ref: str  # a batch's transaction id, or a commit's short id
    head: str  # a batch's label, or a commit's subject
    who: str = ""  # a batch's source, or a commit's author
    level: Level | None = None  # the store a commit is in (None for a batch)
    lines: tuple[str, ...] = ()


def store_log(
    stores: MemoryStores,
    level: Level | None = None,
    filename: str | None = None,
    *,
    limit: int | None = None,
    timeout: float = GIT_LOG_TIMEOUT,
) -> tuple[list[LogEntry], list[str]]:
    """Entries newest first (at most ``limit``), and one line per git log that could not be read."""
    problems: list[str] = []
    entries = batch_entries(stores.history(), level, filename)
    for lv in (Level.PROJECT, Level.USER):
        if level is not None and lv is not level:
            continue
        found, problem = git_entries(stores, lv, filename, limit=limit, timeout=timeout)
        entries += found
        if problem:
            problems.append(problem)
    # Oldest first with ties in reading order, then reversed: newest first, stable.
    ordered = sorted(enumerate(entries), key=lambda p: (p[1].time, p[0]))
    out = [e for _, e in reversed(ordered)]
    return (out[:limit] if limit is not None else out), problems


# -- the app's batches ----------------------------------------------------------------------------


def _touches(entry: HistoryEntry, level: Level | None, filename: str | None) -> bool:
    if level is None and filename is None:
        return True
    places = [(a.level, a.filename) for a in entry.applied]
    places += [(c.level, c.filename) for c in entry.changes]
    places += [(c.level, c.filename) for c in entry.conflicts]
    for r in entry.rejected:
        op = r.op or {}
        places.append((op.get("level"), op.get("filename")))  # type: ignore[arg-type]
    return any(
        (level is None or str(lv) == level.value) and (filename is None or name == filename)
        for lv, name in places
    )


def _line(text: object, limit: int = MAX_DETAIL) -> str:
    return sanitize_line(str(text), limit)


def _details(entry: HistoryEntry) -> list[str]:
    lines = [f"job {_line(j, 80)}" for j in entry.jobs]
    for a in entry.applied:
        title = f"  {_line(a.title)}" if a.title else ""
        lines.append(f"{a.action} {a.level}/{_line(a.filename, 120)}{title}")
    for r in entry.rejected:
        reason = _line(r.reason)
        lines.append(f"rejected: {reason if reason.startswith('op ') else f'op {r.index}: {reason}'}")
    for c in entry.conflicts:
        lines.append(f"conflict: op {c.index}: {c.level}/{_line(c.filename, 120)}: {_line(c.reason)}")
    for d in entry.dropped_cites:
        lines.append(f"dropped citation: op {d.index}: {_line(d.cite, 120)}: {_line(d.reason)}")
    if entry.undone_by:
        lines.append(f"undone by {_line(entry.undone_by, 80)}")
    return lines


def batch_entries(
    history: Iterable[HistoryEntry], level: Level | None, filename: str | None
) -> list[LogEntry]:
    """This workspace's batches (oldest first) that touched ``level``/``filename`` (None: any)."""
    out: list[LogEntry] = []
    for e in history:
        if not _touches(e, level, filename):
            continue
        out.append(
            LogEntry(
                time=e.time,
                kind="undo" if e.kind == "undo" else "batch",  # the log's two kinds of a batch
                ref=_line(e.txid, 80),
                head=_line(e.label or ("undo" if e.kind == "undo" else "batch")),
                who=_line(e.source, 80),
                lines=tuple(_details(e)),
            )
        )
    return out


# -- git ------------------------------------------------------------------------------------------


def _git_place(stores: MemoryStores, level: Level) -> tuple[Path, Path] | None:
    """(repository top level, store folder) of a store in git, or None."""
    if level is Level.PROJECT:
        if not stores.has_project_level:
            return None
        root = repo_root(Path(stores.paths.workspace))
    else:
        # Only a user store that is its own repository (``memory sync``): never a home in git.
        if not (stores.user.dir / ".git").is_dir():
            return None
        root = repo_root(stores.user.dir)
    if root is None:
        return None
    store = Path(os.path.realpath(stores.store(level).dir))
    root = Path(os.path.realpath(root))
    if store != root and root not in store.parents:
        return None
    return root, store


def git_entries(
    stores: MemoryStores,
    level: Level,
    filename: str | None = None,
    *,
    limit: int | None = None,
    timeout: float = GIT_LOG_TIMEOUT,
) -> tuple[list[LogEntry], str | None]:
    """The commits (oldest first) that touched a store in git, or one of its cards; and why
    they could not be read (None when read, or when there is no repository to read)."""
    place = _git_place(stores, level)
    if place is None:
        return [], None
    root, store = place
    target = store / filename if filename else store
    spec = target.relative_to(root).as_posix() or "."
    args = ["log", "--no-color", "--no-show-signature", "--format=%h%x00%at%x00%an%x00%s%x00"]
    if limit is not None:
        args.append(f"-n{limit}")
    try:
        # Literal: a card's name is never a glob.
        res = git(root, *args, "--", spec, check=False, timeout=timeout, env={"GIT_LITERAL_PATHSPECS": "1"})
    except GitError as e:
        return [], f"git log of the {level} store not read: {e}"
    if not res.ok:
        if "does not have any commits" in res.err:
            return [], None
        return [], f"git log of the {level} store not read: {res.reason()}"
    entries = parse_git_log(res.out, level)
    if entries is None:
        return [], f"git log of the {level} store not read: unexpected output"
    return entries, None


def parse_git_log(out: str, level: Level) -> list[LogEntry] | None:
    """The entries of ``git log --format=%h%x00%at%x00%an%x00%s%x00`` output (given newest first),
    oldest first; None when a record is not of that shape."""
    fields = out.split("\x00")
    if fields and not fields[-1].strip():
        fields.pop()
    if len(fields) % _FIELDS:
        return None
    out_entries: list[LogEntry] = []
    for i in range(0, len(fields), _FIELDS):
        short, at, name, subject = fields[i : i + _FIELDS]
        short = short.strip()
        if not _HASH.fullmatch(short) or not at.isdigit():
            return None
        try:
            when = rfc3339(_dt.datetime.fromtimestamp(int(at), _dt.UTC))
        except (OverflowError, ValueError, OSError):
            return None
        out_entries.append(
            LogEntry(
                time=when,
                kind="commit",
                ref=short,
                head=sanitize_line(subject, MAX_SUBJECT),
                who=sanitize_line(name, MAX_NAME) or "someone",
                level=level,
            )
        )
    out_entries.reverse()
    return out_entries


def last_author(stores: MemoryStores, level: Level, filename: str, *, timeout: float = 10.0) -> str:
    """The author name of the last commit that touched a card of a store in git, or ""."""
    found, _ = git_entries(stores, level, filename, limit=1, timeout=timeout)
    return found[-1].who if found else ""


# -- output ---------------------------------------------------------------------------------------


def format_entry(entry: LogEntry) -> str:
    """One block: a header line and its details indented (no trailing newline)."""
    if entry.kind == "commit":
        head = f"{entry.time}  {entry.level} store commit {entry.ref} by {entry.who}: {entry.head}"
    else:
        source = f" ({entry.who})" if entry.who else ""
        head = f"{entry.time}  {entry.kind} {entry.ref}{source}: {entry.head}"
    return "\n".join([head, *(f"    {line}" for line in entry.lines)])


def format_log(entries: Sequence[LogEntry]) -> str:
    return "\n".join(format_entry(e) for e in entries)
