"""The ``search_memory`` tool over real stores and the real search engine: its
contract, its output (``<level>: <index line>`` per card, best first), input checks, an untrusted
project store, the cache's notices kept out of the result, and hostile queries."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.tools import BUILTIN_TOOLS, ToolContext, ToolResult, api_tools, run_tool
from app.agent.tools.builtin.search_memory import NO_MATCH, NO_PROJECT_LEVEL, UNTRUSTED_NOTE
from memory.constants import Level, NoteType
from memory.search.cache import cache_path
from memory.search.engine import MemorySearch
from memory.store.stores import MemoryStores
from memory.store.trust import UNTRUSTED_REASON
from tests.support.memtools import make_env, write_note

FROB = "project_knowledge_lab.md"
FROB_LINE = f"project: - [project_knowledge] Lab bench — hardware ({FROB})"
CAL = "project_knowledge_release.md"
CAL_LINE = f"project: - [project_knowledge] Release steps ({CAL})"
TONE = "user_preference_tone.md"
TONE_LINE = f"user: - [user_preference] Tone — be brief ({TONE})"


def seed(stores: MemoryStores) -> None:
    # The topic is named only in the body: search reads bodies, not just the index line.
    write_note(
        stores,
        Level.PROJECT,
        FROB,
        "Lab bench",
        "The frobnicator needs calibration before each release.\n",
        summary="hardware",
    )
    write_note(stores, Level.PROJECT, CAL, "Release steps", "Tag, then run the calibration suite.\n")
    for i in range(20):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_filler{i:02d}.md",
            f"Filler {i}",
            f"Docker notes {i}.\n",
        )
    write_note(
        stores,
        Level.USER,
        TONE,
        "Tone",
        "Answer briefly; the user calibrates tone per frobnicator.\n",
        type_=NoteType.USER_PREFERENCE,
        summary="be brief",
    )


Env = tuple[MemoryStores, MemorySearch, ToolContext]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    stores = make_env(tmp_path)
    seed(stores)
    search = MemorySearch(stores)
    yield stores, search, ToolContext(workspace=Path(stores.paths.workspace), memory=stores, search=search)
    search.close()


async def call(ctx: ToolContext, **inp: Any) -> ToolResult:
    return await run_tool("search_memory", inp, ctx)


def error_line(r: ToolResult) -> str:
    assert r.is_error, r.content
    assert "\n" not in r.content and r.content.strip(), r.content
    return r.content


# -- contract ----------------------------------------------------------------------------------


def test_the_spec_is_read_only_with_display_keys_and_offered_to_sub_agents() -> None:
    spec, task = BUILTIN_TOOLS.get("search_memory"), BUILTIN_TOOLS.get("task")
    assert spec is not None and task is not None
    assert spec.kind == "memory" and spec.read_only and "search_memory" in BUILTIN_TOOLS.read_only().names()
    assert spec.display == (("query", "{}"), ("level", "{} level"))
    [tool] = api_tools(["search_memory"])
    schema = tool["input_schema"]
    assert schema["required"] == ["query"] and set(schema["properties"]) == {"query", "level", "limit"}
    assert schema["properties"]["level"]["enum"] == ["project", "user"]
    assert "read_memory" in tool["description"] and "best first" in tool["description"]
    assert "search_memory" in task.description  # the sub-agent's tool list says so


# -- results -----------------------------------------------------------------------------------


async def test_finds_a_card_by_a_word_of_its_body_best_first_across_levels(env: Env) -> None:
    _, _, ctx = env
    r = await call(ctx, query="frobnicator calibration")
    assert not r.is_error
    lines = r.content.split("\n")
    # Both words beat one (the release card has only "calibration"): the lab card first; the user
    # card ("calibrates" stems alike) is found in the other store.
    assert lines[0] == FROB_LINE
    assert sorted(lines) == sorted([FROB_LINE, CAL_LINE, TONE_LINE])


async def test_level_and_limit_narrow_the_result(env: Env) -> None:
    _, _, ctx = env
    assert (await call(ctx, query="frobnicator calibration", level="user")).content == TONE_LINE
    assert (await call(ctx, query="frobnicator calibration", limit=1)).content == FROB_LINE
    r = await call(ctx, query="docker", limit=50)
    assert len(r.content.split("\n")) == 20
    assert len((await call(ctx, query="docker")).content.split("\n")) == 10  # the default


async def test_nothing_found_says_so(env: Env) -> None:
    _, _, ctx = env
    r = await call(ctx, query="kubernetes")
    assert r.content == NO_MATCH and not r.is_error
    assert (await call(ctx, query="the and of")).content == NO_MATCH  # stop words only


async def test_a_stale_cards_line_carries_its_mark_as_the_index_does(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    ws = Path(stores.paths.workspace)
    (ws / "Makefile").write_text("all:\n\techo hi\n")
    made = stores.apply(
        [(0, _create("Build", "Run the frobnicator target.", cites=("Makefile",)))], source="manual"
    )
    [applied] = made.applied
    (ws / "Makefile").write_text("all:\n\techo changed\n")
    search = MemorySearch(stores)
    try:
        r = await call(ToolContext(workspace=ws, search=search), query="frobnicator")
    finally:
        search.close()
    assert (
        r.content
        == f"project: - [project_knowledge] Build ({applied.filename}) (stale: Makefile changed since "
        "this card was written)"
    )


def _create(title: str, content: str, **kw: Any) -> Any:
    from tests.support.memtools import create

    return create("project", title, content, **kw)


# -- input checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inp", "needle"),
    [
        ({}, "missing required input 'query'"),
        ({"query": ""}, "'query' must not be empty"),
        ({"query": "  \n\t"}, "'query' must name what to look for"),
        ({"query": 3}, "'query' must be a string"),
        ({"query": "x", "level": "team"}, "level must be 'project' or 'user', not 'team'"),
        ({"query": "x", "level": 1}, "'level' must be a string"),
        ({"query": "x", "limit": 0}, "'limit' must be at least 1"),
        ({"query": "x", "limit": 51}, "'limit' must be at most 50 (got 51)"),
        ({"query": "x", "limit": "5"}, "'limit' must be an integer"),
        ({"query": "x", "limit": True}, "'limit' must be an integer"),
        ({"query": "x", "limit": 2.5}, "'limit' must be an integer"),
    ],
)
async def test_bad_input_is_a_one_line_error(env: Env, inp: dict[str, Any], needle: str) -> None:
    _, _, ctx = env
    assert needle in error_line(await run_tool("search_memory", inp, ctx))


async def test_without_a_search_engine_it_says_so(tmp_path: Path) -> None:
    r = await call(ToolContext(workspace=tmp_path), query="frobnicator")
    assert error_line(r) == "memory search is not available"


# -- trust -------------------------------------------------------------------------------------


async def test_an_untrusted_project_store_is_never_searched(tmp_path: Path) -> None:
    stores = make_env(tmp_path, trusted=False)
    seed(stores)
    search = MemorySearch(stores)
    ctx = ToolContext(workspace=Path(stores.paths.workspace), search=search)
    try:
        both = await call(ctx, query="frobnicator calibration")
        assert both.content.split("\n") == [TONE_LINE, UNTRUSTED_NOTE]
        assert error_line(await call(ctx, query="frobnicator", level="project")) == UNTRUSTED_REASON
        none = await call(ctx, query="docker")
        assert none.content == f"{NO_MATCH}\n{UNTRUSTED_NOTE}"
        assert FROB not in (await call(ctx, query="lab bench hardware")).content
    finally:
        search.close()
    # Never even indexed: no cache file for the project store.
    assert not cache_path(stores.paths.home, stores.project.dir).exists()


async def test_a_workspace_without_a_project_level_says_so_for_project(tmp_path: Path) -> None:
    # A workspace whose project store is the user store: PSEUDOCLAUDE_HOME is <ws>/.PseudoClaude.
    stores = MemoryStores(tmp_path, tmp_path / ".PseudoClaude")
    assert not stores.has_project_level
    search = MemorySearch(stores)
    try:
        r = await call(ToolContext(workspace=tmp_path, search=search), query="frobnicator", level="project")
    finally:
        search.close()
    assert error_line(r) == NO_PROJECT_LEVEL


# -- the cache's notices ---------------------------------------------------------------------------


async def test_a_rebuilt_caches_notice_is_logged_not_given_to_the_model(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    stores, search, ctx = env
    assert (await call(ctx, query="frobnicator")).content.startswith(FROB_LINE)
    search.close()
    path = cache_path(stores.paths.home, stores.project.dir)
    path.write_bytes(b"this is no sqlite database" * 100)
    with caplog.at_level(logging.WARNING):
        r = await call(ctx, query="frobnicator")
    assert r.content.split("\n")[0] == FROB_LINE
    assert "cache" not in r.content and "rebuilt" not in r.content
    assert any("rebuilt from the cards" in rec.getMessage() for rec in caplog.records)
    assert search.notices() == [], "the tool drains the notices it logged"


# -- hostile queries -------------------------------------------------------------------------------

HOSTILE = [
    '"',
    '""',
    '"frobnicator',
    "frobnicator*",
    "*",
    "NEAR(",
    "NEAR(frobnicator calibration, 2)",
    "OR",
    "AND",
    "frobnicator OR",
    "NOT frobnicator",
    "title:frobnicator",
    "{title}: frobnicator",
    "^frobnicator",
    "(frobnicator",
    "frobnicator)",
    "-frobnicator",
    "frobnicator\x00",
    "\x00",
    "\ud800",
    "frob\udc80nicator",
    "frobnicator \ud83d",
    "'; DROP TABLE fts; --",
    "frobnicator " * 900,
    "x" * 10_240,
    "配置 frobnicator 配置",
    "\u202efrobnicator",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_queries_never_raise_nor_break_the_fts_syntax(env: Env, query: str) -> None:
    _, search, ctx = env
    r = await call(ctx, query=query)
    assert not r.is_error, r.content
    lines = r.content.split("\n")
    assert lines == [NO_MATCH] or all(line.startswith(("project: - [", "user: - [")) for line in lines)
    if "frobnicator" in query.replace("\x00", ""):
        assert FROB_LINE in lines
    # The cache is still whole afterwards: an ordinary search works.
    assert (await call(ctx, query="frobnicator")).content.split("\n")[0] == FROB_LINE
    assert search.notices() == []


async def test_a_hand_written_cards_hostile_title_comes_back_as_one_clean_line(env: Env) -> None:
    stores, _, ctx = env
    (stores.project.dir / "project_knowledge_evil.md").write_text(
        '---\ntitle: "Evil\\nline\\u202e\\x1b]52;c;AAAA\\x07 # x"\n'
        'summary: "ok\\r\\nmore"\ntype: project_knowledge\n'
        "---\nThe zanzibar body.\n"
    )
    r = await call(ctx, query="zanzibar")
    assert r.content == "project: - [project_knowledge] Evil line # x — ok more (project_knowledge_evil.md)"
