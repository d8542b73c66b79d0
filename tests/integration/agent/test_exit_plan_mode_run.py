"""``exit_plan_mode`` through the real Runtime, SDK and fake Messages API: offered only while the
mode is plan (a request's tools, a plan approved mid-turn included); approved with accept-edits,
the next edit_file runs without the window; approved asking, it asks; kept planning, the model
reads the person's note and plan mode goes on; with nobody to ask, the plan is the turn's answer
and the run ends without another request, the session keeping the call and its result."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.permissions.modes import PermissionMode
from app.agent.permissions.question import Answer, Question
from app.agent.runtime import Runtime
from app.agent.tools.base import PlanAnswer
from app.agent.tools.builtin.exit_plan_mode import (
    APPROVED_ASKING,
    APPROVED_EDITS,
    KEPT_PLANNING,
    NOT_PLANNING,
    PRINTED,
)
from app.agent.turn.events import RunEvent, ToolCallFinished
from tests.support.clitools import MODEL, result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, Recorded, text, tool_use

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

PLAN = "# Plan\n\n1. Change `build` to `make all` in README.md\n2. Say so\n"
EDIT = {"path": "README.md", "old_string": "make build", "new_string": "make all"}


class Person:
    """Answers permission questions with ``choice`` and the plan with ``plan``; keeps both."""

    def __init__(self, plan: PlanAnswer, choice: str = "deny") -> None:
        self.plan, self.choice = plan, choice
        self.asked: list[Question] = []
        self.plans: list[str] = []

    async def ask(self, question: Question) -> Answer:
        self.asked.append(question)
        return Answer(choice=self.choice)  # type: ignore[arg-type]

    async def approve(self, plan: str) -> PlanAnswer:
        self.plans.append(plan)
        return self.plan


Factory = Callable[..., Coroutine[Any, Any, Runtime]]


@pytest.fixture
async def make_runtime(ws: Path) -> AsyncIterator[Factory]:
    opened: list[Runtime] = []

    async def factory(person: Person | None, mode: PermissionMode = PermissionMode.PLAN) -> Runtime:
        rt = Runtime(
            load_settings({"memory_mode": "off"}),
            ws,
            ask=person.ask if person is not None else None,
            plan_approval=person.approve if person is not None else None,
        )
        await rt.open_session()
        rt.set_permission_mode(mode)
        opened.append(rt)
        return rt

    yield factory
    for rt in opened:
        await rt.close()


def names(req: Recorded) -> list[str]:
    return [t["name"] for t in req.body["tools"]]


def results(req: Recorded) -> list[str]:
    """The results of the calls of the request's last response (its last message)."""
    last = req.body["messages"][-1]
    return [result_text(b) for b in last["content"] if b.get("type") == "tool_result"]


async def test_approved_with_accept_edits_the_next_edit_runs_without_the_window(
    server: FakeAnthropic, make_runtime: Factory, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p"),
        tool_use("edit_file", EDIT, id="toolu_e"),
        text("Done."),
    )
    person = Person(PlanAnswer(choice="accept-edits"))
    rt = await make_runtime(person)
    stop = await rt.runner.run("plan the rename, then do it")
    assert stop.status == "completed", stop.message
    first, second, third = server.requests_for(MODEL)
    # Offered while planning; once the plan is approved, the next request of the same turn no longer has it.
    assert "exit_plan_mode" in names(first) and "exit_plan_mode" not in names(second)
    assert person.plans == [PLAN]
    assert results(second) == [APPROVED_EDITS]
    assert rt.permission_mode == PermissionMode.ACCEPT_EDITS
    # The edit ran without asking anyone.
    assert person.asked == []
    assert (ws / "README.md").read_text() == "# demo\nThe build command is `make all`.\n"
    assert not tool_results(third)[-1].get("is_error")
    # The approved plan stays in the conversation: the call's input holds it, its result says so.
    sent = third.body["messages"]
    calls = [b for m in sent if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    assert calls[0]["name"] == "exit_plan_mode" and calls[0]["input"] == {"plan": PLAN}


async def test_approved_asking_the_next_edit_asks(
    server: FakeAnthropic, make_runtime: Factory, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p"),
        tool_use("edit_file", EDIT, id="toolu_e"),
        text("Not done."),
    )
    person = Person(PlanAnswer(choice="default"), choice="deny")
    rt = await make_runtime(person)
    await rt.runner.run("plan it")
    _, second, third = server.requests_for(MODEL)
    assert results(second) == [APPROVED_ASKING]
    assert rt.permission_mode == PermissionMode.DEFAULT
    [question] = person.asked
    assert question.tool == "edit_file"
    assert results(third) == ["edit_file was denied by the user"]
    assert "make build" in (ws / "README.md").read_text()


async def test_keep_planning_the_model_reads_the_note_and_plan_mode_goes_on(
    server: FakeAnthropic, make_runtime: Factory, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p"),
        tool_use("edit_file", EDIT, id="toolu_e"),
        text("Planning on."),
    )
    person = Person(PlanAnswer(choice="keep-planning", note="keep the old name too"))
    rt = await make_runtime(person)
    await rt.runner.run("plan it")
    _, second, third = server.requests_for(MODEL)
    assert results(second) == [f"{KEPT_PLANNING} The user said: keep the old name too"]
    assert rt.permission_mode == PermissionMode.PLAN
    assert "exit_plan_mode" in names(second)  # still planning: still offered
    # The edit is refused by plan mode, without a window.
    [refused] = results(third)
    assert refused.startswith("plan mode: edit_file") and person.asked == []
    assert "make build" in (ws / "README.md").read_text()


async def test_outside_plan_mode_it_is_not_offered_and_a_call_is_one_line(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    server.script(MODEL, tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p"), text("ok"))
    person = Person(PlanAnswer(choice="accept-edits"))
    rt = await make_runtime(person, PermissionMode.DEFAULT)
    await rt.runner.run("go")
    first, second = server.requests_for(MODEL)
    assert "exit_plan_mode" not in names(first)
    [refused] = tool_results(second)
    assert refused.get("is_error") and result_text(refused) == NOT_PLANNING
    assert person.plans == [] and rt.permission_mode == PermissionMode.DEFAULT


async def test_with_nobody_to_ask_the_plan_ends_the_run_without_another_request(
    server: FakeAnthropic, make_runtime: Factory, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p", text_before="Here is my plan."),
        text("Go on then."),  # for the next turn: this one makes no further request
    )
    rt = await make_runtime(None)
    seen: list[RunEvent] = []
    stop = await rt.runner.run("plan it", seen.append)
    assert stop.status == "completed" and stop.text == PLAN
    assert len(server.requests_for(MODEL)) == 1  # no further request
    [finished] = [e for e in seen if isinstance(e, ToolCallFinished)]
    assert finished.result.ends_run == PLAN and finished.result.content == PRINTED
    # The session keeps the call and its result; the next turn can go on from there.
    messages = rt.session.messages if rt.session is not None else []
    assert messages[-1].role == "user"
    assert [b.type for b in messages[-1].content] == ["tool_result"]
    assert rt.permission_mode == PermissionMode.PLAN
    assert "make build" in (ws / "README.md").read_text()
    assert (await rt.runner.run("thanks")).text == "Go on then."
    last = server.requests_for(MODEL)[-1]
    assert results(last) == [PRINTED]
