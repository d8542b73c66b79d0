"""Receipts: a turn's read_memory of a card counts a read under $PSEUDOCLAUDE_HOME
without touching the card file, and the session log's turn_end records the cards shown, read and
stale, for every way a turn ends (the real SDK against the fake Messages API)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.conversation.session_store import SessionStore
from app.agent.runtime import Runtime
from app.agent.turn.events import RunStop, ToolCallFinished
from memory.store.stores import MemoryStores
from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, http_error, text, tool_use
from tests.support.memtools import create

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree with a tracked Makefile; a trusted project card cites it, another cites
    nothing, and the user store has one card."""
    w = tmp_path / "repo"
    w.mkdir()
    subprocess.run(["git", "init", "-q", str(w)], check=True)
    (w / "Makefile").write_text("all:\n\techo hi\n")
    subprocess.run(["git", "-C", str(w), "add", "Makefile"], check=True)
    w = Path(os.path.realpath(w))
    stores = MemoryStores(w)
    stores.trust_project()
    made = stores.apply(
        [
            (0, create("project", "Build", "Run make all.", summary="make all", cites=("Makefile",))),
            (1, create("project", "Style", "Four spaces.")),
            (2, create("user", "Tone", "Be brief.", type_="user_preference")),
        ],
        source="manual",
    )
    assert [a.filename for a in made.applied] == [BUILD, STYLE, TONE]
    return w


BUILD = "project_knowledge_build.md"
STYLE = "project_knowledge_style.md"
TONE = "user_preference_tone.md"
SHOWN = [f"project/{BUILD}", f"project/{STYLE}", f"user/{TONE}"]


async def _runtime(repo: Path, **settings: Any) -> Runtime:
    # Memory "off": no extraction requests; the index and read_memory work as ever.
    rt = Runtime(load_settings({"memory_mode": "off", **settings}), repo)
    await rt.open_session()
    return rt


@pytest.fixture
async def runtime(repo: Path) -> AsyncIterator[Runtime]:
    rt = await _runtime(repo)
    yield rt
    await rt.close()


def read(filename: str, level: str = "project") -> Any:
    return tool_use("read_memory", {"level": level, "filename": filename})


def turn_ends(rt: Runtime) -> list[dict[str, Any]]:
    assert rt.session is not None
    recs = [json.loads(line) for line in rt.session.path.read_text().splitlines()]
    return [r for r in recs if r["type"] == "turn_end"]


def _results(events: list[object]) -> list[ToolCallFinished]:
    return [e for e in events if isinstance(e, ToolCallFinished)]


async def test_a_read_of_a_stale_card_counts_leaves_the_card_file_alone_and_is_on_the_receipt(
    server: FakeAnthropic, runtime: Runtime, repo: Path
) -> None:
    card = runtime.stores.project.dir / BUILD
    before = card.read_bytes()
    assert await asyncio.to_thread(runtime.stores.usage_of, "project") == {}
    gate = server.gate()
    server.script(
        MODEL,
        tool_use("read_memory", {"level": "project", "filename": BUILD}, hold_before=gate),
        text("done"),
    )
    events: list[object] = []
    task = asyncio.create_task(runtime.runner.run("how do I build?", events.append))
    # The Run was shown the card fresh; the Makefile changes before the model reads the card.
    assert await gate.wait_reached_async(30)
    (repo / "Makefile").write_text("all:\n\techo changed\n")
    gate.release()
    stop = await task
    assert stop.status == "completed", stop.message
    [finished] = _results(events)
    assert not finished.result.is_error and "This card is STALE" in finished.result.content
    use = (await asyncio.to_thread(runtime.stores.usage_of, "project"))[BUILD]
    assert use.reads == 1 and use.last_read.endswith("Z")
    assert card.read_bytes() == before, "a read must never change a shared card file"
    [end] = turn_ends(runtime)
    assert end["memory"] == {"shown": SHOWN, "read": [f"project/{BUILD}"], "stale": [f"project/{BUILD}"]}


