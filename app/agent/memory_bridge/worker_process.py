"""The app's memory worker as a child process (``pseudoclaude memory worker``).

The app spools each turn and watches the spool and the stores; the jobs run in a child process,
so an extraction's parsing and an apply on a big store never take the screen's interpreter.
``WorkerProcess`` keeps one such child alive while nobody else runs this workspace's jobs:

- every ``poll`` seconds it checks its child. With none, and nobody holding the workspace's
  worker lock (another window's child, a print-mode run), it starts one: two windows on one
  workspace share one worker, elected by the lock. A child that finds the lock taken exits with
  ``EXIT_BUSY`` and is not missed.
- a child that dies (a crash, SIGKILL, the OOM killer) is said in one line and replaced; the spool
  and the journal make sure its job is finished exactly once by the next one. A child that keeps
  dying is restarted at most ``MAX_RESTARTS`` times a minute, then left stopped for a minute.
- ``wake()`` (a job was spooled) and ``set_mode()`` are lines on the child's stdin; ``stop()``
  closes it: the child drains its runnable jobs for a few seconds and exits by itself. The pipe
  also closes when the app dies, so no child outlives its app for longer than its drain.
- the child's stdout is read line by line, in the lines of
  app/agent/memory_bridge/worker_wire.py: ``usage`` (a memory-model request's cost), ``wrote`` (a
  store file its commit is about to move into place: recorded as the app's own write, so the store
  watcher never reports it) and ``outcome`` (a job applied, failed, held or retrying: announced to
  the app's manager exactly as its own worker's, once). The outcome line is how the child's writes
  reach the app; a line that is not one of these is ignored and logged.

The child runs in a session of its own (the terminal's Ctrl+C and hang-up are the app's), with
stdout read by the app and stderr appended to ``$PSEUDOCLAUDE_HOME/logs/memory-worker.log``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO

from app.agent.memory_bridge.worker_wire import (
    MAX_LINE_BYTES,
    ModeMsg,
    OutcomeMsg,
    UsageMsg,
    WakeMsg,
    WroteMsg,
    decode,
    encode,
)
from app.agent.model.provider import Usage
from memory.constants import WORKER_EXIT_BUSY as EXIT_BUSY
from memory.constants import MemoryMode
from memory.jobs.manager import Manager

log = logging.getLogger(__name__)

POLL_S = 0.5
MAX_RESTARTS = 5  # deaths within RESTART_WINDOW_S before the restarts pause for that long
RESTART_WINDOW_S = 60.0
LOG_MAX_BYTES = 1 << 20  # the log is started afresh past this size


def worker_argv(workspace: Path, memory_model: str, mode: MemoryMode, drain: float) -> list[str]:
    # -P: never import from the current folder (it may be a cloned repository); the package comes
    # from the same interpreter's site-packages (or PYTHONPATH, as for the app itself).
    return [
        sys.executable,
        "-P",
        "-m",
        "app.cli.main",
        "memory",
        "worker",
        "-C",
        str(workspace),
        "--memory-model",
        memory_model,
        "--memory",
        str(mode),
        "--drain",
        f"{drain:g}",
    ]


def describe_exit(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit status {code}"


def read_lines(out: IO[bytes], limit: int) -> Iterator[bytes]:
    """The lines of ``out`` until its end; a line longer than ``limit`` comes as its first
    ``limit`` bytes (no newline), its rest is read and dropped a limit's worth at a time."""
    while raw := out.readline(limit):
        yield raw
        while not raw.endswith(b"\n") and len(raw) == limit:
            raw = out.readline(limit)  # the rest of a long line: dropped


