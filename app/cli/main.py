"""Command line entry point: argv to the full-screen app, print mode, `--status` or the memory commands.

Only the chosen path's modules are imported: `--version` and `--help` load neither the SDK nor Textual,
and the `memory` commands' modules (and their parsers) are loaded only when `memory` is on the command
line: the full-screen app's start-up needs none of them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from app.agent.permissions.modes import PermissionMode
from memory.constants import MEMORY_MODES

if TYPE_CHECKING:
    from app.agent.config.settings import Settings
    from app.agent.permissions.rules import Rule

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
DIST_NAME = "pseudoclaude"


def package_version() -> str:
    """The installed distribution's version: `[project] version` in pyproject.toml is its one source
    (an editable install's metadata carries it too); "unknown" where no metadata is installed."""
    # Only for --version: the metadata reader loads zipfile and the email parser.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DIST_NAME)
    except PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """`--version`: the version is looked up only when asked, not on every start."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        default: str = argparse.SUPPRESS,
        help: str | None = None,
    ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog} {package_version()}")  # on stdout, as argparse's own --version
        parser.exit(EXIT_OK)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(EXIT_USAGE, f"{self.prog}: {message}\n")


def _common(p: argparse.ArgumentParser, *, suppress: bool) -> None:
    # Under `memory` the defaults are suppressed so `-C` given before `memory` is not reset.
    d = argparse.SUPPRESS if suppress else None
    p.add_argument(
        "-C",
        "--workspace",
        metavar="DIR",
        default=d if suppress else ".",
        help="workspace folder (default: the current directory)",
    )


def _positive_int(v: str) -> int:
    n = int(v)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _seconds(v: str) -> float:
    x = float(v)
    if not x >= 0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds ≥ 0, not {v}")
    return x


def build_parser(*, memory_commands: bool = True, rewind_commands: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; ``memory_commands`` False: ``memory`` has no sub-commands (the
    command line does not name it, so argparse cannot choose it: no abbreviation of a sub-command);
    ``rewind_commands`` False: ``rewind`` and ``doctor`` have no arguments, likewise."""
    parser = _Parser(prog="pseudoclaude", description="A terminal coding assistant with long-term memory.")
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    _common(parser, suppress=False)
    _add_session_options(parser)
    _add_print_options(parser)
    _add_commands(parser, memory_commands=memory_commands, rewind_commands=rewind_commands)
    return parser


def _add_session_options(parser: argparse.ArgumentParser) -> None:
    """The prompt, the models, the memory mode and the session to continue: both faces'."""
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="PROMPT",
        help="run one turn, stream the answer to stdout and exit (- reads the prompt from stdin); "
        "@path in it attaches a workspace file or image (png, jpg, gif, webp)",
    )
    parser.add_argument("--model", help="main model (default claude-sonnet-5-5)")
    parser.add_argument("--memory-model", help="memory model (default claude-haiku-5-5)")
    parser.add_argument(
        "--memory",
        dest="memory_mode",
        choices=MEMORY_MODES,
        help="auto: write memory; review: hold it for approval; off: never extract",
    )
    parser.add_argument(
        "--permission-mode",
        choices=[m.value for m in PermissionMode],
        help="default: edits and commands ask; accept-edits: edits inside the workspace run without "
        "asking; plan: read-only, the model proposes a plan (default: the settings, else default)",
    )
    parser.add_argument(
        "--thinking",
        action="store_true",
        default=None,
        help="extended thinking for the main model (budget: thinking_budget, default 8000 tokens); "
        "in the app Tab on an empty prompt turns it on and off",
    )
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue this workspace's latest session",
    )
    resume.add_argument(
        "--resume",
        metavar="ID",
        help="resume a session of this workspace by id (another workspace's is refused, exit 1)",
    )


