"""What the ``memory`` commands share: their exit codes, the one-line error, the report of an
applied batch, and the configured memory model for the commands that call it.

Each command module imports this one and none imports another command's module for it, so the
imports between the commands point one way (app/cli/memory/commands.py down to the rest).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from app.cli.memory.grounding import dropped_line

if TYPE_CHECKING:
    from app.agent.memory_bridge.completion import AnthropicCompletion
    from memory.model import BatchResult, Conflict, Rejection

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REJECTED = 0, 1, 2, 3


def err(msg: str) -> None:
    print(f"pseudoclaude: {msg}", file=sys.stderr)


def report(result: BatchResult) -> int:
    """Applied ops on stdout, each rejection, conflict or dropped citation as one line on
    stderr; exit 3 if any op was refused (a dropped citation leaves its op applied)."""
    for a in result.applied:
        print(f"{a.action} {a.level}/{a.filename}")
    problems: list[Rejection | Conflict] = [*result.rejected, *result.conflicts]
    lines = [
        (r.index, r.reason if r.reason.startswith("op ") else f"op {r.index}: {r.reason}") for r in problems
    ]
    lines += [(d.index, dropped_line(d)) for d in result.dropped_cites]
    for _, line in sorted(lines, key=lambda x: x[0]):
        err(line)
    return EXIT_REJECTED if problems else EXIT_OK


def memory_completion() -> tuple[AnthropicCompletion | None, int]:
    """The configured memory model, for the commands that call it (flush, consolidate); None
    and the exit code once the reason is said when the settings are bad."""
    # The settings (pydantic-settings) and the job manager load only for the commands that call
    # the model: every other command, the reading ones above all, starts without them.
    from app.agent.config.settings import SettingsError, load_settings
    from app.agent.memory_bridge.manager import memory_completion as configured

    try:
        settings = load_settings({})
    except SettingsError as e:
        err(str(e))
        return None, EXIT_USAGE
    return configured(settings), EXIT_OK
