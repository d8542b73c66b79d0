"""``pseudoclaude rewind --list | rewind N [--files|--conversation] [--force]`` and
``pseudoclaude doctor``.

The turns listed are those of the workspace's latest session (or ``--resume ID``'s), numbered as
the session numbers them (1 = its first prompt). ``rewind N`` restores files and the conversation
(both unless one is named) to before turn N and records itself as the next turn, so ``rewind`` of
that number undoes it. A file changed since the agent last wrote it is refused in one line
(exit 1) unless ``--force``. Nothing here loads the SDK or Textual; the session and checkpoint
modules load only once a command runs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memory.text.lines import one_line

if TYPE_CHECKING:
    from app.agent.conversation.session_store import SessionInfo
    from app.agent.undo.rewind import RewindPlan, RewindResult, TurnLine

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
# The "files changed" column of ``--list``: at least as wide as "12 files, bash", at most FILES_MAX,
# and it leaves PROMPT_ROOM characters of the line to the prompt. Not on a terminal (a pipe, a
# file), the line is taken to be PLAIN_WIDTH wide unless COLUMNS says otherwise.
FILES_WIDTH = 14
FILES_MAX = 60
PROMPT_ROOM = 24
PLAIN_WIDTH = 100
MIN_NAME = 8  # the least of a cut file name worth showing


def _turn(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a turn number, not {v!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def add_arguments(
    rewind: argparse.ArgumentParser,
    doctor: argparse.ArgumentParser,
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The arguments of ``rewind`` and ``doctor`` (their parsers are made by main's)."""
    common(rewind)
    common(doctor)
    rewind.add_argument("turn", nargs="?", type=_turn, metavar="N", help="restore to before turn N")
    rewind.add_argument(
        "--list", action="store_true", help="one line per turn: N, time, files changed, prompt"
    )
    which = rewind.add_mutually_exclusive_group()
    which.add_argument("--files", action="store_true", help="restore the files only")
    which.add_argument("--conversation", action="store_true", help="rewind the conversation only")
    rewind.add_argument(
        "--force", action="store_true", help="overwrite files changed since the agent wrote them"
    )
    rewind.add_argument(
        "--resume",
        metavar="ID",
        default=argparse.SUPPRESS,
        help="that session of this workspace (default: its latest)",
    )


