"""The app's side of ``exit_plan_mode``: the plan window's verdict becomes the tool's ``PlanAnswer``.
Anything but an approval given on purpose keeps planning, and the note is cleaned again whatever
the window did (one line, bounded): it goes to the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.agent.tools.base import PlanAnswer
from widgets.dialogs.permission import clean_note
from widgets.dialogs.plan_review import PlanVerdict

__all__ = ["AskPlan", "ModalPlanApproval"]

# The App's plan window: shows the plan, returns the person's verdict.
AskPlan = Callable[[str], Awaitable[PlanVerdict]]


class ModalPlanApproval:
    """The runtime's ``plan_approval`` for the App: ``ask`` shows the window."""

    def __init__(self, ask: AskPlan) -> None:
        self.ask = ask

    async def __call__(self, plan: str) -> PlanAnswer:
        verdict = await self.ask(plan)
        choice = getattr(verdict, "choice", None)
        if choice == "accept-edits" or choice == "default":
            return PlanAnswer(choice=choice)
        return PlanAnswer(choice="keep-planning", note=clean_note(str(getattr(verdict, "note", "") or "")))
