"""Where the app is in its life, as one value: what can be sent and what is shown follow from it.

The first frame comes before anything is loaded; then the runtime object is built (the memory
stores can be reached), then the session opens — with a model (``READY``) or without credentials
(``OFFLINE``: memory browsing and editing only) — or start-up fails, before the runtime existed
(``FAILED``) or after (``BROKEN``: the stores still work). ``QUITTING`` ends every one of them.
"""

from __future__ import annotations

import enum


class Phase(enum.Enum):
    STARTING = "starting"  # the first frame: no settings, no runtime yet
    BUILT = "built"  # the runtime object exists (memory works); the session is opening
    READY = "ready"  # the session is open with a model: prompts are sent
    OFFLINE = "offline"  # open without credentials: memory works, chatting does not
    FAILED = "failed"  # start-up failed before the runtime object existed
    BROKEN = "broken"  # start-up failed after it: memory works, chatting does not
    QUITTING = "quitting"  # leaving: nothing new starts

    @property
    def connecting(self) -> bool:
        """Start-up is not over: neither open nor failed."""
        return self in (Phase.STARTING, Phase.BUILT)

    @property
    def ready(self) -> bool:
        """Prompts can be sent (the session is open with a model)."""
        return self is Phase.READY

    @property
    def opened(self) -> bool:
        """The runtime finished opening (with or without a model)."""
        return self in (Phase.READY, Phase.OFFLINE)

    def after_failure(self) -> Phase:
        """The phase a failed start-up leaves, from this one."""
        return Phase.BROKEN if self is Phase.BUILT else Phase.FAILED