def err(msg: str) -> None:
    print(f"pseudoclaude: {msg}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """``rewind`` or ``doctor``; every problem is one line on stderr."""
    # The workspace's paths: only once a command runs (main's parser stays light).
    from memory.store.paths import resolve_workspace

    if not Path(args.workspace).is_dir():
        err(f"workspace {args.workspace} is not a folder")
        return EXIT_USAGE
    workspace = resolve_workspace(args.workspace)
    if args.command == "doctor":
        return doctor()
    if args.list == (args.turn is not None):
        err("rewind needs either --list or a turn number N (see `pseudoclaude rewind --help`)")
        return EXIT_USAGE
    if args.list and (args.files or args.conversation or args.force):
        err("--list takes no --files, --conversation or --force")
        return EXIT_USAGE
    # The session and checkpoint modules: only for a rewind command.
    from app.agent.conversation.session_log import SessionError
    from app.agent.undo.checkpoints import CheckpointError
    from app.agent.undo.rewind import RewindError

    try:
        info = _session(workspace, getattr(args, "resume", None))
        if args.list:
            return _list(info, workspace)
        return _rewind(info, args)
    except (RewindError, SessionError, CheckpointError) as e:
        err(str(e))
        return EXIT_ERROR


def _session(workspace: Path, resume: str | None) -> SessionInfo:
    """The session asked for: ``resume`` (id or unambiguous prefix) of this workspace, else its latest."""
    # Sessions: only for a rewind command.
    from app.agent.conversation.session_log import SessionError
    from app.agent.conversation.session_store import SessionStore

    sessions = SessionStore().list(workspace)
    if resume is None:
        found = [s for s in sessions if s.turns > 0]
        if not found:
            raise SessionError(f"no session with a turn in workspace {workspace}")
        return found[0]
    sid = resume.strip().removesuffix(".jsonl")
    exact = [s for s in sessions if s.id == sid]
    matches = exact or [s for s in sessions if sid and s.id.startswith(sid)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise SessionError(
            f"session id {sid!r} is ambiguous: it matches {', '.join(s.id for s in matches[:3])}"
        )
    raise SessionError(f"no session of workspace {workspace} matches {sid!r}")


def _when(rfc3339: str) -> str:
    try:
        return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return "????-??-?? ??:??"


def files_column(t: TurnLine, width: int = FILES_MAX) -> str:
    """The "files changed" column in at most ``width`` characters: the files' names, as many as
    fit, then "+N more"; "-" for none; ", bash" when bash ran (what it changed is unknown). A first
    name too long for the column keeps its end, the file's own name; with too little of it left,
    the files are counted ("3 files")."""
    tail = ", bash" if t.bash else ""
    names = [one_line(f) for f in t.files]
    if not names:
        return "-" + tail
    room = width - len(tail)
    shown, used = 0, -2
    for k, name in enumerate(names, 1):
        used += 2 + len(name)
        if used > room:
            break
        more = len(names) - k
        if used + (len(f" +{more} more") if more else 0) <= room:
            shown = k
    more = len(names) - max(shown, 1)
    rest = f" +{more} more" if more else ""
    if shown:
        return ", ".join(names[:shown]) + rest + tail
    keep = room - len(rest) - 1
    if keep >= MIN_NAME:
        return "…" + names[0][-keep:] + rest + tail
    return f"{len(names)} file{'s' if len(names) != 1 else ''}{tail}"


def list_width() -> int:
    """The width ``--list`` fits its lines to: the terminal's, COLUMNS, else PLAIN_WIDTH."""
    return shutil.get_terminal_size((PLAIN_WIDTH, 24)).columns


def list_lines(turns: list[TurnLine], width: int) -> list[str]:
    """``N  <time>  <files changed>  <the prompt's first line>`` per turn (a rewound turn says so),
    the files' column as wide as its widest entry within what ``width`` leaves it."""
    heads = [f"{t.turn}  {_when(t.time)}  " for t in turns]
    lead = max((len(h) for h in heads), default=0)
    budget = min(max(width - lead - 2 - PROMPT_ROOM, FILES_WIDTH), FILES_MAX)
    columns = [files_column(t, budget) for t in turns]
    pad = max((len(c) for c in columns), default=0)
    return [
        f"{head}{column:<{pad}}  {t.text}" + ("  (rewound)" if t.rewound else "")
        for head, column, t in zip(heads, columns, turns, strict=True)
    ]


def _list(info: SessionInfo, workspace: Path) -> int:
    # The checkpoints and the turns: only for a rewind command.
    from app.agent.undo.checkpoints import CheckpointStore
    from app.agent.undo.rewind import list_turns

    checkpoints = CheckpointStore().session(info.id, workspace)
    for line in list_lines(list_turns(info.path, checkpoints), list_width()):
        print(line)
    return EXIT_OK


def _rewind(info: SessionInfo, args: argparse.Namespace) -> int:
    # The session, its checkpoints and the rewind: only for a rewind command.
    from app.agent.conversation.session_store import SessionStore
    from app.agent.undo.checkpoints import CheckpointStore
    from app.agent.undo.rewind import RewindError, apply_rewind, conflict_line, plan_rewind

    files = not args.conversation
    conversation = not args.files
    store = CheckpointStore()
    session = SessionStore().open(info.id)
    try:
        plan = plan_rewind(session, store, args.turn, files=files, conversation=conversation)
        if plan.conflicts and not args.force:
            raise RewindError(conflict_line(plan))
        result = apply_rewind(session, store, plan, force=args.force)
    finally:
        session.close()
    for line in report(plan, result, Path(str(session.workspace))):
        print(line)
    return EXIT_OK


def report(plan: RewindPlan, result: RewindResult, workspace: Path) -> list[str]:
    """What a rewind did, a line each: files, conversation, bash, memory, how to undo it."""
    # The memory history: only to name the batches of the rewound turns' jobs.
    from app.agent.undo.rewind import memory_batches

    out = [f"restored {p}" for p in result.restored] + [f"deleted {p}" for p in result.deleted]
    if plan.restore_files and not result.restored and not result.deleted:
        out.append("files: nothing to restore")
    if result.conversation:
        later = plan.rewound
        span = f"turn {later[0]}" if len(later) == 1 else f"turns {later[0]}–{later[-1]}"
        out.append(f"conversation: back to before turn {plan.to_turn} ({span} left out of the next request)")
    if plan.restore_files:
        out += [f"turn {n} ran bash: files it changed are not restored" for n in plan.bash_turns]
    batches = memory_batches(workspace, [j for _, j in plan.jobs])
    for n, job in plan.jobs:
        applied = batches.get(job) or []
        where = f"applied as batch {', '.join(applied)}" if applied else "in no memory batch (yet)"
        out.append(f"memory is not rewound: turn {n}'s memory job {job} is {where}")
    out.append(f"recorded as turn {result.entry}: `pseudoclaude rewind {result.entry}` undoes it")
    return out


def doctor() -> int:
    """``pseudoclaude doctor``: the checkpoints' size and sessions, against their bounds."""
    # The settings (pydantic-settings) and the checkpoints: only for this command.
    from app.agent.config.settings import SettingsError, load_settings
    from app.agent.undo.checkpoints import CheckpointStore
    from memory.text.lines import format_bytes

    try:
        settings = load_settings({})
    except SettingsError as e:
        err(str(e))
        return EXIT_USAGE
    store = CheckpointStore()
    size = store.size()
    print(
        f"checkpoints: {format_bytes(size.bytes)} in {size.sessions} session(s) at {store.root} "
        f"(bounds: {settings.checkpoint_max_mb} MB, {settings.checkpoint_max_days:g} days; "
        "oldest pruned first)"
    )
    return EXIT_OK
