"""The memory an MCP client is served (app/services/served_memory.py), in this process: the tool
list and its schemas, the client's name as a card's source, remember's refusals, and a held
note approved like any review-mode job."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.tools import api_tools
from app.services.served_memory import NO_NOTES, NO_PROJECT_LEVEL, ServedMemory, mcp_source
from memory.constants import MAX_CONTENT_BYTES, Level, MemoryMode
from memory.jobs.review import Review
from memory.jobs.spool import Spool
from memory.store.index import index_as_prompted
from memory.store.stores import MemoryStores
from memory.store.trust import UNTRUSTED_REASON
from tests.support.memtools import make_env, write_note

NOTE = {"level": "user", "type": "user_preference", "title": "Tabs", "content": "Indent with tabs."}


@pytest.fixture
def stores(tmp_path: Path) -> MemoryStores:
    return make_env(tmp_path)


def test_the_client_name_becomes_one_safe_line_of_the_source() -> None:
    assert mcp_source("claude-code") == "mcp:claude-code"
    assert mcp_source(None) == mcp_source("") == mcp_source(" \n ") == "mcp:unknown"
    hostile = mcp_source("evil\x1b]0;title\x07\nsource: manual AKIAIOSFODNN7EXAMPLE " + "x" * 200)
    assert hostile.startswith("mcp:evil") and "\n" not in hostile and "\x1b" not in hostile
    assert "AKIAIOSFODNN7EXAMPLE" not in hostile and len(hostile) <= len("mcp:") + 64


def test_the_tools_are_listed_with_the_agents_schemas_and_remember_only_when_asked(
    stores: MemoryStores,
) -> None:
    reading = ServedMemory(stores)
    review = ServedMemory(stores, remember_mode=MemoryMode.REVIEW)
    auto = ServedMemory(stores, remember_mode=MemoryMode.AUTO)
    try:
        assert [t.name for t in reading.tools()] == ["memory_index", "read_memory", "search_memory"]
        agent = {t["name"]: t["input_schema"] for t in api_tools(["read_memory", "search_memory"])}
        assert {t.name: t.input_schema for t in reading.tools()[1:]} == agent
        assert reading.tools()[0].input_schema["properties"] == {}
        held, applied = review.tools()[-1], auto.tools()[-1]
        assert held.name == applied.name == "remember" and not held.read_only
        assert "held for review" in held.description and "saved at once" in applied.description
        assert held.input_schema["required"] == ["level", "type", "title", "content"]
    finally:
        for served in (reading, review, auto):
            served.close()


async def test_the_index_is_the_prompts_and_an_empty_one_says_so(stores: MemoryStores) -> None:
    served = ServedMemory(stores)
    try:
        assert await served.index() == NO_NOTES
        write_note(stores, Level.USER, "user_preference_tabs.md", "Tabs", "tabs")
        assert await served.index() == index_as_prompted(stores.prompt_index().text)
        assert await served.call("no_such_tool", {}, client="x") is None
        assert await served.call("remember", NOTE, client="x") is None  # not asked for: no such tool
    finally:
        served.close()


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({**NOTE, "content": None}, "missing required input 'content'"),
        ({**NOTE, "title": ""}, "input 'title' must not be empty"),
        ({**NOTE, "level": 3}, "input 'level' must be a string, not an integer"),
        ({**NOTE, "type": "gossip"}, "type must be one of"),
        ({**NOTE, "content": "x" * (MAX_CONTENT_BYTES + 1)}, "16384"),
    ],
)
async def test_a_bad_note_is_refused_in_one_line_and_nothing_is_written(
    stores: MemoryStores, arguments: dict[str, object], reason: str
) -> None:
    served = ServedMemory(stores, remember_mode=MemoryMode.AUTO)
    try:
        answer = await served.call("remember", arguments, client="probe")
    finally:
        served.close()
    assert answer is not None and answer.is_error and reason in answer.text and "\n" not in answer.text
    assert not stores.user.dir.exists() or not list(stores.user.dir.glob("*.md"))


async def test_a_project_note_needs_a_trusted_project_level(tmp_path: Path) -> None:
    untrusted = make_env(tmp_path / "a", trusted=False)
    write_note(untrusted, Level.PROJECT, "project_knowledge_cloned.md", "Came with the clone", "body")
    home = tmp_path / "home"
    home.mkdir()
    at_home = MemoryStores(home, home / ".PseudoClaude")  # the workspace is ~: no project level
    for stores, reason in ((untrusted, UNTRUSTED_REASON), (at_home, NO_PROJECT_LEVEL)):
        served = ServedMemory(stores, remember_mode=MemoryMode.REVIEW)
        try:
            answer = await served.call("remember", {**NOTE, "level": "project"}, client="probe")
        finally:
            served.close()
        assert answer is not None and answer.is_error and answer.text == reason
        assert Spool(stores.paths).list(None, include_orphans=True) == []


async def test_a_held_note_is_approved_like_any_held_op_with_the_client_as_source(
    stores: MemoryStores,
) -> None:
    served = ServedMemory(stores, remember_mode=MemoryMode.REVIEW)
    try:
        answer = await served.call("remember", {**NOTE, "summary": "how to indent"}, client="codex")
    finally:
        served.close()
    assert answer is not None and not answer.is_error
    spool = Spool(stores.paths)
    (entry,) = spool.list(stores.paths.workspace, include_orphans=False)
    assert entry.job is not None and entry.status == "held" and entry.job.id in answer.text
    assert entry.job.excerpt() == "remember (mcp:codex): Tabs"
    approval = Review(stores, spool, stores.paths.workspace, "fallback").approve(entry.job.id)
    assert [a.filename for a in approval.result.applied] == ["user_preference_tabs.md"]
    note = stores.read_note(Level.USER, "user_preference_tabs.md")
    assert (note.meta.source, note.meta.summary, note.body) == (
        "mcp:codex",
        "how to indent",
        "Indent with tabs.\n",
    )
    assert spool.list(stores.paths.workspace, include_orphans=False) == []
