"""The app-wide state the App owns, as the chat screen and the memory side read it: the bridge to
the runtime, the workspace, the status line's state, where start-up is (``phase``), and whether
the trust question is still open. Start-up changes it after the first frame, quitting at the
end; everything that reads it reads it when it needs it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.tui.phase import Phase

if TYPE_CHECKING:
    from app.services.bundle import Services
    from app.tui.bridge import Bridge
    from app.tui.status_model import StatusModel


@dataclass
class AppState:
    bridge: Bridge  # the runtime and its services (built after the first frame)
    workspace: Path
    status: StatusModel  # what the status line shows
    trusting: Callable[[], bool]  # the trust question waits for its answer: nothing queued is sent
    phase: Phase = Phase.STARTING

    @property
    def built(self) -> bool:
        """The runtime object exists: memory features work (also while quitting, once it did)."""
        if self.phase is Phase.QUITTING:
            return self.bridge.runtime is not None
        return self.phase not in (Phase.STARTING, Phase.FAILED)

    @property
    def services(self) -> Services:
        """The runtime's feature services (RuntimeError before the runtime is built)."""
        return self.bridge.services

    def built_services(self) -> Services | None:
        """The runtime's feature services, None before the runtime is built."""
        return self.bridge.services if self.built else None

    def set_phase(self, phase: Phase) -> None:
        self.phase = phase
