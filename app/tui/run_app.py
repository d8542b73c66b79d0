"""``pseudoclaude`` without ``-p``: run the full-screen app until it quits, then say why start-up
could not go on (a bad setting) on the terminal it leaves."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from app.tui.app import PseudoClaudeApp

if TYPE_CHECKING:
    from app.agent.config.settings import Settings


def run_app(
    settings: Settings | Mapping[str, object],
    workspace: Path,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
) -> int:
    """``pseudoclaude`` without ``-p``: run the full-screen app until it quits. ``settings``
    may be the command line's setting flags: the app loads the settings after its first frame."""
    app = PseudoClaudeApp(settings, workspace, resume=resume, continue_latest=continue_latest)
    app.run()
    if app.startup.error is not None:
        with contextlib.suppress(OSError):
            sys.stderr.write(f"pseudoclaude: {app.startup.error}\n")
        return 2
    return app.return_code or 0
