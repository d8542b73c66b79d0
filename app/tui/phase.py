"""Where the app is in its life, as one value: what can be sent and what is shown follow from it.

The first frame comes before anything is loaded; then the runtime object is built (the memory
stores can be reached), then the session opens — with a model (``READY``) or without credentials
(``OFFLINE``: memory browsing and editing only) — or start-up fails, before the runtime existed
(``FAILED``) or after (``BROKEN``: the stores still work). ``QUITTING`` ends every one of them.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from app.tui.messages import RuntimeBuilt, RuntimeReady

if TYPE_CHECKING:
    from app.tui.messages import RuntimeFailed


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

    def after(self, message: RuntimeBuilt | RuntimeReady | RuntimeFailed) -> Phase:
        """The phase once start-up says ``message``, from this one (quitting stays quitting): the
        runtime object is built, the runtime is open (with a model or without credentials), or
        start-up failed (before the runtime object existed or after)."""
        if self is Phase.QUITTING:
            return self
        if isinstance(message, RuntimeBuilt):
            return Phase.BUILT if self is Phase.STARTING else self
        if isinstance(message, RuntimeReady):
            return Phase.READY if message.credentials else Phase.OFFLINE
        return Phase.BROKEN if self is Phase.BUILT else Phase.FAILED
