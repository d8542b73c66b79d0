"""``exit_plan_mode {plan}`` on its own: its input (a plan, not blank, bounded), a call outside plan
mode refused in one line, the person's three answers as the model reads them (a note one clean
line), print mode's plan ending the run, and the registry offering it only while planning (and
never to a sub-agent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.tools import BUILTIN_TOOLS, ToolContext, ToolResult, run_tool
from app.agent.tools.base import PlanAnswer
from app.agent.tools.builtin.exit_plan_mode import (
    APPROVED_ASKING,
    APPROVED_EDITS,
    KEPT_PLANNING,
    MAX_PLAN_CHARS,
    NOT_PLANNING,
    PRINTED,
)

PLAN = "## Plan\n\n1. Rename `foo` to `bar` in app.py\n2. Run the tests\n"


class Person:
    """Answers the plan question with ``answer`` and keeps the plans shown."""

    def __init__(self, answer: PlanAnswer) -> None:
        self.answer = answer
        self.shown: list[str] = []

    async def __call__(self, plan: str) -> PlanAnswer:
        self.shown.append(plan)
        return self.answer


def ctx(tmp_path: Path, *, planning: bool | None = True, person: Person | None = None) -> ToolContext:
    return ToolContext(
        workspace=tmp_path,
        planning=None if planning is None else (lambda: planning),
        plan_approval=person,
    )


async def call(c: ToolContext, plan: object = PLAN) -> ToolResult:
    return await run_tool("exit_plan_mode", {"plan": plan}, c)


def one_line_error(r: ToolResult) -> str:
    assert r.is_error, r.content
    assert "\n" not in r.content and r.content.strip(), r.content
    return r.content


@pytest.mark.parametrize(
    ("plan", "needle"),
    [
        ("", "input 'plan' must not be empty"),
        ("  \n\t", "input 'plan' must hold the plan, not only spaces"),
        (42, "input 'plan' must be a string, not"),
        ("x" * (MAX_PLAN_CHARS + 1), f"input 'plan' is {MAX_PLAN_CHARS + 1:,} characters long; at most"),
    ],
)
async def test_a_blank_wrong_or_oversized_plan_is_one_line_and_nobody_is_asked(
    tmp_path: Path, plan: object, needle: str
) -> None:
    person = Person(PlanAnswer(choice="accept-edits"))
    assert needle in one_line_error(await call(ctx(tmp_path, person=person), plan))
    assert person.shown == []


@pytest.mark.parametrize("planning", [False, None])
async def test_outside_plan_mode_a_call_is_refused_in_one_line_and_nobody_is_asked(
    tmp_path: Path, planning: bool | None
) -> None:
    person = Person(PlanAnswer(choice="accept-edits"))
    result = await call(ctx(tmp_path, planning=planning, person=person))
    assert one_line_error(result) == NOT_PLANNING
    assert person.shown == [] and result.ends_run is None


async def test_approved_with_accept_edits_the_model_is_told_edits_run_without_asking(tmp_path: Path) -> None:
    person = Person(PlanAnswer(choice="accept-edits"))
    result = await call(ctx(tmp_path, person=person))
    assert person.shown == [PLAN]  # the plan as the model wrote it: the window renders it
    assert not result.is_error and result.content == APPROVED_EDITS
    assert result.ends_run is None  # the model goes on with the work
    # The chat shows what became of the plan, and the plan itself.
    assert result.view is not None and result.view.status == "approved: edits run without asking"
    assert result.view.output == PLAN


async def test_approved_asking_for_each_edit(tmp_path: Path) -> None:
    result = await call(ctx(tmp_path, person=Person(PlanAnswer(choice="default"))))
    assert result.content == APPROVED_ASKING and not result.is_error and result.ends_run is None
    assert "each edit will ask" in result.content


async def test_keep_planning_gives_the_model_the_persons_note_as_one_bounded_line(tmp_path: Path) -> None:
    note = "use the\x1b[31m existing helper\ninstead " + "very " * 200
    result = await call(ctx(tmp_path, person=Person(PlanAnswer(choice="keep-planning", note=note))))
    assert not result.is_error and result.ends_run is None
    assert result.content.startswith(KEPT_PLANNING + " The user said: use the existing helper instead very")
    assert "\n" not in result.content and "\x1b" not in result.content
    assert len(result.content) <= len(KEPT_PLANNING) + len(" The user said: ") + 300
    plain = await call(ctx(tmp_path, person=Person(PlanAnswer(choice="keep-planning"))))
    assert plain.content == KEPT_PLANNING
    assert plain.view is not None and plain.view.status == "not approved: planning goes on"


async def test_with_nobody_to_ask_the_plan_ends_the_run_as_its_answer(tmp_path: Path) -> None:
    result = await call(ctx(tmp_path, person=None))
    assert not result.is_error
    assert result.content == PRINTED  # what the session keeps as the call's result
    assert result.ends_run == PLAN  # the plan as written: print mode prints it
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_offered_only_while_planning_and_never_to_a_sub_agent() -> None:
    assert "exit_plan_mode" in BUILTIN_TOOLS.names()  # it is looked up like any tool
    assert "exit_plan_mode" not in BUILTIN_TOOLS.offered(planning=False).names()
    assert "exit_plan_mode" not in [t["name"] for t in BUILTIN_TOOLS.offered(planning=False).api()]
    assert BUILTIN_TOOLS.offered(planning=True).names() == BUILTIN_TOOLS.names()
    # The other built-ins are offered alike in either mode.
    others = [n for n in BUILTIN_TOOLS.names() if n != "exit_plan_mode"]
    assert BUILTIN_TOOLS.offered(planning=False).names() == others
    # A sub-agent's tools are the read-only ones, in plan mode too.
    assert "exit_plan_mode" not in BUILTIN_TOOLS.read_only().offered(planning=True).names()
    tool = BUILTIN_TOOLS.get("exit_plan_mode")
    assert tool is not None and tool.kind == "interaction" and not tool.read_only and not tool.asks
