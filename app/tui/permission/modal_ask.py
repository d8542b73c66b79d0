"""The app's side of the permission gate: the gate's question becomes the PermissionModal's request
(the tool's own preview, the rules "always" would save, the parts that still ask), the person's
answer the gate's. The gate decides everything else (app/agent/permissions/gate.py); the window
only draws and answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast, get_args

from app.agent.permissions.question import Answer, Choice, Question
from widgets.dialogs.permission import PermissionAnswer, PermissionRequest

__all__ = ["Ask", "ModalAsk", "permission_request"]

# The App's window: shows the request, returns the answer (a bare choice will do).
Ask = Callable[[PermissionRequest], Awaitable[PermissionAnswer | str]]
_CHOICES: tuple[str, ...] = get_args(Choice)


def permission_request(question: Question) -> PermissionRequest:
    """What the PermissionModal shows for ``question``."""
    preview = question.preview
    return PermissionRequest(
        call_id=question.call_id,
        name=question.tool,
        summary=preview.summary,
        preview=preview.body,
        preview_kind=preview.kind,
        rule=", ".join(question.rules),
        still_asks="; ".join(question.still_asks),
    )


class ModalAsk:
    """The gate's ``ask`` for the App: ``ask`` shows the modal and returns its answer."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask

    async def __call__(self, question: Question) -> Answer:
        answer = await self.ask(permission_request(question))
        choice = getattr(answer, "choice", answer)
        note = str(getattr(answer, "note", "") or "")
        # Anything but a known choice denies: only an answer given on purpose allows a call.
        return Answer(choice=cast("Choice", choice) if choice in _CHOICES else "deny", note=note)
