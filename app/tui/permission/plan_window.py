"""The plan window: ``exit_plan_mode``'s question to the person, over whichever screen is up, and
its end with the turn's (a turn cancelled while it asks takes the question away: keep planning).
The runtime sets the mode the answer names (app/agent/runtime.py); the window only shows and
answers.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual.app import App

if TYPE_CHECKING:
    from widgets.dialogs.plan_review import PlanVerdict

__all__ = ["ask_plan"]


async def ask_plan(app: App[Any], plan: str) -> PlanVerdict:
    """Show the plan in a PlanReview; the person's verdict (approve with accept-edits or default,
    or keep planning with a note)."""
    # The window draws the plan as Markdown (markdown-it): loaded with the first plan, never
    # before the app's first frame.
    from widgets.dialogs.plan_review import PlanReview, PlanVerdict

    answer: asyncio.Future[PlanVerdict] = asyncio.get_running_loop().create_future()

    def done(result: PlanVerdict | None) -> None:
        if not answer.done():
            answer.set_result(result or PlanVerdict("keep-planning"))

    window = PlanReview(plan)
    await app.push_screen(window, callback=done)
    try:
        return await answer
    except asyncio.CancelledError:
        if window.is_attached and app.screen is window:
            window.dismiss(PlanVerdict("keep-planning"))
        raise
