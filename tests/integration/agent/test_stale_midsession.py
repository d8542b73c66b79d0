"""A card that goes stale or fresh during a session reaches the next Run as a ``<memory-update>``,
and the cached system prompt stays byte-identical; a session opened after the
change marks the card's line in its system prompt, which tells the model to re-check it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agent.config.settings import load_settings
from app.agent.runtime import Runtime
from memory.store.stores import MemoryStores
from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.memtools import create

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

MARK = " (stale: Makefile changed since this card was written)"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree whose Makefile is tracked, with a trusted project card citing it."""
    w = tmp_path / "repo"
    w.mkdir()
    subprocess.run(["git", "init", "-q", str(w)], check=True)
    (w / "Makefile").write_text("all:\n\techo hi\n")
    subprocess.run(["git", "-C", str(w), "add", "Makefile"], check=True)
    return Path(os.path.realpath(w))


def make_card(ws: Path) -> tuple[str, str]:
    """The card's filename and its unmarked index line."""
    stores = MemoryStores(ws)
    stores.trust_project()
    made = stores.apply(
        [(0, create("project", "Build", "Run make all.", summary="make all", cites=("Makefile",)))],
        source="manual",
    )
    [applied] = made.applied
    [line] = stores.index_lines("project")
    return applied.filename, line


@pytest.fixture
async def runtime(repo: Path) -> AsyncIterator[Runtime]:
    make_card(repo)
    # Memory "off": no extraction (nothing else writes the store), the index still reaches the model.
    rt = Runtime(load_settings({"memory_mode": "off"}), repo)
    await rt.open_session()
    yield rt
    await rt.close()


def _system(server: FakeAnthropic, i: int) -> str:
    return json.dumps(server.requests_for(MODEL)[i].body["system"])


def _prompt(server: FakeAnthropic, i: int) -> str:
    return "\n".join(block["text"] for block in server.requests_for(MODEL)[i].body["system"])


def _first_text(server: FakeAnthropic, i: int) -> str:
    return str(server.requests_for(MODEL)[i].body["messages"][-1]["content"][0]["text"])


async def test_a_card_going_stale_then_fresh_mid_session_reaches_the_next_runs_as_updates(
    server: FakeAnthropic, runtime: Runtime, repo: Path
) -> None:
    [line] = await asyncio.to_thread(runtime.stores.index_lines, "project")
    server.script(MODEL, text("one"), text("two"), text("three"), text("four"))
    assert (await runtime.runner.run("first")).status == "completed"
    assert f"\n{line}\n" in _prompt(server, 0) and "(stale: Makefile" not in _prompt(server, 0)
    assert _first_text(server, 0) == "first"

    (repo / "Makefile").write_text("all:\n\techo changed, and longer\n")
    assert (await runtime.runner.run("second")).status == "completed"
    update = _first_text(server, 1)
    assert update.startswith("<memory-update>")
    assert f"Changed (project), now:\n{line}{MARK}\n" in update
    assert _system(server, 1) == _system(server, 0), "the cached prefix must not change within a session"

    name = line.rsplit("(", 1)[1].rstrip(")")
    await asyncio.to_thread(runtime.stores.confirm, "project", name)
    assert (await runtime.runner.run("third")).status == "completed"
    update = _first_text(server, 2)
    assert update.startswith("<memory-update>")
    assert f"Changed (project), now:\n{line}\n" in update and MARK not in update
    assert _system(server, 2) == _system(server, 0)

    # Nothing changed since: no update block.
    assert (await runtime.runner.run("fourth")).status == "completed"
    assert _first_text(server, 3) == "fourth"


async def test_a_card_restored_to_its_cited_content_goes_fresh_again(
    server: FakeAnthropic, runtime: Runtime, repo: Path
) -> None:
    original = (repo / "Makefile").read_bytes()
    server.script(MODEL, text("one"), text("two"), text("three"))
    await runtime.runner.run("first")
    (repo / "Makefile").write_text("broken\n")
    await runtime.runner.run("second")
    assert MARK in _first_text(server, 1)
    (repo / "Makefile").write_bytes(original)
    await runtime.runner.run("third")
    update = _first_text(server, 2)
    assert "Changed (project), now:" in update and MARK not in update
    assert _system(server, 2) == _system(server, 0)


async def test_a_session_opened_after_the_change_marks_the_line_and_says_to_recheck(
    server: FakeAnthropic, repo: Path
) -> None:
    _, line = make_card(repo)
    (repo / "Makefile").write_text("all:\n\techo changed\n")
    rt = Runtime(load_settings({"memory_mode": "off"}), repo)
    try:
        await rt.open_session()
        server.script(MODEL, text("one"))
        await rt.runner.run("hi")
    finally:
        await rt.close()
    prompt = _prompt(server, 0)
    assert f"\n{line}{MARK}\n" in prompt
    assert "(stale: …)" in prompt and "re-check it against the code before relying on it" in prompt
    assert "read_memory shows its citations and their state above the body" in prompt
    assert _first_text(server, 0) == "hi"  # the mark is in the prompt, not repeated as an update