class WorkerProcess:
    """Keeps this workspace's memory worker child running (see the module's doc)."""

    def __init__(
        self,
        manager: Manager,
        argv: Callable[[MemoryMode], list[str]],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        on_note: Callable[[str], None] | None = None,
        on_usage: Callable[[str, Usage], None] | None = None,
        poll: float = POLL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.manager = manager
        self._argv = argv
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self.on_note = on_note
        self.on_usage = on_usage
        self._poll = poll
        self._clock = clock
        self.proc: subprocess.Popen[bytes] | None = None
        # The child's store writes (its ``wrote`` lines) join what the manager's events announce:
        # the app's store watcher never takes them for someone else's change.
        self.writes = manager.announced_writes
        self.started = 0  # children started (tests and the benchmarks read it)
        self.deaths: list[str] = []  # one line per child that died, as said
        self._death_times: list[float] = []
        self._paused_until = 0.0
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start supervising (on the running loop); the first child starts at once."""
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.create_task(self._supervise(), name="memory-worker-process")

    async def stop(self, timeout: float = 0.0) -> None:
        """Close the child's stdin (it drains and exits by itself) and wait for it at most ``timeout``."""
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        proc = self.proc
        if proc is None:
            return
        self._close_stdin(proc)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        while proc.poll() is None and loop.time() < deadline:
            await asyncio.sleep(0.05)

    # -- commands to the child -------------------------------------------------------------------

    def wake(self) -> None:
        """A job was spooled: the child looks at the spool now rather than at its next poll."""
        self._send(WakeMsg())
        if self._wake is not None:
            self._wake.set()  # and a dead child is noticed now

    def set_mode(self, mode: MemoryMode) -> None:
        self._send(ModeMsg(mode=mode))
        if self._wake is not None:
            self._wake.set()

    def _send(self, msg: WakeMsg | ModeMsg) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            return
        # Never blocks (the descriptor is non-blocking): a stopped child that fills the pipe
        # loses a wake-up, never the app's loop.
        with contextlib.suppress(OSError, ValueError):
            os.write(proc.stdin.fileno(), (encode(msg) + "\n").encode())

    @staticmethod
    def _close_stdin(proc: subprocess.Popen[bytes]) -> None:
        if proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()

    # -- the supervisor's loop -------------------------------------------------------------------

    async def _supervise(self) -> None:
        while not self._stopping:
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("memory worker process: supervising failed")
            assert self._wake is not None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll)

    async def check(self) -> None:
        """One look: a child that ended is accounted for; with none, and nobody else working,
        one is started."""
        proc = self.proc
        if proc is not None:
            code = proc.poll()
            if code is None:
                return
            self.proc = None
            self._close_stdin(proc)
            if code not in (0, EXIT_BUSY) and not self._stopping:
                self._died(describe_exit(code))
        if self._stopping or self.manager.mode == MemoryMode.OFF or self.manager.completion is None:
            return
        if self._clock() < self._paused_until:
            return
        if await asyncio.to_thread(self.manager.worker.someone_works):
            return
        await asyncio.to_thread(self._spawn)

    def _died(self, how: str) -> None:
        now = self._clock()
        self._death_times = [t for t in self._death_times if now - t < RESTART_WINDOW_S] + [now]
        if len(self._death_times) >= MAX_RESTARTS:
            self._paused_until = now + RESTART_WINDOW_S
            self._death_times = []
            line = (
                f"memory worker stopped ({how}) {MAX_RESTARTS} times in a minute; memory jobs stay "
                f"spooled, trying again in a minute (its log: {self.log_path})"
            )
        else:
            line = f"memory worker stopped ({how}); started another (no memory job is lost)"
        self.deaths.append(line)
        log.warning("%s", line)
        if self.on_note is not None:
            self.on_note(line)

    def _spawn(self) -> None:
        """Start a child (blocking: call in a thread)."""
        err = self._open_log()
        try:
            proc = subprocess.Popen(
                self._argv(self.manager.mode),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err if err is not None else subprocess.DEVNULL,
                env=self._env,
                cwd=str(self.log_path.parent),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            self._died(f"could not start: {e.strerror or e}")
            return
        finally:
            if err is not None:
                os.close(err)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
        self.proc = proc
        self.started += 1
        if proc.stdout is not None:
            threading.Thread(
                target=self._read_reports, args=(proc.stdout,), name="memory-worker-reports", daemon=True
            ).start()

    def _read_reports(self, out: IO[bytes]) -> None:
        """The child's stdout, in a daemon thread, until it closes (see the module's doc)."""
        with contextlib.suppress(OSError, ValueError):
            for raw in read_lines(out, MAX_LINE_BYTES):
                try:
                    self._report(raw)
                except Exception:
                    log.exception("memory worker process: a line of the child's failed")
        with contextlib.suppress(OSError):
            out.close()

    def _report(self, raw: bytes) -> None:
        msg = decode(raw)  # None: a blank line, or one the wire refused (and said in the log)
        if isinstance(msg, WroteMsg):
            # Only the watcher's: the batch reaches the app as its outcome line, after its commit.
            self.writes.record(msg.file, msg.sha)
        elif isinstance(msg, OutcomeMsg):
            self.manager.announce(msg.event)
        elif isinstance(msg, UsageMsg):
            if self.on_usage is not None:
                self.on_usage(msg.model, msg.usage())
        elif msg is not None:
            log.warning("memory worker process: a %s line of the child's ignored: not a report", msg.kind)

    def _open_log(self) -> int | None:
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
            with contextlib.suppress(OSError):
                if self.log_path.stat().st_size > LOG_MAX_BYTES:
                    flags |= os.O_TRUNC
            return os.open(self.log_path, flags, 0o600)
        except OSError:
            return None


__all__ = ["EXIT_BUSY", "WorkerProcess", "describe_exit", "read_lines", "worker_argv"]
