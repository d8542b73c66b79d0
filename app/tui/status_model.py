"""What the status line shows, held in one place: the line follows this state.

The App, the chat screen and the turn's renderer change fields (``update``); a change that
alters what is shown redraws the line at once, and a change to nothing redraws nothing. Nobody
calls a "show the status" by hand.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from widgets.chat.status import StatusInfo, StatusLine

if TYPE_CHECKING:
    from app.agent.config.settings import Settings
    from app.agent.runtime import Runtime


class StatusModel:
    """The state behind the chat screen's ``StatusLine``; it draws once it is attached."""

    def __init__(self, workspace: str, *, note: str = "") -> None:
        self._info = StatusInfo(
            workspace=workspace, model="", memory_mode="", last_turn="", cost="", pending=0, note=note
        )
        self._line: StatusLine | None = None

    @property
    def info(self) -> StatusInfo:
        return self._info

    def attach(self, line: StatusLine) -> None:
        self._line = line
        line.show(self._info)

    def update(self, **changes: Any) -> None:
        """Set the named ``StatusInfo`` fields; the line is redrawn if any of them changed."""
        info = replace(self._info, **changes)
        if info != self._info:
            self._info = info
            if self._line is not None:
                self._line.show(info)

    def show_settings(self, settings: Settings | None, runtime: Runtime | None) -> None:
        """The settings' fields (none before they are loaded): the model, the memory mode (the
        runtime's once it exists), where compaction starts, the permission mode (the runtime's:
        the files decide it at its start, Shift+Tab and a plan's approval later)."""
        if settings is not None:
            self.update(
                model=settings.model,
                memory_mode=runtime.memory_mode if runtime is not None else settings.memory_mode,
                compact_pct=round(settings.compact_at * 100),
                permission_mode=runtime.permission_mode.value if runtime is not None else "",
                thinking=settings.thinking,  # Tab on an empty prompt turns it on and off
            )