def _add_print_options(parser: argparse.ArgumentParser) -> None:
    """The options of print mode and ``--status`` (the full-screen app ignores them)."""
    parser.add_argument(
        "--memory-wait",
        type=_seconds,
        metavar="S",
        help="print mode: seconds to wait for this turn's memory job (default 15)",
    )
    parser.add_argument(
        "--max-iterations",
        type=_positive_int,
        metavar="N",
        help="print mode: bound on model requests in one turn (default 50)",
    )
    parser.add_argument(
        "--status",
        action="store_true",
        help="print the workspace, models, credentials and memory state instead of opening the app",
    )
    parser.add_argument(
        "--allow-tools",
        metavar="RULE,…",
        default="",
        help="print mode: tools allowed without asking, as permission rules "
        "(bash, edit_file(src/**), bash(git status:*), mcp__server)",
    )
    parser.add_argument(
        "--trust-project-mcp",
        action="store_true",
        help="print mode: start this workspace's .mcp.json servers for this run without a trust record",
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="print mode: compact the conversation before this turn (with --continue or --resume)",
    )
    parser.add_argument(
        "--image",
        dest="images",
        action="append",
        default=[],
        metavar="FILE",
        help="print mode: attach an image file (png, jpg, gif, webp; relative to the current folder; "
        "repeatable); a file that is not a readable image, or over 50 MB, is a usage error",
    )
    parser.add_argument(
        "--trust-project-memory",
        action="store_true",
        help="print mode: trust this workspace's project memory store (recorded for this workspace)",
    )


def _add_commands(parser: argparse.ArgumentParser, *, memory_commands: bool, rewind_commands: bool) -> None:
    """``memory``, ``rewind`` and ``doctor``, each with its arguments only when the command line
    names it (``build_parser``)."""
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    mem = sub.add_parser("memory", help="inspect and edit long-term memory")
    _common(mem, suppress=True)
    if memory_commands:
        # Only when the command line names `memory` (see the module's docstring).
        from app.cli.memory import commands as memory_cli

        memory_cli.add_commands(mem, lambda p: _common(p, suppress=True))
    rewind = sub.add_parser("rewind", help="restore files and/or the conversation to before a turn")
    doctor = sub.add_parser("doctor", help="report the checkpoints' size")
    if rewind_commands:
        # Only when the command line names `rewind` or `doctor`, as for `memory`.
        from app.cli import rewind as rewind_cli

        rewind_cli.add_arguments(rewind, doctor, lambda p: _common(p, suppress=True))


# Whether the command just run may end its process without the interpreter's teardown (entry()).
_ends_at_once = False


def main(argv: Sequence[str] | None = None) -> int:
    global _ends_at_once
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(
        memory_commands="memory" in argv, rewind_commands="rewind" in argv or "doctor" in argv
    )
    args = parser.parse_args(argv)
    if args.command in ("rewind", "doctor"):
        from app.cli import rewind as rewind_cli  # loaded by build_parser already

        return rewind_cli.run(args)
    if args.command == "memory":
        from app.cli.memory import commands as memory_cli  # loaded by build_parser already

        code = memory_cli.run(args)
        _ends_at_once = memory_cli.ends_at_once(args)
        return code
    return _run_agent(parser, args)


def entry() -> NoReturn:
    """The ``pseudoclaude`` program: ``main`` with the process's exit. A command that only read
    the cards ends at once once its output is flushed: the interpreter's teardown freed every
    object one by one (a tenth of a second after a 10,000-card index, a sixth of its time),
    and such a command leaves no thread, file or child to finish."""
    code = main()
    if _ends_at_once:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:  # (None: started with the descriptor closed)
                    stream.flush()
            except (OSError, ValueError):
                pass  # a reader gone: the command said what it could
        os._exit(code)
    sys.exit(code)


def _settings_flags(args: argparse.Namespace) -> dict[str, object]:
    return {
        "model": args.model,
        "memory_model": args.memory_model,
        "memory_mode": args.memory_mode,
        "memory_wait": args.memory_wait,
        "max_iterations": args.max_iterations,
        "permission_mode": args.permission_mode,  # None when not given: the settings files decide
        "thinking": args.thinking,  # None when not given: the settings files decide
    }


def _status(settings: Settings, workspace: Path) -> str:
    """What `pseudoclaude --status` (or without a terminal) shows: where things are, what to do."""
    # The stores (pydantic, YAML), the spool and the provider's module: only for the status.
    from app.agent.model.provider import NO_CREDENTIALS, has_credentials
    from memory.jobs.spool import Spool
    from memory.store.stores import MemoryStores

    stores = MemoryStores(workspace)
    counts = {
        lv.value: (0 if st.folder_problem() else len(st.note_names())) for lv, st in stores.stores.items()
    }
    jobs = Spool(stores.paths).list(workspace, include_orphans=False)
    creds = "configured" if has_credentials() else NO_CREDENTIALS
    user = f"{counts['user']} user note(s) in {stores.user.dir}; {len(jobs)} spooled job(s)"
    memory = (
        f"memory: {counts['project']} project note(s) in {stores.project.dir}, {user}"
        if stores.has_project_level
        else f"memory: {user}; this workspace has no project level "
        "(its project store would be the user store)"
    )
    return "\n".join(
        [
            f"PseudoClaude — workspace {workspace}",
            f"model {settings.model}; memory model {settings.memory_model}, memory {settings.memory_mode}",
            f"credentials: {creds}",
            memory,
            "",
            "Run `pseudoclaude` in a terminal for the full-screen app, or:",
            '  pseudoclaude -p "explain this repository"     one turn, streamed to stdout',
            "  pseudoclaude memory list                      "
            "browse the notes (see `pseudoclaude memory --help`)",
        ]
    )


