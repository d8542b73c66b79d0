"""A tool no product file knows: defined here, registered in the runtime's tool registry, and
through the real SDK and the fake Messages API offered to the model (its name, description and
schema), gated (rules naming it, the person asked with its own preview), refused on a bad input
before anyone is asked, and run (its result reaches the next request). Adding a tool is its class
and its registration; nothing else of the product changes for it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from app.agent.config.settings import load_settings
from app.agent.permissions.gate import RunAllowances
from app.agent.permissions.question import Answer, Question
from app.agent.runtime import Runtime
from app.agent.tools import (
    BUILTIN_TOOLS,
    Preview,
    Tool,
    ToolContext,
    ToolInput,
    ToolKind,
    ToolRegistry,
    ToolResult,
)
from app.agent.tools.fields import FilledText
from tests.support.clitools import MODEL, result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]


class ShoutInput(ToolInput):
    text: FilledText = Field(description="What to shout.")


class Shout(Tool[ShoutInput]):
    name = "shout"
    Input = ShoutInput
    kind = ToolKind.WRITE
    description = "Say the text back in capitals, loudly: a tool for trying out the tool registry."

    async def run(self, args: ShoutInput, ctx: ToolContext) -> ToolResult:
        return ToolResult(content=args.text.upper() + "!")

    def preview(self, args: ShoutInput, ctx: ToolContext) -> Preview:
        return Preview(summary=f"shout {len(args.text)} characters", body=args.text.upper(), kind="text")


SHOUT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to shout."}},
    "required": ["text"],
    "additionalProperties": False,
}


def with_shout() -> ToolRegistry:
    tools = BUILTIN_TOOLS.copy()
    tools.register(Shout())
    return tools


class Person:
    """Answers every question with ``choice`` and keeps the questions."""

    def __init__(self, choice: str = "once") -> None:
        self.choice = choice
        self.asked: list[Question] = []

    async def __call__(self, question: Question) -> Answer:
        self.asked.append(question)
        return Answer(choice=self.choice)  # type: ignore[arg-type]


Factory = Callable[..., Coroutine[Any, Any, Runtime]]


@pytest.fixture
async def make_runtime(ws: Path) -> AsyncIterator[Factory]:
    opened: list[Runtime] = []

    async def factory(**permissions: Any) -> Runtime:
        rt = Runtime(load_settings({"memory_mode": "off"}), ws, tools=with_shout(), **permissions)
        await rt.open_session()
        opened.append(rt)
        return rt

    yield factory
    for rt in opened:
        await rt.close()


async def test_a_registered_tool_is_offered_gated_with_its_own_preview_and_run(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    server.script(MODEL, tool_use("shout", {"text": "hello"}, id="toolu_s"), text("done"))
    person = Person()
    rt = await make_runtime(ask=person)
    stop = await rt.runner.run("shout hello")
    assert stop.status == "completed", stop.message
    first, second = server.requests_for(MODEL)
    offered = first.body["tools"]
    # After the built-ins offered outside plan mode, in the request as the model reads it.
    assert [t["name"] for t in offered] == [*BUILTIN_TOOLS.offered(planning=False).names(), "shout"]
    assert offered[-1] == {"name": "shout", "description": Shout.description, "input_schema": SHOUT_SCHEMA}
    # A writing tool asks: the person is shown the tool's own preview and what "always" would save.
    [question] = person.asked
    assert (question.tool, question.call_id, question.depth) == ("shout", "toolu_s", 0)
    assert question.preview == Preview(summary="shout 5 characters", body="HELLO", kind="text")
    assert question.rules == ("shout",)
    [result] = tool_results(second)
    assert result["tool_use_id"] == "toolu_s" and not result.get("is_error")
    assert result_text(result) == "HELLO!"


async def test_rules_name_the_registered_tool(
    server: FakeAnthropic, make_runtime: Factory, isolated_home: Path
) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('[permissions]\nallow = ["shout"]\n')
    server.script(MODEL, tool_use("shout", {"text": "hi"}, id="toolu_a"), text("done"))
    person = Person("deny")
    rt = await make_runtime(ask=person)
    assert not rt.ext.notes()  # the rule was read: "shout" is a tool it knows
    await rt.runner.run("shout hi")
    assert person.asked == []  # allowed by the rule: nobody is asked
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert result_text(result) == "HI!"

    (isolated_home / "config.toml").write_text('[permissions]\ndeny = ["shout"]\n')
    await asyncio.to_thread(rt.ext.load)  # as /permissions does after saving a rule
    server.script(MODEL, tool_use("shout", {"text": "no"}, id="toolu_d"), text("done"))
    await rt.runner.run("shout no")
    [result] = tool_results(server.requests_for(MODEL)[-1])[-1:]
    assert result.get("is_error") and result_text(result).startswith("shout was denied by the rule shout")
    assert person.asked == []


async def test_a_bad_input_is_refused_by_the_tools_model_before_anyone_is_asked(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    server.script(MODEL, tool_use("shout", {"text": 5}, id="toolu_b"), text("done"))
    person = Person()
    rt = await make_runtime(ask=person)
    await rt.runner.run("shout a number")
    assert person.asked == []
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert result.get("is_error") and result_text(result) == "input 'text' must be a string, not an integer"


async def test_with_nobody_to_ask_the_mode_decides(server: FakeAnthropic, make_runtime: Factory) -> None:
    server.script(
        MODEL,
        tool_use("shout", {"text": "one"}, id="toolu_1"),
        text("done"),
        tool_use("shout", {"text": "two"}, id="toolu_2"),
        text("done"),
    )
    refused = await make_runtime()
    await refused.runner.run("shout one")
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert result.get(
        "is_error"
    ) and "print mode runs it only when a rule or --allow-tools allows it" in result_text(result)
    allowed = await make_runtime(allowances=RunAllowances(allowed={"shout"}))
    await allowed.runner.run("shout two")
    [result] = tool_results(server.requests_for(MODEL)[3])
    assert result_text(result) == "TWO!"
