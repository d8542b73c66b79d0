"""``pseudoclaude memory worker``: one workspace's memory jobs, run in a process of their own.

The full-screen app starts this child after its first frame
(app/agent/memory_bridge/worker_process.py) so that an extraction's parsing and a 50-op apply on
10,000 cards never share the screen's interpreter. It is elected by the same worker lock as every
other worker: when another process already runs this workspace's jobs it exits at once with
``EXIT_BUSY``. It talks to the app in the lines of app/agent/memory_bridge/worker_wire.py: commands
on stdin (``wake``, ``mode``); on stdout a ``usage`` line per memory-model request, a ``wrote``
line per store file a commit writes (before the file is moved into place) and an ``outcome`` line
per outcome of a job it ran (after its commit: the app announces the job, and the cards it wrote,
from this line). At the end of input (the app quit, or died: the pipe closes either way) or on
SIGTERM/SIGHUP it drains the runnable jobs for at most ``--drain`` seconds, then exits by itself.
What it cuts off stays spooled.

Imported by app/cli/main.py's parser on every start: the manager and the SDK load when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.agent.memory_bridge.worker_wire import OutcomeMsg, UsageMsg, WroteMsg
    from app.agent.model.provider import Usage
    from memory.events import MemoryEvent
    from memory.jobs.manager import Manager
    from memory.store.stores import MemoryStores

from memory.constants import WORKER_EXIT_BUSY as EXIT_BUSY

EXIT_OK, EXIT_USAGE = 0, 2
DEFAULT_DRAIN_S = 15.0
NICENESS = 10
WORKER_MODES = ("auto", "review", "off")

log = logging.getLogger(__name__)


def _drain(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {v!r}") from None
    if not 0 <= x <= 3600:  # also false for nan
        raise argparse.ArgumentTypeError(f"must be 0 to 3600 seconds, not {v!r}")
    return x


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd("worker", "run this workspace's memory jobs in this process until stdin ends (the app starts it)")
    p.add_argument("--memory-model", dest="worker_memory_model", metavar="M", help="the memory model")
    p.add_argument(
        "--memory", dest="worker_mode", choices=WORKER_MODES, help="memory mode (default: the settings')"
    )
    p.add_argument(
        "--drain",
        type=_drain,
        default=DEFAULT_DRAIN_S,
        metavar="S",
        help=f"at the end of stdin, run what is queued for at most S seconds (default {DEFAULT_DRAIN_S:g})",
    )


def worker(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The parser imports this module for `memory --help`: the settings (pydantic), the manager,
    # the stores and the SDK load only when the worker runs.
    from app.agent.config.settings import SettingsError, load_settings

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s memory worker %(process)d: %(message)s")
    # Background work: on a busy machine the screen and the keyboard of the app come first (the
    # SDK's import and an apply on 10,000 cards are seconds of CPU).
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    flags: dict[str, object] = {}
    if args.worker_memory_model:
        flags["memory_model"] = args.worker_memory_model
    if args.worker_mode:
        flags["memory_mode"] = args.worker_mode
    try:
        settings = load_settings(flags)
    except SettingsError as e:
        print(f"pseudoclaude: {e}", file=sys.stderr)
        return EXIT_USAGE
    # Only when the worker runs (not for `memory --help`): the manager, the stores, the SDK's face.
    from app.agent.memory_bridge.manager import build_manager, memory_completion

    completion = memory_completion(settings, on_usage=_report_usage)
    manager = build_manager(stores, completion, settings)
    # The stores' modules: only when the worker runs, not for `memory --help`.
    from memory.store.journal import OWN_WRITES

    OWN_WRITES.listeners.append(_report_write)
    manager.on_outcome = _report_outcome
    try:
        return asyncio.run(_serve(manager, args.drain, completion.aclose))
    except KeyboardInterrupt:  # never the app's: the child runs in a session of its own
        return EXIT_OK


async def _serve(manager: Manager, drain: float, aclose: Callable[[], object]) -> int:
    if not await asyncio.to_thread(manager.worker.try_elect):
        print("pseudoclaude: another process runs this workspace's memory jobs", file=sys.stderr)
        return EXIT_BUSY
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    _read_commands(manager, loop, stop)
    try:
        # The SDK (seconds of CPU) loads at the first request, not at start: a child that
        # replaces a dead one mostly re-applies a kept answer, and needs none.
        await manager.start()
        await stop.wait()
    finally:
        await manager.close(drain)
        with contextlib.suppress(Exception):
            await aclose()  # type: ignore[misc]
    return EXIT_OK


_OUT = threading.Lock()  # one line at a time: the loop, the transaction's thread and the SDK's all report


def _say(report: Callable[[], UsageMsg | WroteMsg | OutcomeMsg | None]) -> None:
    """``report()``'s message as one line of the wire on stdout. A report never fails the request
    or the commit that makes it: one that cannot be written, or is too long for the app to read,
    is said in the log (for an outcome, the app's look at the spool announces that job instead)."""
    # Not at the top: the parser imports this module for `memory --help`; the wire brings pydantic.
    from app.agent.memory_bridge.worker_wire import encode, fits

    try:
        msg = report()
        line = "" if msg is None else encode(msg)
    except ValueError as e:  # pydantic's ValidationError too
        log.warning("a report could not be written: %.200s", " ".join(str(e).split()))
        return
    if msg is None:
        return
    if not fits(line):
        log.warning("a %s line of %d characters is too long to report", msg.kind, len(line))
        return
    with _OUT, contextlib.suppress(OSError, ValueError):  # the app is gone: nobody reads
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _report_usage(model: str, usage: Usage) -> None:
    """Each memory-model request: the app counts it in the session's cost."""
    # Not at the top: the wire's pydantic models load when the worker runs, not for `memory --help`.
    from app.agent.memory_bridge.worker_wire import UsageMsg

    _say(lambda: UsageMsg.of(model, usage))


def _report_write(path: str, digest: str | None) -> None:
    """Each store file a commit writes, before it is moved into place: the app's store watcher
    then knows it for its own worker's change, not someone else's."""
    # Not at the top: the wire's pydantic models load when the worker runs, not for `memory --help`.
    from app.agent.memory_bridge.worker_wire import WroteMsg

    _say(lambda: WroteMsg.of(path, digest))


def _report_outcome(event: MemoryEvent) -> None:
    """Each outcome of a job this child ran, after its commit: the app announces it, and the
    cards it wrote, from this line."""
    # Not at the top: the wire's pydantic models load when the worker runs, not for `memory --help`.
    from app.agent.memory_bridge.worker_wire import outcome_msg

    _say(lambda: outcome_msg(event))


def _read_commands(manager: Manager, loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Stdin's lines, in a daemon thread: each applied on the loop; its end stops the worker."""
    # Not at the top: the wire's pydantic models load when the worker runs, not for `memory --help`.
    from app.agent.memory_bridge.worker_wire import MAX_COMMAND_BYTES, ModeMsg, WakeMsg, decode

    def command(raw: bytes) -> None:
        msg = decode(raw)
        if isinstance(msg, WakeMsg):
            manager.signal(wake=True)
        elif isinstance(msg, ModeMsg):
            manager.set_mode(msg.mode)
        elif msg is not None:
            log.warning("a %s line on stdin ignored: not a command", msg.kind)

    def read() -> None:
        # os.read on the descriptor, not sys.stdin: a daemon thread blocked inside a buffered
        # reader aborts the interpreter at its exit (the buffer's lock).
        pending = b""
        try:
            while chunk := os.read(0, 4096):
                *lines, pending = (pending + chunk).split(b"\n")
                pending = pending[-MAX_COMMAND_BYTES:]
                for raw in lines:
                    loop.call_soon_threadsafe(command, raw[:MAX_COMMAND_BYTES])
        except OSError:
            pass  # no stdin (closed, or not readable): the same as its end
        with contextlib.suppress(RuntimeError):  # the loop is gone: the process ends anyway
            loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=read, name="memory-worker-stdin", daemon=True).start()


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {"worker": worker}
