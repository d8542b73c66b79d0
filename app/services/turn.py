"""A turn: one Run of the model loop, and ``/compact``.

The face (the app, print mode) hands an ``emit`` for the Run's events and draws them; the service
only runs. Events come in order, and an ``AnswerDone`` follows the answer's last event so the face
can say when that answer is on the screen (the turn's memory job is spooled after that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.agent.conversation.blocks import Prompt
from app.agent.turn.events import posting_answer_done

if TYPE_CHECKING:
    from app.agent.runtime import Runtime
    from app.agent.turn.events import Compacted, OnEvent, RunStop
    from app.agent.turn.runner import Runner


class TurnService:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    @property
    def running(self) -> bool:
        runner: Runner | None = self._rt.runner  # None until a session is open
        return runner is not None and runner.running

    async def run(self, prompt: Prompt | str, emit: OnEvent, *, answer_done: bool = True) -> RunStop:
        """One Run of ``prompt`` (its blocks: the words, attached files, images, documents; a str
        is the words alone). A cancel raises CancelledError after the runner closed the turn (the
        conversation stays valid). ``answer_done``: emit ``AnswerDone`` behind the answer."""
        runner = self._rt.runner
        if runner is None:
            raise RuntimeError("no session is open")
        shown = posting_answer_done(emit) if answer_done else None
        return await runner.run(Prompt.of(prompt), emit, answer_shown=shown)

    async def compact(self, focus: str, emit: OnEvent) -> Compacted | None:
        """``/compact [focus]``: summarise the earlier conversation now (events: Compacting,
        Compacted, ContextUsage, UsageEvent). RuntimeError: why not."""
        runner = self._rt.runner
        if runner is None:
            raise RuntimeError("no session is open")
        return await runner.compact(focus, emit)
