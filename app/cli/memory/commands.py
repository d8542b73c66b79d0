"""``pseudoclaude memory ...``: the memory commands.

This module and the command modules it imports are loaded whenever the command line names
``memory`` (app/cli/main.py), ``--help`` and a usage error included: what a command reads (the
stores with pydantic and YAML, the spool, the job manager, the SDK) is imported when that command
runs, never here. A command that only reads the cards never loads the job manager or the SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from app.cli.memory import consolidate as consolidation
from app.cli.memory import grounding as grounding
from app.cli.memory import importing as importing
from app.cli.memory import log as history_log
from app.cli.memory import search as scale
from app.cli.memory import serve_mcp as mcp_server
from app.cli.memory import sync as user_sync
from app.cli.memory import worker as child_worker
from app.cli.memory.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    err,
    memory_completion,
    report,
)
from app.cli.output import closed_pipe, silence
from memory.constants import INDEX_FILE, MANUAL_SOURCE, Level, MemoryMode
from memory.store.paths import resolve_workspace
from memory.text.names import quote
from memory.text.terminal import strip_terminal

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

# Reading a patch from a file or stdin: far more than 50 ops of 16 KiB, far less than a hang.
MAX_APPLY_INPUT = 4 * 1024 * 1024


def add_commands(mem: argparse.ArgumentParser, common: Callable[[argparse.ArgumentParser], None]) -> None:
    sub = mem.add_subparsers(dest="memory_command", required=True)

    def cmd(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        common(p)
        return p

    cmd("index", "print the merged index exactly as a new session's system prompt gets it")
    grounding.add_list_options(
        cmd(
            "list",
            "list the notes of both stores (a stale card says why); --stale and --unused DAYS filter them",
        )
    )
    p = cmd("show", "print one note")
    p.add_argument("level", choices=[lv.value for lv in Level])
    p.add_argument("file")
    p = cmd("apply", "apply a model-style response (JSON operations) as a person's edit")
    p.add_argument("file", help="file with the operations, or - for stdin")
    p = cmd("pending", "list this workspace's spooled memory jobs")
    p.add_argument("--all", action="store_true", help="every workspace's jobs, orphans included")
    for name, what in (
        ("approve", "apply held operations of a review-mode job"),
        ("reject", "drop held operations of a review-mode job"),
    ):
        p = cmd(name, what)
        p.add_argument("job", type=_job_ref, help="job id (or an unambiguous part of it)")
        p.add_argument(
            "ops", nargs="*", type=_op_number, metavar="OP", help="operation numbers (default: all)"
        )
    p = cmd("flush", "run spooled memory jobs now, failed ones included (calls the memory model)")
    p.add_argument(
        "--timeout", type=_timeout, default=120.0, metavar="S", help="give up after S seconds (default 120)"
    )
    p.add_argument("--all", action="store_true", help="every workspace's jobs (orphans are never run)")
    cmd("undo", "revert the last applied batch of this workspace")
    grounding.add_confirm_command(
        cmd(
            "confirm",
            "say a card still holds: its citations' content ids are taken again from the workspace "
            "(a renamed file followed, a deleted one dropped); `memory undo` reverts it",
        )
    )
    scale.add_commands(cmd)
    consolidation.add_command(cmd)
    history_log.add_command(cmd)
    user_sync.add_command(cmd)
    child_worker.add_command(cmd)
    mcp_server.add_command(cmd)
    importing.add_command(cmd)
    p = cmd("doctor", "check the stores and the index")
    p.add_argument("--fix", action="store_true", help="repair what can be repaired safely")


# -- argument checks (argparse turns ArgumentTypeError into a one-line usage error, exit 2) -----

MAX_FLUSH_TIMEOUT = 86_400.0  # a day: more is a typo, and huge values overflow timers


def _timeout(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {quote(v)}") from None
    if not 0 < x <= MAX_FLUSH_TIMEOUT:  # also false for nan
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {MAX_FLUSH_TIMEOUT:g} seconds, not {quote(v)}"
        )
    return x


def _job_ref(v: str) -> str:
    # An empty part would match every job ("approve ''" must not pick the only one).
    if not v.strip():
        raise argparse.ArgumentTypeError("a job id is required (see `pseudoclaude memory pending`)")
    return v.strip()


def _op_number(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an operation number is a whole number, not {quote(v)}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"an operation number is 0 or more, not {n}")
    return n


# -- output --------------------------------------------------------------------------------------


class _SafeStream:
    """sys.stdout/sys.stderr for one memory command. Every write passes through
    ``strip_terminal`` (note text is hostile: no OSC 52 clipboard or OSC 0 title writes), and a
    reader that went away (``| head -1``) ends the printing quietly: the command still runs to
    the end and keeps its exit code."""

    def __init__(self, inner: TextIO | None) -> None:
        self.inner = inner
        self.reader_gone = inner is None  # started with the descriptor closed (`>&-`)

    def write(self, s: str) -> int:
        if not self.reader_gone:
            try:
                self.inner.write(strip_terminal(s))  # type: ignore[union-attr]  # None only when reader_gone
            except OSError as e:
                self._gone_or_raise(e)
        return len(s)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.inner.flush()  # type: ignore[union-attr]  # None only when reader_gone
            except OSError as e:
                self._gone_or_raise(e)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def _gone_or_raise(self, e: OSError) -> None:
        # Either way the stream goes quiet: another error is reported once by the caller, and
        # the exit-time flush must not report it again.
        self.reader_gone = True
        silence(self.inner)
        if not closed_pipe(e):
            raise e


def run(args: argparse.Namespace) -> int:
    out, diagnostics = _SafeStream(sys.stdout), _SafeStream(sys.stderr)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, diagnostics
    try:
        code = _run(args)
        try:
            out.flush()
        except OSError as e:  # a full disk behind `> file`: said, not a traceback
            err(f"cannot write the output: {e.strerror or e}")
            code = EXIT_ERROR
        diagnostics.flush()
        return code
    finally:
        sys.stdout, sys.stderr = saved


# The errors a command reports in one line (exit 1), by module: a module the command did not
# import cannot have raised its error, so it is not imported just to be caught.
_REPORTED_ERRORS = (
    ("memory.store.transaction", "TransactionError"),
    ("memory.store.store", "StoreError"),
    ("memory.jobs.spool", "SpoolError"),
    ("memory.jobs.review", "ReviewError"),
)


def _reported(e: BaseException) -> bool:
    for module, name in _REPORTED_ERRORS:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(e, getattr(loaded, name)):
            return True
    return False


# The commands that wait on a model or run until told to stop: their collector stays on.
_LONG_RUNNING = frozenset({"flush", "consolidate", "worker", "sync", "serve-mcp"})
# The commands that only read the cards: each answers from one look at a store folder.
_ONE_LOOK = frozenset({"index", "list", "show", "search"})


def ends_at_once(args: argparse.Namespace) -> bool:
    """Whether this command's process may end without the interpreter's teardown: it only read
    the stores, started no thread and wrote what it wrote already (app/cli/main.py ``entry``)."""
    return getattr(args, "memory_command", None) in _ONE_LOOK


def _run(args: argparse.Namespace) -> int:
    # The stores' modules (pydantic, YAML) load when a command runs: not for `memory --help` or a
    # usage error. Each command's own further imports below load after these, for the same reason.
    from memory.store.stores import MemoryStores

    workspace = getattr(args, "workspace", ".")
    if not Path(workspace).is_dir():
        err(f"workspace {workspace} is not a folder")
        return EXIT_USAGE
    stores = MemoryStores(resolve_workspace(workspace))
    handler = _HANDLERS[args.memory_command]
    # What the imports made outlives the command: no collection walks it again while the
    # command runs (with 10,000 cards' objects about, each full collection did, a tenth of
    # `memory index`). A command that never waits on a model makes no garbage worth a pass:
    # its collector is off until it ends (ten thousand cards' objects, each pass walked them).
    # Restored after: a caller in-process (the tests) keeps its collector as it was.
    gc.freeze()
    was_enabled = gc.isenabled()
    if args.memory_command not in _LONG_RUNNING:
        gc.disable()
    if args.memory_command in _ONE_LOOK:
        stores.pin_listings()
    try:
        args.rebuilt_indexes = _refresh(stores)
        return handler(stores, args)
    except Exception as e:
        if _reported(e):
            err(str(e))
            return EXIT_ERROR
        if isinstance(e, OSError):
            err(f"{e.filename or ''}: {e.strerror or e}".lstrip(": "))
            return EXIT_ERROR
        raise
    finally:
        if was_enabled:
            gc.enable()
        gc.unfreeze()


def _refresh(stores: MemoryStores) -> list[str]:
    """The derived-index rule: a ``MEMORY.md`` out of step with its cards (a
    union merge, ``git checkout``, an editor) is rebuilt before the command reads anything.
    Quietly (``doctor`` says it): the rebuilt file is what the cards say, nothing was lost."""
    from memory.store.transaction import TransactionError  # (loaded with the stores: see _run)

    try:
        return [str(lv) for lv in stores.refresh_indexes()]
    except (TransactionError, OSError) as e:
        err(f"{INDEX_FILE} not rebuilt from the cards: {getattr(e, 'strerror', None) or e}")
        return []


def _index(stores: MemoryStores, args: argparse.Namespace) -> int:
    from memory.store.index import index_as_prompted  # (with the stores: see _run)
    from memory.store.stores import untrusted_cards

    # The same function the system prompt uses, so this is exactly what a new session gets.
    prompt = stores.prompt_index()
    text = index_as_prompted(prompt.text)
    if text:
        print(text)
    # From the same listing (an untrusted project store has no cards in it).
    for level, name, reason in prompt.unindexed:
        err(f"left out {level} card {name}: {reason}")
    left_out = untrusted_cards(stores)
    if left_out:
        # Said on stderr: stdout stays exactly what a new session gets.
        err(
            f"left out {len(left_out)} note(s) of the project store {stores.project.dir}: it came with "
            "this workspace and is not trusted yet "
            "(`pseudoclaude -p --trust-project-memory ...` or the app trusts it)"
        )
    return EXIT_OK


def _list(stores: MemoryStores, args: argparse.Namespace) -> int:
    if args.stale or args.unused is not None:
        return grounding.list_filtered(stores, args)
    if not stores.has_project_level:
        print(f"project store: none ({stores.project.unavailable})")
    trusted = stores.project_trusted
    try:
        stale = grounding.stale_checks(stores)
    except Exception as e:
        # The marks are extra: a store locked by a recovering process still gets listed.
        if not (_reported(e) or isinstance(e, OSError)):
            raise
        err(f"stale cards not checked: {e}")
        stale = {}
    for level, st in stores.stores.items():
        problem = st.folder_problem()
        notes = [] if problem else st.heads()  # (no bodies: a new process reads the card cache)
        untrusted = level is Level.PROJECT and not trusted
        mark = " — untrusted: not used until you trust it" if untrusted else ""
        lines = [f"{level} store: {st.dir} ({len(notes)} note{'s' if len(notes) != 1 else ''}){mark}"]
        if problem:
            lines.append(f"  ! {problem}")
        for n in notes:
            flag = f"  ! {n.broken}" if n.broken else ""
            flag += "  [untrusted]" if untrusted else ""
            flag += grounding.stale_suffix(stale.get(n.filename)) if level is Level.PROJECT else ""
            summary = f" — {n.meta.summary}" if n.meta.summary else ""
            lines.append(
                f"  {n.filename}  [{n.meta.type}] {n.meta.title}{summary}  (updated "
                f"{n.meta.updated or '?'}, source {n.meta.source}){flag}"
            )
        # One write per store: the output stream strips each write, a tenth of listing 10,000 cards.
        print("\n".join(lines))
    return EXIT_OK


def _show(stores: MemoryStores, args: argparse.Namespace) -> int:
    st = stores.store(args.level)
    if args.file == INDEX_FILE:
        sys.stdout.write(stores.read_memory(args.level, INDEX_FILE, include_untrusted=True))
        return EXIT_OK
    reason = st.target_problem(args.file)
    if reason is not None:
        err(reason)
        return EXIT_ERROR
    from memory.store.noteparse import parse_note  # (with the stores: see _run)
    from memory.store.stores import cites_header

    data = st.fs.read_bytes(st.dir / args.file)
    note = parse_note(st.level, args.file, data)
    if note.conflict is not None:
        # Like read_memory: neither side as the card (`memory doctor` names both versions).
        err(f"{args.file} is {note.broken}")
        return EXIT_ERROR
    # A cited card's citations as they stand now, above the file (what read_memory shows the model).
    sys.stdout.write(cites_header(stores.grounding_of(args.level, args.file)))
    sys.stdout.write(data.decode("utf-8", "replace"))
    return EXIT_OK


def _read_input(name: str) -> str:
    if name == "-":
        data = sys.stdin.buffer.read(MAX_APPLY_INPUT + 1)
    else:
        with open(name, "rb") as f:
            data = f.read(MAX_APPLY_INPUT + 1)
    if len(data) > MAX_APPLY_INPUT:
        raise ValueError(f"input is larger than {MAX_APPLY_INPUT} bytes")
    return data.decode("utf-8", "surrogateescape")


def _apply(stores: MemoryStores, args: argparse.Namespace) -> int:
    from memory.extract.parser import parse_and_validate  # the model's response parser: only for apply

    try:
        text = _read_input(args.file)
    except (OSError, ValueError) as e:
        err(f"cannot read {args.file}: {getattr(e, 'strerror', None) or e}")
        return EXIT_USAGE if isinstance(e, FileNotFoundError) else EXIT_ERROR
    parsed = parse_and_validate(text)
    if not parsed.found:
        err('no operations found: expected a JSON array or an object with an "operations" array')
        return EXIT_REJECTED
    return report(
        stores.apply(parsed.ops, source=MANUAL_SOURCE, rejected=parsed.rejected, label="memory apply")
    )


def _pending(stores: MemoryStores, args: argparse.Namespace) -> int:
    from memory.jobs.spool import DAMAGED_DIR, Spool  # the spool: only for the commands about jobs

    spool = Spool(stores.paths, stores.fs)
    entries = spool.list(None if args.all else stores.paths.workspace, include_orphans=args.all)
    if not entries:
        print("no pending memory jobs")
        return EXIT_OK
    for e in entries:
        if e.job is None:
            print(f"{e.id}  damaged   {e.problem} (memory doctor --fix moves it to spool/{DAMAGED_DIR}/)")
            continue
        where = f"  [{e.workspace}]" if args.all else ""
        reason = f"  ({e.job.error})" if e.job.error and e.status == "failed" else ""
        held = f"  {len(e.job.held_ops)} held op(s)" if e.job.held_ops else ""
        print(f"{e.id}  {e.status:<8}  {e.job.excerpt()}{held}{reason}{where}")
    return EXIT_OK


def _review(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The job manager and the jobs service load only for the commands that run or review jobs.
    from app.agent.memory_bridge.manager import build_manager
    from app.services.jobs import JobsService
    from memory.jobs.spool import Spool

    manager = build_manager(stores, None)
    spool = Spool(stores.paths, stores.fs)
    job_id = spool.resolve(args.job)
    ops = tuple(args.ops) or None
    if args.memory_command == "approve":
        # The result names only the approved ops' rejections: an op rejected earlier is not repeated.
        result = asyncio.run(JobsService(manager, stores, lambda: manager.mode).approve(job_id, ops))
        for e in spool.list(stores.paths.workspace, include_orphans=False):
            if e.job is not None and e.job.held_ops and e.job.split_from == job_id:
                print(f"still held: ops {', '.join(str(h.index) for h in e.job.held_ops)} (job {e.id})")
        return report(result)
    # The manager's own reject: the command names the job that still holds the other ops.
    left = asyncio.run(manager.reject(job_id, ops))
    print(f"rejected {'all held ops' if ops is None else 'ops ' + ', '.join(map(str, ops))} of job {job_id}")
    if left is not None:
        print(f"still held: ops {', '.join(str(h.index) for h in left.held_ops)} (job {left.id})")
    return EXIT_OK


def _flush(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The job manager loads only for the commands that run or review jobs (the stores' class is
    # loaded already: see _run).
    from app.agent.memory_bridge.manager import build_manager
    from memory.jobs.spool import Spool
    from memory.store.stores import MemoryStores

    completion, code = memory_completion()
    if completion is None:
        return code
    if args.all:
        live = Spool(stores.paths, stores.fs).list(None, include_orphans=False)
        workspaces = sorted({e.workspace for e in live if e.job is not None and e.workspace})
    else:
        workspaces = [str(stores.paths.workspace)]

    async def flush_all() -> int:
        try:
            return await flush_each()
        finally:
            await completion.aclose()  # on this loop, not when collected after it ended

    async def flush_each() -> int:
        code = EXIT_OK
        for ws in workspaces:
            ws_stores = MemoryStores(ws, stores.paths.home, fs=stores.fs)
            # Flush applies jobs whatever the configured mode: each job keeps the mode it was made with.
            manager = build_manager(ws_stores, completion, mode=MemoryMode.AUTO)
            try:
                result = await manager.flush(args.timeout)
            finally:
                await manager.close(0)
            prefix = f"[{ws}] " if args.all else ""
            for job_id in result.done:
                print(f"{prefix}applied {job_id}")
            for job_id in result.held:
                print(f"{prefix}held for review {job_id}")
            for job_id, reason in result.failed.items():
                err(f"{prefix}job {job_id} failed: {reason}")
            for job_id in result.unfinished:
                err(f"{prefix}job {job_id} unfinished after {args.timeout:g}s; it stays spooled")
            if result.failed or result.unfinished:
                code = EXIT_ERROR
            if not (result.done or result.held or result.failed or result.unfinished):
                print(f"{prefix}no spooled memory jobs")
        return code

    return asyncio.run(flush_all())


def _undo(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The cards service (the card editors) loads only for an edit; the undo's error with the stores.
    from app.services.cards import CardsService
    from memory.store.history import UndoError

    try:
        result = asyncio.run(CardsService(stores, None).undo())
    except UndoError as e:
        err(str(e))
        return EXIT_ERROR
    for a in result.applied:
        print(f"reverted {a.level}/{a.filename}")
    return EXIT_OK


def _doctor(stores: MemoryStores, args: argparse.Namespace) -> int:
    from memory.jobs.doctor import diagnose, fix  # the spool's and the stores' checks: only for doctor

    report = fix(stores) if args.fix else diagnose(stores)
    # Done before any command reads a store: a repair no one has to ask for.
    report.fixed[:0] = [f"{lv} store: rebuilt {INDEX_FILE} from the cards" for lv in args.rebuilt_indexes]
    for line in report.fixed:
        print(f"fixed: {line}")
    for f in report.findings:
        hint = " (doctor --fix repairs this)" if f.fixable and not args.fix else ""
        print(f"problem: {f.message}{hint}")
    for line in report.notes:
        print(f"note: {line}")  # information: an untrusted store is left as it came
    for name, reason in report.stale:
        # Information: the exit status and --fix leave stale cards alone.
        print(
            f"stale: project/{name}: {reason} (check it; `pseudoclaude memory confirm project {name}` "
            "if it still holds)"
        )
    if report.ok:
        print("memory stores are healthy")
        return EXIT_OK
    return EXIT_ERROR


_HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {
    "index": _index,
    "list": _list,
    "show": _show,
    "apply": _apply,
    "pending": _pending,
    "approve": _review,
    "reject": _review,
    "flush": _flush,
    "undo": _undo,
    "confirm": grounding.confirm,
    "doctor": _doctor,
    **scale.HANDLERS,
    "consolidate": consolidation.consolidate,
    **history_log.HANDLERS,
    **user_sync.HANDLERS,
    **child_worker.HANDLERS,
    **mcp_server.HANDLERS,
    **importing.HANDLERS,
}
