"""Grounded extraction through the real SDK against the fake Messages API: the request lists the
turn's file paths (nothing else of a tool call) and the stale cards; the model's cites are kept
confined, with real content ids, and the rest reach the job's event with a reason."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agent.config.settings import load_settings
from app.agent.memory_bridge.completion import AnthropicCompletion
from app.agent.permissions.gate import RunAllowances
from app.agent.runtime import Runtime
from memory.constants import Level, MemoryMode
from memory.events import JobApplied, MemoryEvent
from memory.jobs.manager import Manager
from memory.model import Turn, TurnMessage
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL, MODEL, system_text, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.memtools import create, trust_workspace

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]


async def _no_sleep(_: float) -> None:
    return None


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ws), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git work tree with a tracked Makefile and src/app.py, its project store trusted."""
    ws = tmp_path / "repo"
    ws.mkdir()
    _git(ws, "init", "-q")
    (ws / "Makefile").write_text("all:\n\techo OLDSTRING\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("x = 'FILECONTENTMARK'\ny = 2\n")
    _git(ws, "add", ".")
    real = Path(os.path.realpath(ws))
    trust_workspace(real)
    return real


@pytest.fixture
async def manager(repo: Path) -> AsyncIterator[tuple[Manager, list[MemoryEvent]]]:
    stores = MemoryStores(repo)
    completion = AnthropicCompletion(MEMORY_MODEL)
    m = Manager(stores, completion, sleep=_no_sleep, poll_interval=0.05, session="s")
    events: list[MemoryEvent] = []
    m.subscribe(events.append)
    await m.start()
    yield m, events
    await m.close(5)
    # Closed on this loop: left to the collector, the SDK would close it on a later test's loop.
    await completion.aclose()


def _turn(words: str, paths: list[str] | None = None) -> Turn:
    return Turn(
        messages=[TurnMessage(role="user", text=words), TurnMessage(role="assistant", text="ok")],
        paths=paths or [],
    )


async def _run_job(m: Manager, turn: Turn) -> None:
    job = await m.submit(turn)
    assert job is not None
    outcome = await m.wait_for(job.id, 30)
    assert outcome.status == "done", outcome


def _extraction_prompt(server: FakeAnthropic, k: int = 0) -> str:
    body = server.requests_for(MEMORY_MODEL)[k].body
    contents = [m["content"] for m in body["messages"]]
    return "\n".join(
        c if isinstance(c, str) else "\n".join(str(b.get("text", "")) for b in c) for c in contents
    )


async def test_the_extraction_request_lists_the_turns_paths_and_nothing_else_of_its_tool_calls(
    server: FakeAnthropic, repo: Path
) -> None:
    rt = Runtime(
        load_settings({"memory_wait": 10}), repo, allowances=RunAllowances(allowed={"bash", "edit_file"})
    )
    await rt.open_session()
    try:
        server.script(
            MODEL,
            tool_use("read_file", {"path": "src/app.py"}),
            tool_use("grep", {"pattern": "SECRETPATTERN", "path": "src"}),
            tool_use("edit_file", {"path": "Makefile", "old_string": "OLDSTRING", "new_string": "NEWSTRING"}),
            tool_use("bash", {"command": "echo BASHMARK"}),
            text("Done."),
        )
        server.script(MEMORY_MODEL, text("[]"))
        stop = await rt.runner.run("tidy the build please")
        assert await rt.manager.wait_for(stop.job_id, 10)
    finally:
        await rt.close()
    # The tools really ran: their results reached the main model (and only it).
    results = json.dumps(tool_results(server.requests_for(MODEL)[-1]))
    assert "FILECONTENTMARK" in results and "BASHMARK" in results
    assert "NEWSTRING" in (repo / "Makefile").read_text()
    prompt = _extraction_prompt(server)
    files = prompt[prompt.index("<files>\n") : prompt.index("</files>")]
    assert files.split("\n")[1:4] == ["src/app.py", "src", "Makefile"]
    sent = json.dumps(server.requests_for(MEMORY_MODEL)[0].body)
    for mark in ("SECRETPATTERN", "OLDSTRING", "NEWSTRING", "BASHMARK", "FILECONTENTMARK"):
        assert mark not in sent, mark


async def test_the_extraction_request_lists_a_stale_card_with_its_reason(
    server: FakeAnthropic, repo: Path, manager: tuple[Manager, list[MemoryEvent]]
) -> None:
    m, _ = manager
    made = m.stores.apply(
        [(0, create("project", "Build", "Run make all.", cites=("Makefile",)))], source="manual"
    )
    name = made.applied[0].filename
    fresh = create("project", "App", "x is set.", cites=("src/app.py",))
    m.stores.apply([(0, fresh)], source="manual")
    (repo / "Makefile").write_text("all:\n\techo changed\n")
    server.script(MEMORY_MODEL, text("[]"), text("[]"))
    await _run_job(m, _turn("what does make do?"))
    prompt = _extraction_prompt(server)
    stale = prompt[
        prompt.index("<stale-notes>\n") + len("<stale-notes>\n") : prompt.index("\n</stale-notes>")
    ]
    assert stale == f"{name} \u2014 Makefile changed since this card was written"
    # Confirmed ("still true"), the card is no longer listed: the list is what stands now.
    await asyncio.to_thread(m.stores.confirm, Level.PROJECT, name)
    await _run_job(m, _turn("and now?"))
    assert "<stale-notes>" not in _extraction_prompt(server, 1)


async def test_cites_are_kept_confined_with_real_blob_ids_and_the_dropped_ones_reach_the_event(
    server: FakeAnthropic, repo: Path, manager: tuple[Manager, list[MemoryEvent]]
) -> None:
    m, events = manager
    op = {
        "action": "create",
        "level": "project",
        "type": "project_knowledge",
        "title": "Build entry",
        "content": "x is set at the top of src/app.py; make all builds.",
        "cites": ["src/app.py:1-2", "../x", {"path": "Makefile", "blob": "0" * 40}],
    }
    server.script(MEMORY_MODEL, text(json.dumps([op])))
    await _run_job(m, _turn("where is x set?", ["src/app.py", "Makefile"]))
    applied = [e for e in events if isinstance(e, JobApplied)]
    assert len(applied) == 1 and len(applied[0].applied) == 1
    note = m.stores.read_note(Level.PROJECT, applied[0].applied[0].filename)
    cites = [(c.path, c.lines, c.blob) for c in note.meta.cites]
    assert cites == [
        ("src/app.py", "1-2", _git(repo, "hash-object", "src/app.py")),
        ("Makefile", None, _git(repo, "hash-object", "Makefile")),
    ]
    dropped = applied[0].dropped_cites
    assert [(d.index, d.cite) for d in dropped] == [(0, "../x")]
    assert "workspace" in dropped[0].reason or ".." in dropped[0].reason, dropped[0].reason
    # The request asked for cites and offered the turn's files to cite from.
    request = server.requests_for(MEMORY_MODEL)[0]
    assert '"cites": ["Makefile", "src/app.py:10-40"]' in system_text(request)
    assert "<files>\nsrc/app.py\nMakefile\n</files>" in _extraction_prompt(server)


async def test_a_merged_update_replaces_cites_when_it_gives_them_and_keeps_them_when_it_does_not(
    server: FakeAnthropic, repo: Path, manager: tuple[Manager, list[MemoryEvent]]
) -> None:
    m, _ = manager
    made = m.stores.apply(
        [(0, create("project", "Build", "Run make all.", cites=("Makefile",)))], source="manual"
    )
    name = made.applied[0].filename

    def cites() -> list[tuple[str, str | None]]:
        return [(c.path, c.lines) for c in m.stores.read_note(Level.PROJECT, name).meta.cites]

    keep = {"action": "update", "level": "project", "filename": name, "content": "also: make clean"}
    merged = json.dumps({"merged": [{"key": "op0", "content": "Run make all; make clean cleans."}]})
    server.script(MEMORY_MODEL, text(json.dumps([keep])), text(merged))
    await _run_job(m, _turn("make clean cleans"))
    assert m.stores.read_note(Level.PROJECT, name).body.startswith("Run make all; make clean cleans.")
    assert cites() == [("Makefile", None)]

    replace = {**keep, "content": "x lives in app.py", "cites": ["src/app.py:1-1"]}
    merged = json.dumps({"merged": [{"key": "op0", "content": "Run make all; x lives in src/app.py."}]})
    server.script(MEMORY_MODEL, text(json.dumps([replace])), text(merged))
    await _run_job(m, _turn("x is in app.py", ["src/app.py"]))
    assert m.stores.read_note(Level.PROJECT, name).body.startswith("Run make all; x lives in src/app.py.")
    assert cites() == [("src/app.py", "1-1")]


async def test_an_approved_held_create_keeps_its_cites_and_its_dropped_ones_reach_the_event(
    server: FakeAnthropic, repo: Path
) -> None:
    completion = AnthropicCompletion(MEMORY_MODEL)
    m = Manager(
        MemoryStores(repo),
        completion,
        sleep=_no_sleep,
        poll_interval=0.05,
        session="s",
        mode=MemoryMode.REVIEW,
    )
    events: list[MemoryEvent] = []
    m.subscribe(events.append)
    await m.start()
    try:
        op = {
            "action": "create",
            "level": "project",
            "type": "project_knowledge",
            "title": "Build",
            "content": "make all builds.",
            "cites": ["Makefile", ".git/config"],
        }
        server.script(MEMORY_MODEL, text(json.dumps([op])))
        job = await m.submit(_turn("how to build?", ["Makefile"]))
        assert job is not None
        held = await m.wait_for(job.id, 30)
        assert held.status == "held", held
        await m.approve(job.id)
    finally:
        await m.close(5)
        await completion.aclose()
    applied = [e for e in events if isinstance(e, JobApplied)]
    assert len(applied) == 1 and len(applied[0].applied) == 1
    assert [d.cite for d in applied[0].dropped_cites] == [".git/config"]
    note = m.stores.read_note(Level.PROJECT, applied[0].applied[0].filename)
    assert [c.path for c in note.meta.cites] == ["Makefile"]