def _prompt_text(arg: str) -> str:
    """The prompt as text: undecodable bytes (stdin, or argv decoded with surrogateescape)
    become U+FFFD here, where they enter the conversation."""
    if arg == "-":
        return sys.stdin.buffer.read().decode("utf-8", "replace")
    try:
        return arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that is no escaped byte
        from app.agent.conversation.blocks import scrub_text  # (rare: not loaded for every prompt)

        return scrub_text(arg)


def _allow_rules(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[Rule, ...]:
    """``--allow-tools`` as permission rules (a bad rule is a usage error)."""
    if not args.allow_tools:
        return ()
    # Only when asked: the rules (pydantic, pathspec) are no part of the full-screen app's first frame.
    from app.agent.permissions.rules import parse_rule_list

    try:
        return parse_rule_list(args.allow_tools)
    except ValueError as e:
        parser.error(str(e))


def _run_app(args: argparse.Namespace, workspace: Path) -> int:
    """The full-screen app. It loads the settings itself, after its first frame: their validation
    (pydantic) would cost more than the rest of that frame (a bad setting still ends the app with
    the same one line and exit 2). No garbage collection runs from here to that frame
    (app.tui.chat.gc_hold): all it allocates lives as long as the app."""
    # Only for the full-screen app: its start-up hold on the garbage collector.
    from app.tui.chat.gc_hold import hold_start_up, release_start_up

    hold_start_up()
    try:
        # Textual and the app: only when the full-screen app is chosen (not for print mode, memory).
        from app.tui.run_app import run_app

        return run_app(
            _settings_flags(args), workspace, resume=args.resume, continue_latest=args.continue_latest
        )
    finally:
        release_start_up()  # an app that ended before its first frame


def _run_agent(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    # Not for --version or --help: the paths' dataclasses load inspect, ast and tokenize.
    from memory.store.paths import resolve_workspace

    if not Path(args.workspace).is_dir():
        parser.error(f"workspace {args.workspace} is not a folder")
    allow = _allow_rules(parser, args)
    workspace = resolve_workspace(args.workspace)
    if args.resume is not None and not args.resume.strip():
        parser.error("--resume needs a session id (use --continue for this workspace's latest session)")
    if args.prompt is None and not args.status and sys.stdout.isatty() and sys.stdin.isatty():
        return _run_app(args, workspace)
    # Print mode and --status only: the settings (pydantic-settings) and print mode's runtime.
    from app.agent.config.settings import SettingsError, load_settings

    try:
        settings = load_settings(_settings_flags(args))
    except SettingsError as e:
        print(f"pseudoclaude: {e}", file=sys.stderr)
        return EXIT_USAGE
    for warning in settings.warnings:
        print(f"pseudoclaude: {warning}", file=sys.stderr)
    if args.prompt is None:
        # --status, or no terminal to draw on (a pipe, a script): the status text instead of the app.
        print(_status(settings, workspace))
        return EXIT_OK
    return _run_print(parser, args, settings, workspace, allow)


def _run_print(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    settings: Settings,
    workspace: Path,
    allow: tuple[Rule, ...],
) -> int:
    """Print mode: one turn of the prompt given on the command line."""
    if args.compact and not (args.continue_latest or args.resume):
        parser.error("--compact compacts an earlier conversation: use it with --continue or --resume")
    prompt = _prompt_text(args.prompt)
    if not prompt.strip():
        parser.error("the prompt is empty")
    # Print mode's runtime (the model, the tools, the session log): only for a prompt given here.
    from app.cli.print_mode import main_print

    return main_print(
        prompt,
        settings,
        workspace,
        allow_tools=allow,
        trust_project_mcp=args.trust_project_mcp,
        resume=args.resume,
        continue_latest=args.continue_latest,
        trust_project=args.trust_project_memory,
        compact=args.compact,
        images=tuple(args.images),
    )


if __name__ == "__main__":
    entry()
