"""The permission question for a tool call: the window, its answer, and its end with the turn's."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App

from widgets.dialogs.permission import PermissionAnswer, PermissionModal, PermissionRequest


async def ask(app: App[Any], request: PermissionRequest) -> PermissionAnswer:
    """Show the PermissionModal for a tool call; its answer ("once", "session" or "deny", a
    denial maybe with the person's note). A turn cancelled while asking takes the question away."""
    answer: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()

    def done(result: PermissionAnswer | None) -> None:
        if not answer.done():
            answer.set_result(result or PermissionAnswer("deny"))

    modal = PermissionModal(request)
    await app.push_screen(modal, callback=done)
    try:
        return await answer
    except asyncio.CancelledError:
        if modal.is_attached and app.screen is modal:
            modal.dismiss(PermissionAnswer("deny"))
        raise