async def test_the_receipt_takes_a_stale_mark_from_the_index_the_run_was_shown(
    server: FakeAnthropic, runtime: Runtime, repo: Path
) -> None:
    server.script(MODEL, text("one"), read(STYLE), read(STYLE), read(TONE, "user"), text("two"))
    await runtime.runner.run("first")
    (repo / "Makefile").write_text("all:\n\techo changed\n")
    await runtime.runner.run("second")  # its update block marks the Build card stale
    first, second = turn_ends(runtime)
    assert first["memory"] == {"shown": SHOWN, "read": [], "stale": []}
    # Reads in order, each once; the card read twice counts twice.
    assert second["memory"] == {
        "shown": SHOWN,
        "read": [f"project/{STYLE}", f"user/{TONE}"],
        "stale": [f"project/{BUILD}"],
    }
    assert (await asyncio.to_thread(runtime.stores.usage_of, "project"))[STYLE].reads == 2
    assert (await asyncio.to_thread(runtime.stores.usage_of, "user"))[TONE].reads == 1


async def test_reading_the_index_or_a_missing_card_counts_nothing_and_is_no_read(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, read("MEMORY.md"), read("gone.md"), text("done"))
    events: list[object] = []
    await runtime.runner.run("list", events.append)
    index, missing = _results(events)
    assert not index.result.is_error and missing.result.is_error
    assert await asyncio.to_thread(runtime.stores.usage_of, "project") == {}
    assert turn_ends(runtime)[0]["memory"]["read"] == []


async def test_a_sub_agents_reads_count_and_are_the_turns(server: FakeAnthropic, runtime: Runtime) -> None:
    server.script(
        MODEL,
        tool_use("task", {"description": "look", "prompt": "read the build card"}),
        read(BUILD),  # the sub-agent's request
        text("it says make all"),  # the sub-agent's answer
        text("make all"),
    )
    stop = await runtime.runner.run("ask a sub-agent")
    assert stop.status == "completed", stop.message
    assert (await asyncio.to_thread(runtime.stores.usage_of, "project"))[BUILD].reads == 1
    assert turn_ends(runtime)[0]["memory"]["read"] == [f"project/{BUILD}"]


@pytest.mark.parametrize("damage", ["usage is a file", "garbage database"])
async def test_a_failing_usage_database_never_fails_the_tool_call_or_the_turn(
    server: FakeAnthropic, repo: Path, damage: str
) -> None:
    usage = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "usage"
    if damage == "usage is a file":
        usage.write_text("not a folder\n")
    else:
        usage.mkdir(exist_ok=True)
        (usage / "usage.sqlite3").write_bytes(b"this is not SQLite\x00" * 200)
    rt = await _runtime(repo)
    try:
        server.script(MODEL, read(BUILD), text("done"))
        events: list[object] = []
        stop = await rt.runner.run("how do I build?", events.append)
        assert stop.status == "completed", stop.message
        [finished] = _results(events)
        assert not finished.result.is_error and finished.result.content.endswith("Run make all.\n")
        assert turn_ends(rt)[0]["memory"]["read"] == [f"project/{BUILD}"]
    finally:
        await rt.close()


async def test_every_ending_records_the_receipt(server: FakeAnthropic, repo: Path) -> None:
    rt = await _runtime(repo, max_iterations=2)
    try:
        # error: the API refuses the request after a read
        server.script(MODEL, read(BUILD), http_error(400, "invalid_request_error", "refused"))
        assert (await rt.runner.run("one")).status == "error"
        # max_iterations: two requests, both calling a tool
        server.script(MODEL, read(STYLE), read(BUILD))
        assert (await rt.runner.run("two")).status == "max_iterations"
        # cancelled: while the request after a read is held
        gate = server.gate()
        server.script(MODEL, read(TONE, "user"), text("never", hold_before=gate))
        stops: list[RunStop] = []
        task = asyncio.create_task(
            rt.runner.run("three", lambda e: stops.append(e) if isinstance(e, RunStop) else None)
        )
        assert await gate.wait_reached_async(30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.release()
        ends = turn_ends(rt)
        assert [e["status"] for e in ends] == ["error", "max_iterations", "cancelled"]
        assert [e["memory"]["read"] for e in ends] == [
            [f"project/{BUILD}"],
            [f"project/{STYLE}", f"project/{BUILD}"],
            [f"user/{TONE}"],
        ]
        assert all(e["memory"]["shown"] == SHOWN for e in ends)
        # A resumed session loads the receipts' log as ever: the same conversation.
        conversation = rt.runner.conversation
        assert rt.session is not None
        sid = rt.session.id
    finally:
        await rt.close()
    restored = await asyncio.to_thread(SessionStore().open, sid)
    assert restored.messages == conversation and not restored.warnings
