"""The memory model through the real SDK against the fake Messages API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agent.memory_bridge.completion import AnthropicCompletion
from memory.constants import Level
from memory.jobs.manager import Manager
from memory.model import Turn, TurnMessage
from tests.support.clitools import MEMORY_MODEL
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.memtools import make_env, write_note

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def sdk_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)


async def _no_sleep(_: float) -> None:
    return None


async def test_five_updates_of_16_kib_notes_are_merged_through_the_sdk(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    # Before: one non-streaming merge request with max_tokens ~29,900, refused by the SDK before
    # it was sent ("Streaming is required…"); the job failed on every flush.
    stores = make_env(tmp_path)
    names = [f"project_knowledge_n{k}.md" for k in range(5)]
    for k, name in enumerate(names):
        write_note(stores, Level.PROJECT, name, f"Note {k}", f"{k}" * (16 * 1024))
    updates = [
        {"action": "update", "level": "project", "filename": name, "content": f"also fact {k}"}
        for k, name in enumerate(names)
    ]
    # Every merge answer carries all five keys: each request's own keys are taken from it.
    merged = json.dumps({"merged": [{"key": f"op{k}", "content": f"merged body {k}"} for k in range(5)]})
    server.script(MEMORY_MODEL, text(json.dumps(updates)), *[text(merged) for _ in range(5)])
    m = Manager(stores, AnthropicCompletion(MEMORY_MODEL), sleep=_no_sleep, poll_interval=0.05, session="s")
    await m.start()
    turn = Turn(
        messages=[TurnMessage(role="user", text="five facts"), TurnMessage(role="assistant", text="ok")]
    )
    job = await m.submit(turn)
    assert job is not None
    outcome = await m.wait_for(job.id, 30)
    await m.close(5)
    assert outcome.status == "done", outcome
    last = stores.history()[-1]
    assert not last.rejected and not last.conflicts, (last.rejected, last.conflicts)
    for k, name in enumerate(names):
        assert (stores.project.dir / name).read_text().endswith(f"merged body {k}\n")
    requests = server.requests_for(MEMORY_MODEL)
    merges = requests[1:]
    assert all(r.stream for r in requests)
    # Bounded: no request carries more than three of the 16 KiB bodies.
    assert 2 <= len(merges) <= 3
    assert all(len(json.dumps(r.body)) < 64 * 1024 for r in merges)


def _one_turn(words: str) -> Turn:
    return Turn(messages=[TurnMessage(role="user", text=words), TurnMessage(role="assistant", text="ok")])


async def test_a_merge_answer_without_json_is_asked_again_through_the_sdk_and_the_update_is_written(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    update = {
        "action": "update",
        "level": "project",
        "filename": "project_knowledge_a.md",
        "content": "new a",
    }
    merged = json.dumps({"merged": [{"key": "op0", "content": "old a, new a"}]})
    server.script(
        MEMORY_MODEL, text(json.dumps([update])), text("I merged it."), text("Done, merged."), text(merged)
    )
    m = Manager(stores, AnthropicCompletion(MEMORY_MODEL), sleep=_no_sleep, poll_interval=0.05, session="s")
    await m.start()
    job = await m.submit(_one_turn("a is new"))
    assert job is not None
    outcome = await m.wait_for(job.id, 30)
    await m.close(5)
    assert outcome.status == "done", outcome
    assert len(server.requests_for(MEMORY_MODEL)) == 4
    assert (stores.project.dir / "project_knowledge_a.md").read_text().endswith("old a, new a\n")
    assert not stores.history()[-1].rejected


async def test_a_merge_that_never_answers_json_through_the_sdk_leaves_the_job_failed_and_retryable(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    update = {
        "action": "update",
        "level": "project",
        "filename": "project_knowledge_a.md",
        "content": "new a",
    }
    server.script(MEMORY_MODEL, text(json.dumps([update])), *[text("Merged, all good.") for _ in range(3)])
    m = Manager(stores, AnthropicCompletion(MEMORY_MODEL), sleep=_no_sleep, poll_interval=0.05, session="s")
    await m.start()
    job = await m.submit(_one_turn("a is new"))
    assert job is not None
    outcome = await m.wait_for(job.id, 30)
    (view,) = await m.jobs()
    await m.close(5)
    assert outcome.status == "failed" and "merge answer held no JSON" in outcome.reason, outcome
    assert view.id == job.id and view.state == "failed"
    assert len(server.requests_for(MEMORY_MODEL)) == 4  # one extraction, three merges: the budget
    assert (stores.project.dir / "project_knowledge_a.md").read_text().endswith("old a\n")
    assert stores.history() == []  # nothing committed: the update was not dropped as a rejection
