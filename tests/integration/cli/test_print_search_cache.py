"""Print mode and the search cache: a damaged cache is rebuilt, said in one line on
stderr, and the turn goes on; recall works from a cold process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.constants import Level
from memory.search.cache import cache_path
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL, MODEL, run_cli
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.memtools import trust_workspace, write_note

pytestmark = pytest.mark.timeout(90)


def _user_texts(server: FakeAnthropic) -> list[str]:
    last = server.requests_for(MODEL)[-1].body["messages"][-1]
    return [b["text"] for b in last["content"] if b.get("type") == "text"]


def _cards(ws: Path, n: int) -> MemoryStores:
    stores = MemoryStores(os.path.realpath(ws))
    trust_workspace(ws)
    for i in range(n):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_filler-{i:04d}.md",
            f"Filler card {i}",
            "Build notes about the parser and the release.",
            summary="x" * 90,
        )
    write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_zz-lab.md",
        "Lab bench",
        "The frobnicator must be calibrated before each release.",
        summary="hardware",
    )
    return stores


def test_a_damaged_cache_is_rebuilt_with_one_line_and_the_turn_still_recalls(
    server: FakeAnthropic, ws: Path
) -> None:
    stores = _cards(ws, 300)  # over the index budget: the lab card sorts last and is cut
    server.script(MODEL, text("one"), text("two"))
    server.script(MEMORY_MODEL, text("[]"), text("[]"))
    first = run_cli(server, ws, "-p", "How do I calibrate the frobnicator?", "--memory", "off")
    assert first.code == 0, first.err
    recall = [t for t in _user_texts(server) if t.startswith("<memory-recall>")]
    assert len(recall) == 1 and "(project_knowledge_zz-lab.md)" in recall[0]
    assert "search cache" not in first.err

    path = cache_path(os.environ["PSEUDOCLAUDE_HOME"], stores.project.dir)
    data = bytearray(path.read_bytes())
    data[:100] = b"\xff" * 100  # the SQLite header: the file is no database any more
    path.write_bytes(bytes(data))
    second = run_cli(server, ws, "-p", "the frobnicator again?", "--memory", "off")
    assert second.code == 0, second.err
    notices = [line for line in second.err.splitlines() if "search cache" in line]
    assert len(notices) == 1 and "rebuilt from the cards" in notices[0], second.err
    assert any(
        "(project_knowledge_zz-lab.md)" in t for t in _user_texts(server) if t.startswith("<memory-recall>")
    )
