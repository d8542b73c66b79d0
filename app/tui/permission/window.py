"""The permission question for a tool call: the window, its answer, and its end with the turn's.

"Always allow in this project" saves the rule the person confirmed (the personal settings file)
before the answer goes back: the next identical call is decided by it, never asked again.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from textual.app import App

from app.tui.messages import ChatNote
from memory.text.lines import one_line
from widgets.dialogs.permission import PermissionAnswer, PermissionModal, PermissionRequest


def _check(rule: str) -> str | None:
    # The rules' parser is loaded when a rule is saved, not with the first frame.
    from app.services.extensions import check_rules

    return check_rules(rule)


async def ask(app: App[Any], request: PermissionRequest) -> PermissionAnswer:
    """Show the PermissionModal for a tool call; its answer ("once", "session", "always" or
    "deny", a denial maybe with the person's note). A turn cancelled while asking takes the
    question away."""
    answer: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()

    def done(result: PermissionAnswer | None) -> None:
        if not answer.done():
            answer.set_result(result or PermissionAnswer("deny"))

    modal = PermissionModal(request, check_rule=_check)
    await app.push_screen(modal, callback=done)
    try:
        result = await answer
    except asyncio.CancelledError:
        if modal.is_attached and app.screen is modal:
            modal.dismiss(PermissionAnswer("deny"))
        raise
    if result.choice == "always":
        await save_rule(app, result.rule)
    return result


async def save_rule(app: App[Any], rule: str) -> None:
    """Save ``rule`` through the extensions service; what happened is one line in the chat (the
    call runs either way: the person allowed it)."""
    try:
        service = cast("Any", app).services.extensions  # the App's services (RuntimeError before the runtime)
    except (RuntimeError, AttributeError):
        service = None
    saved = await service.save_rules(rule) if service is not None else None
    if saved is None:
        app.post_message(ChatNote("the rule could not be saved: the runtime is not ready", error=True))
        return
    if saved.error is not None:
        app.post_message(ChatNote(one_line(f"the rule was not saved: {saved.error}", 400), error=True))
        return
    what = ", ".join(saved.saved) if saved.saved else f"{one_line(rule, 200)} (already there)"
    app.post_message(
        ChatNote(one_line(f"always allowed in this project: {what} (saved in {saved.path})", 400))
    )
    if saved.gitignore_line is not None:
        app.post_message(
            ChatNote(f"add {saved.gitignore_line} to .gitignore to keep your personal settings out of git")
        )
