"""Recall beyond the prompt's index, end to end: the real Runtime and Runner, the real
SDK against the fake Messages API, 2,000 cards and one about a topic named only in its body.

A turn about something else recalls nothing; a turn about the topic carries the card's index line
in a ``<memory-recall>`` block at the head of its user message while the system prompt stays
byte-identical; it is not recalled twice in a session unless the card changed; the model finds
it with ``search_memory``. An untrusted project store is never recalled nor searched."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.runtime import Runtime
from app.agent.tools.builtin.search_memory import NO_MATCH, UNTRUSTED_NOTE
from memory.constants import Level
from memory.store.index import index_keys, recall_block
from memory.store.stores import MemoryStores
from memory.store.trust import UNTRUSTED_REASON
from tests.support.clitools import MODEL, result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.memtools import trust_workspace, write_note

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("sdk_env")]

CARDS = 2000
# Sorts last among equals: never in the cut index of 2,000 cards.
TOPIC = "project_knowledge_zz-lab-bench.md"
TOPIC_LINE = f"- [project_knowledge] Lab bench — hardware on the shelf ({TOPIC})"
BODY = "The frobnicator calibration runs before each release; the jig is in drawer 3.\n"
ASK = "How does the frobnicator calibration work?"


@pytest.fixture(scope="module")
def filler(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project store folder of the 1,999 other cards, written once and copied into each test."""
    root = tmp_path_factory.mktemp("filler")
    (root / "ws" / ".git").mkdir(parents=True)
    stores = MemoryStores(root / "ws", root / "home")
    for i in range(CARDS - 1):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_n{i:04d}.md",
            f"Note {i}",
            f"Release and build notes, part {i}.\n",
            summary=f"part {i}",
        )
    return stores.project.dir


def _seed(ws: Path, filler: Path, *, trusted: bool) -> MemoryStores:
    if trusted:
        trust_workspace(ws)
    stores = MemoryStores(ws)
    shutil.copytree(filler, stores.project.dir)
    _write_topic(stores, BODY)
    return stores


def _write_topic(stores: MemoryStores, body: str) -> None:
    # The topic is named only in the body: the title and summary say nothing of it.
    write_note(stores, Level.PROJECT, TOPIC, "Lab bench", body, summary="hardware on the shelf")


async def _runtime(ws: Path) -> Runtime:
    # Memory "off": no extraction; the index, recall and the memory tools work as ever.
    rt = Runtime(load_settings({"memory_mode": "off"}), ws)
    await rt.open_session()
    return rt


@pytest.fixture
def repo(ws: Path) -> Path:
    return Path(os.path.realpath(ws))


@pytest.fixture
async def runtime(repo: Path, filler: Path) -> AsyncIterator[Runtime]:
    _seed(repo, filler, trusted=True)
    rt = await _runtime(repo)
    yield rt
    await rt.close()


@pytest.fixture
async def untrusted(repo: Path, filler: Path) -> AsyncIterator[Runtime]:
    _seed(repo, filler, trusted=False)
    rt = await _runtime(repo)
    yield rt
    await rt.close()


def _request(server: FakeAnthropic, i: int) -> dict[str, Any]:
    return server.requests_for(MODEL)[i].body


def _user_texts(server: FakeAnthropic, i: int) -> list[str]:
    """The text blocks of request ``i``'s last user message."""
    return [b["text"] for b in _request(server, i)["messages"][-1]["content"] if b.get("type") == "text"]


def _system(server: FakeAnthropic, i: int) -> str:
    return json.dumps(_request(server, i)["system"])


async def _turn(rt: Runtime, prompt: str) -> None:
    stop = await rt.runner.run(prompt)
    assert stop.status == "completed", stop.message


async def test_a_card_beyond_the_index_is_recalled_once_and_again_after_it_changed(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    assert f"project/{TOPIC}" not in index_keys(runtime.runner.shown_index), (
        "the card must be beyond the index"
    )
    server.script(MODEL, *(text(f"answer {i}") for i in range(5)))

    await _turn(runtime, "Which shell does the deploy script use?")
    assert _user_texts(server, 0) == ["Which shell does the deploy script use?"]

    await _turn(runtime, ASK)
    first, asked = _user_texts(server, 1)
    assert first == recall_block([TOPIC_LINE]) and asked == ASK
    assert f"\n{TOPIC_LINE}\n" in first
    assert _system(server, 1) == _system(server, 0), "recall must not touch the cached system prompt"

    await _turn(runtime, f"{ASK} Tell me again.")
    assert _user_texts(server, 2) == [f"{ASK} Tell me again."], "recalled once per session"

    # A hand edit of the body (the watcher would say so: mark_changed) makes it new again.
    await asyncio.to_thread(_write_topic, runtime.stores, BODY.replace("drawer 3", "drawer 4"))
    runtime.search.mark_changed("project")
    await _turn(runtime, ASK)
    assert _user_texts(server, 3) == [recall_block([TOPIC_LINE]), ASK]

    await _turn(runtime, ASK)
    assert _user_texts(server, 4) == [ASK]
    systems = {_system(server, i) for i in range(5)}
    assert len(systems) == 1


async def test_the_model_finds_the_card_with_search_memory(server: FakeAnthropic, runtime: Runtime) -> None:
    server.script(
        MODEL,
        tool_use("search_memory", {"query": "frobnicator calibration"}),
        tool_use("search_memory", {"query": "frobnicator", "level": "user"}),
        tool_use("search_memory", {"query": "frobnicator", "limit": 99}),
        text("found it"),
    )
    await _turn(runtime, "Look through the memory for the lab hardware.")
    found, user_only, bad = tool_results(server.requests_for(MODEL)[3])
    assert result_text(found).split("\n")[0] == f"project: {TOPIC_LINE}" and not found.get("is_error")
    assert result_text(user_only) == NO_MATCH
    assert bad.get("is_error") and "'limit' must be at most 50" in result_text(bad)


async def test_an_untrusted_project_store_is_never_recalled_nor_searched(
    server: FakeAnthropic, untrusted: Runtime
) -> None:
    server.script(
        MODEL,
        tool_use("search_memory", {"query": "frobnicator calibration"}),
        tool_use("search_memory", {"query": "frobnicator calibration", "level": "project"}),
        text("nothing"),
    )
    await _turn(untrusted, ASK)
    assert _user_texts(server, 0) == [ASK]
    both, project = tool_results(server.requests_for(MODEL)[2])
    assert result_text(both) == f"{NO_MATCH}\n{UNTRUSTED_NOTE}"
    assert project.get("is_error") and result_text(project) == UNTRUSTED_REASON
    for req in server.requests_for(MODEL):
        sent = json.dumps(req.body)
        assert TOPIC not in sent and "drawer" not in sent, "nothing of the untrusted card reaches the model"
