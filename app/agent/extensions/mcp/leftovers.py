"""What a stdio server started, found so it is stopped with the server.

The server runs in a process group of its own, and signalling the group stops what stayed in it.
What left it with ``setsid`` (a daemon, a language server started "in the background") is not in
the group: it is found in ``/proc`` (Linux), as

- a descendant of the server (each process's parent, walked down from the server's PID), looked
  for while the server still runs, since an orphan's parent becomes init;
- a process whose environment holds the server's tag (``PSEUDOCLAUDE_MCP_TAG``, a random value
  given to each start of a server and inherited by everything it starts): found also when its
  parent already exited (a double fork), so no longer anyone's descendant.

A process is known by its PID and its start time, so a PID the system gave to another process
since is never signalled. What could not be stopped (another user's, one that cleared its
environment and left) is said by its PID. Without ``/proc`` nothing is found: the group only.
"""

from __future__ import annotations

import os
import secrets
import signal
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import anyio

__all__ = ["TAG_VAR", "Proc", "alive", "new_tag", "proc", "started_by", "stop"]

TAG_VAR = "PSEUDOCLAUDE_MCP_TAG"
_PROC = Path("/proc")
_POLL_S = 0.02


@dataclass(frozen=True)
class Proc:
    """A process as found: its PID, its start time (clock ticks after boot) and its name."""

    pid: int
    start: int
    name: str


def new_tag() -> str:
    return secrets.token_hex(8)


def _stat(pid: int) -> tuple[int, int, str, str] | None:
    """(parent PID, start time, name, state) of ``pid``; None when it is gone or unreadable."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    head, _, rest = raw.rpartition(b")")  # the name may hold spaces and parentheses
    fields = rest.split()
    try:
        return (
            int(fields[1]),
            int(fields[19]),
            head.partition(b"(")[2].decode("utf-8", "replace"),
            fields[0].decode(),
        )
    except (IndexError, ValueError):
        return None


def proc(pid: int) -> Proc | None:
    """``pid`` as a :class:`Proc` while it runs; None once it is gone."""
    st = _stat(pid)
    return Proc(pid, st[1], st[2]) if st is not None and st[3] not in "ZX" else None


def _tagged(pid: int, entry: bytes) -> bool:
    try:
        return entry in (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:  # gone, or another user's
        return False


def started_by(root: int | None, tag: str) -> set[Proc]:
    """The live processes ``root`` started (not ``root`` itself): its descendants now (none for
    ``None``: a server already reaped, whose PID may be another process's by now), and every
    process that carries ``tag``. Blocking (reads ``/proc``; milliseconds)."""
    try:
        pids = [int(name) for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return set()
    table = {pid: st for pid in pids if (st := _stat(pid)) is not None}
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(children.get(root, ())) if root is not None and root > 1 else []
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    if tag:
        entry = f"{TAG_VAR}={tag}".encode()
        found.update(pid for pid in table if pid not in found and _tagged(pid, entry))
    found -= {root, os.getpid()}  # the server itself (tagged too) is stopped as its group's leader
    return {Proc(pid, table[pid][1], table[pid][2]) for pid in found if table[pid][3] not in "ZX"}


def alive(proc: Proc) -> bool:
    """Whether ``proc`` still runs (the same process: a reused PID is another one)."""
    st = _stat(proc.pid)
    return st is not None and st[1] == proc.start and st[3] not in "ZX"


def _signal(procs: set[Proc], sig: signal.Signals) -> None:
    for p in procs:
        if alive(p):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(p.pid, sig)


async def _wait_gone(procs: set[Proc], timeout: float) -> set[Proc]:
    left = {p for p in procs if alive(p)}
    with anyio.move_on_after(timeout):
        while left:
            await anyio.sleep(_POLL_S)
            left = {p for p in left if alive(p)}
    return left


async def stop(procs: set[Proc], grace: float) -> list[Proc]:
    """SIGTERM each of ``procs``, SIGKILL those still running after ``grace`` seconds; returns
    those that are still there after that (sorted by PID)."""
    if not procs:
        return []
    _signal(procs, signal.SIGTERM)
    left = await _wait_gone(procs, grace)
    _signal(left, signal.SIGKILL)
    return sorted(await _wait_gone(left, grace), key=lambda p: p.pid)
