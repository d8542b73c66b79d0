"""Every tool call goes through the one gate, the reading ones too: a ``deny`` rule on
``read_file`` keeps the file from the model, and an ``ask`` rule on it asks the person (shown the
call), or with nobody to ask is refused. Through the real SDK and the fake Messages API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.permissions.question import Answer, Question
from app.agent.runtime import Runtime
from tests.support.clitools import MODEL, result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

SECRET = "API_KEY=do-not-show-me"

Factory = Callable[..., Coroutine[Any, Any, Runtime]]


@pytest.fixture
async def make_runtime(ws: Path, isolated_home: Path) -> AsyncIterator[Factory]:
    (ws / ".env").write_text(SECRET + "\n")
    opened: list[Runtime] = []

    async def factory(rules: str, **permissions: Any) -> Runtime:
        isolated_home.mkdir(parents=True, exist_ok=True)
        (isolated_home / "config.toml").write_text(f"[permissions]\n{rules}\n")
        rt = Runtime(load_settings({"memory_mode": "off"}), ws, **permissions)
        await rt.open_session()
        opened.append(rt)
        return rt

    yield factory
    for rt in opened:
        await rt.close()


class Person:
    def __init__(self, choice: str) -> None:
        self.choice = choice
        self.asked: list[Question] = []

    async def __call__(self, question: Question) -> Answer:
        self.asked.append(question)
        return Answer(choice=self.choice)  # type: ignore[arg-type]


async def test_a_deny_rule_on_read_file_keeps_the_file_from_the_model(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    server.script(MODEL, tool_use("read_file", {"path": ".env"}, id="toolu_r"), text("ok"))
    person = Person("once")
    rt = await make_runtime('deny = ["read_file(.env)"]', ask=person)
    await rt.runner.run("show me the env")
    assert person.asked == []  # a deny rule asks nobody
    second = server.requests_for(MODEL)[1]
    [result] = tool_results(second)
    assert result.get("is_error") and result_text(result).startswith(
        "read_file was denied by the rule read_file(.env)"
    )
    assert "do-not-show-me" not in str(second.body)


async def test_an_ask_rule_on_read_file_asks_the_person_or_is_refused_without_one(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    server.script(MODEL, tool_use("read_file", {"path": ".env"}, id="toolu_a"), text("ok"))
    server.script(MODEL, tool_use("read_file", {"path": ".env"}, id="toolu_p"), text("ok"))
    person = Person("deny")
    rt = await make_runtime('ask = ["read_file(.env)"]', ask=person)
    await rt.runner.run("show me the env")
    [question] = person.asked
    assert question.tool == "read_file" and question.preview.summary == "read_file(path='.env')"
    assert question.rules == ("read_file(/.env)",)
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert result.get("is_error") and result_text(result) == "read_file was denied by the user"

    headless = await make_runtime('ask = ["read_file(.env)"]')
    await headless.runner.run("show me the env")
    [result] = tool_results(server.requests_for(MODEL)[3])
    assert result.get("is_error") and "print mode runs it only when a rule" in result_text(result)
    assert "do-not-show-me" not in str(server.requests_for(MODEL)[3].body)
