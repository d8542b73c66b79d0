"""Where the Runner puts ``<memory-recall>`` and what it asks recall with, through the
real SDK against the fake Messages API, with a scripted recall source standing in for the search."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.agent.config.settings import load_settings
from app.agent.memory_bridge.heads import recall_query
from app.agent.runtime import Runtime
from memory.store.stores import MemoryStores
from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, http_error, text, tool_use
from tests.support.memtools import create

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

LINE = (
    "- [project_knowledge] Frobnicator calibration — Calibrate before each release. "
    "(project_knowledge_frob.md)"
)


@dataclass(frozen=True)
class Card:
    key: str
    line: str
    sha: str


class ScriptedRecall:
    """Recalls ``card`` for any message naming "frobnicator", unless it is shown or ``seen`` has its sha."""

    def __init__(self) -> None:
        self.card = Card("project/project_knowledge_frob.md", LINE, "sha-1")
        self.asked: list[tuple[str, set[str], dict[str, str]]] = []
        self.fail = False

    def recall(
        self, text: str, shown: Collection[str], seen: Mapping[str, str] | None = None, limit: int = 5
    ) -> list[Card]:
        self.asked.append((text, set(shown), dict(seen or {})))
        if self.fail:
            raise RuntimeError("the search cache is on fire")
        if (
            "frobnicator" not in text.lower()
            or self.card.key in shown
            or (seen or {}).get(self.card.key) == self.card.sha
        ):
            return []
        return [self.card]


@pytest.fixture
async def runtime(server: FakeAnthropic, ws: Path) -> AsyncIterator[Runtime]:
    rt = Runtime(load_settings({"memory_wait": 10, "memory_mode": "off"}), ws)
    await rt.open_session()
    yield rt
    await rt.close()


def _user_blocks(server: FakeAnthropic) -> list[str]:
    last = server.requests_for(MODEL)[-1].body["messages"][-1]
    assert last["role"] == "user"
    return [b["text"] for b in last["content"] if b.get("type") == "text"]


async def test_recall_block_heads_the_message_after_the_update_and_before_the_words(
    server: FakeAnthropic, runtime: Runtime, ws: Path
) -> None:
    recall = runtime.runner.recall = ScriptedRecall()
    server.script(MODEL, text("one"), text("two"), text("three"))
    assert (await runtime.runner.run("what's the weather?")).status == "completed"
    assert not any("<memory-recall>" in t for t in _user_blocks(server))
    system_1 = server.requests_for(MODEL)[-1].body["system"]

    MemoryStores(ws).apply([(0, create("project", "Landed meanwhile", "b"))], source="manual")
    assert (await runtime.runner.run("How do I calibrate the frobnicator?")).status == "completed"
    blocks = _user_blocks(server)
    assert blocks[0].startswith("<memory-update>")
    assert blocks[1] == f"<memory-recall>\n{LINE}\n</memory-recall>"
    assert blocks[2] == "How do I calibrate the frobnicator?"
    assert server.requests_for(MODEL)[-1].body["system"] == system_1  # the cached prefix holds
    # The index the model has (after the update) is what recall is told to skip.
    assert any(k.startswith("project/project_knowledge_landed") for k in recall.asked[-1][1])

    # Once per conversation: the same card is not named again while it is unchanged.
    assert (await runtime.runner.run("frobnicator again, please")).status == "completed"
    assert not any("<memory-recall>" in t for t in _user_blocks(server))
    assert recall.asked[-1][2] == {"project/project_knowledge_frob.md": "sha-1"}


async def test_a_changed_card_is_recalled_again(server: FakeAnthropic, runtime: Runtime) -> None:
    recall = runtime.runner.recall = ScriptedRecall()
    server.script(MODEL, text("one"), text("two"))
    await runtime.runner.run("the frobnicator")
    recall.card = Card(recall.card.key, LINE.replace("each release", "every build"), "sha-2")
    await runtime.runner.run("the frobnicator")
    assert _user_blocks(server)[0] == f"<memory-recall>\n{recall.card.line}\n</memory-recall>"


async def test_attached_file_contents_are_not_part_of_the_query_but_their_names_are(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    recall = runtime.runner.recall = ScriptedRecall()
    server.script(MODEL, text("ok"))
    message = (
        'see @lab/setup.txt\n<attached-file path="lab/setup.txt">the frobnicator is here</attached-file>'
    )
    await runtime.runner.run(message)
    asked = recall.asked[-1][0]
    assert "lab/setup.txt" in asked and "frobnicator" not in asked
    assert not any("<memory-recall>" in t for t in _user_blocks(server))
    assert recall_query('<attached-file path="a.py" cut="first 10 of 99 bytes">x') == " a.py "


async def test_a_failing_recall_never_fails_the_turn(server: FakeAnthropic, runtime: Runtime) -> None:
    recall = runtime.runner.recall = ScriptedRecall()
    recall.fail = True
    server.script(MODEL, text("still answered"))
    stop = await runtime.runner.run("the frobnicator")
    assert stop.status == "completed" and _user_blocks(server) == ["the frobnicator"]


async def test_a_dropped_turn_gives_its_recall_to_the_next_run(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    runtime.runner.recall = ScriptedRecall()
    server.script(MODEL, http_error(400, message="refused"), text("ok"))
    assert (await runtime.runner.run("the frobnicator")).status == "error"
    assert (await runtime.runner.run("the frobnicator, again")).status == "completed"
    assert _user_blocks(server)[0] == f"<memory-recall>\n{LINE}\n</memory-recall>"


async def test_a_sub_agent_gets_no_recall(server: FakeAnthropic, runtime: Runtime) -> None:
    recall = runtime.runner.recall = ScriptedRecall()
    server.script(
        MODEL,
        tool_use("task", {"description": "look", "prompt": "find the frobnicator"}),
        text("sub-agent done"),
        text("all done"),
    )
    assert (await runtime.runner.run("plain words")).status == "completed"
    assert [a[0] for a in recall.asked] == ["plain words"]
    sub = server.requests_for(MODEL)[1].body["messages"]
    assert "<memory-recall>" not in str(sub)


def _turn_ends(rt: Runtime) -> list[dict[str, object]]:
    assert rt.session is not None
    recs = [json.loads(line) for line in rt.session.path.read_text().splitlines() if line.strip()]
    return [r for r in recs if r["type"] == "turn_end"]


async def test_the_receipt_names_the_recalled_cards(server: FakeAnthropic, runtime: Runtime) -> None:
    runtime.runner.recall = ScriptedRecall()
    server.script(MODEL, text("one"), text("two"))
    await runtime.runner.run("plain words")
    await runtime.runner.run("the frobnicator")
    first, second = (end["memory"] for end in _turn_ends(runtime))
    assert "recalled" not in first  # type: ignore[operator]
    assert second["recalled"] == ["project/project_knowledge_frob.md"]  # type: ignore[index]


async def test_a_resumed_session_does_not_recall_what_it_recalled_before(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("one"), text("two"))
    rt = Runtime(load_settings({"memory_mode": "off"}), ws)
    try:
        await rt.open_session()
        rt.runner.recall = ScriptedRecall()
        await rt.runner.run("the frobnicator")
        assert _user_blocks(server)[0].startswith("<memory-recall>")
    finally:
        await rt.close()
    again = Runtime(load_settings({"memory_mode": "off"}), ws)
    try:
        await again.open_session(continue_latest=True)
        recall = again.runner.recall = ScriptedRecall()
        await again.runner.run("the frobnicator, once more")
        assert not any("<memory-recall>" in t for t in _user_blocks(server))
        assert "project/project_knowledge_frob.md" in recall.asked[-1][1]
    finally:
        await again.close()


async def test_before_its_request_a_run_leaves_the_event_loop_twice(
    server: FakeAnthropic, runtime: Runtime, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each trip to a thread ends when the loop is next free: in the app, after the frame the
    # screen is drawing. The index update and recall are one trip, the turn's start and its
    # user message in the session file another; then the request goes out.
    import asyncio

    runtime.runner.recall = ScriptedRecall()
    server.script(MODEL, text("one"), text("two"))
    assert (await runtime.runner.run("first")).status == "completed"
    MemoryStores(ws).apply([(0, create("project", "Landed meanwhile", "b"))], source="manual")
    trips: list[str] = []
    real = asyncio.to_thread

    async def counted(fn: object, *args: object, **kw: object) -> object:
        if not server.requests_for(MODEL)[1:]:
            trips.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(asyncio, "to_thread", counted)
    assert (await runtime.runner.run("How do I calibrate the frobnicator?")).status == "completed"
    assert trips == ["_heads", "open_turn"], trips
    blocks = _user_blocks(server)
    assert blocks[0].startswith("<memory-update>") and blocks[1].startswith("<memory-recall>")
