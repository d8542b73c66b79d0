"""``pseudoclaude memory consolidate [--level L] [--yes]``: one consolidation job
now, through the memory model, like ``flush``.

Loaded with the other ``memory`` commands' parsers: the job manager and the SDK load when the
command runs, never here.
"""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.cli.memory.common import EXIT_ERROR, EXIT_OK, err, memory_completion, report
from memory.constants import Action, Level, MemoryMode
from memory.text.names import sanitize_line

if TYPE_CHECKING:
    from memory.jobs.manager import Manager
    from memory.model import Operation
    from memory.store.stores import MemoryStores

MAX_TIMEOUT = 86_400.0


def _timeout(v: str) -> float:
    try:
        t = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {v!r}") from None
    if not math.isfinite(t) or t <= 0 or t > MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"seconds must be more than 0 and at most {MAX_TIMEOUT:g}, not {v!r}"
        )
    return t


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd(
        "consolidate",
        "ask the memory model to merge likely duplicates and fix contradictions in a store; "
        "its operations are held for review (`memory approve`) unless --yes",
    )
    p.add_argument("--level", choices=[lv.value for lv in Level])
    p.add_argument("--yes", action="store_true", help="apply the proposed operations at once")
    p.add_argument(
        "--timeout",
        type=_timeout,
        default=120.0,
        metavar="S",
        help="give up waiting for the memory model after S seconds (default 120); the job stays spooled",
    )


def consolidate(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The job manager and the provider's module load only when a consolidation runs.
    from app.agent.memory_bridge.manager import build_manager
    from app.agent.model.provider import NO_CREDENTIALS, has_credentials

    completion, code = memory_completion()
    if completion is None:
        return code
    if not has_credentials():
        # Said before any job is made: a job that could only fail would stay spooled.
        err(NO_CREDENTIALS)
        return EXIT_ERROR

    async def run() -> int:
        # consolidate_review: the manager's own default (held for review), whatever the settings say.
        manager = build_manager(stores, completion, mode=MemoryMode.AUTO)
        try:
            await manager.start()
            return await _consolidate(manager, args)
        finally:
            await manager.close(0)
            await completion.aclose()  # on this loop, not when collected after it ended

    return asyncio.run(run())


async def _consolidate(manager: Manager, args: argparse.Namespace) -> int:
    outcomes = await manager.consolidate(args.level)
    code = EXIT_OK
    for o in outcomes:
        if o.job_id is None:
            print(o.reason)
            continue
        done = await manager.wait_for(o.job_id, args.timeout)
        if done.status == "held":
            code = max(code, await _held(manager, o.job_id, args.yes))
        elif done.status == "done":
            print(f"job {o.job_id}: the memory model proposed no change to the {o.level.value} store")
        elif done.status == "failed":
            err(f"consolidation job {o.job_id} failed: {done.reason or 'failed'}")
            code = EXIT_ERROR
        else:
            err(
                f"consolidation job {o.job_id} unfinished after {args.timeout:g}s; it stays spooled "
                "(`memory flush` runs it)"
            )
            code = EXIT_ERROR
    return code


async def _held(manager: Manager, job_id: str, yes: bool) -> int:
    job = await asyncio.to_thread(manager.spool.peek, job_id)
    print(f"job {job.id}: {job.excerpt()}")
    for h in job.held_ops:
        print(await asyncio.to_thread(_op_line, manager, h.index, h.op))
    for r in job.rejected:
        err(r.reason if r.reason.startswith("op ") else f"op {r.index}: {r.reason}")
    if not yes:
        print(
            f"held for review: `pseudoclaude memory approve {job.id}` applies them (give op numbers to "
            f"choose), `pseudoclaude memory reject {job.id}` drops them"
        )
        return EXIT_OK
    return report(await manager.approve(job.id))


def _op_line(manager: Manager, index: int, op: Operation) -> str:
    """``0 update project/x.md — <title>``, ``1 delete project/y.md``."""
    where = f"{op.level.value if op.level else '?'}/{op.filename or op.slug or '(new)'}"
    line = f"{index} {op.action.value} {where}"
    if op.action is Action.DELETE:
        return line
    title = op.title
    if not title and op.level is not None and op.filename:
        try:
            title = manager.stores.read_note(op.level, op.filename).meta.title
        except Exception:
            title = ""
    return f"{line} \u2014 {sanitize_line(title, 100)}" if title else line
