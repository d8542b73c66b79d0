"""The prompt's index as data (``MemoryStores.merged_entries``) over a real git workspace: each
entry says what its line says — type, title, summary, stale reason, author, pin — and the text
the prompt gets is rendered from them; a conflicted card is in no index, only among the
unindexed. ``read_memory_text`` says a card stale from the check it rendered."""

from __future__ import annotations

from pathlib import Path

from app.agent.tools import ToolContext, run_tool
from memory.constants import Level, NoteType
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.index import PROJECT_HEADER, USER_HEADER
from memory.store.stores import STALE_LINE, MemoryStores
from tests.unit.memory.grounding.conftest import cited_card

CHANGED = "Makefile changed since this card was written"


def _card(
    stores: MemoryStores,
    level: Level,
    filename: str,
    title: str,
    *,
    summary: str = "",
    author: str = "",
    pinned: bool = False,
    type_: NoteType = NoteType.PROJECT_KNOWLEDGE,
) -> Path:
    folder = stores.store(level).dir
    folder.mkdir(parents=True, exist_ok=True)
    meta = NoteMeta(
        title=title,
        summary=summary,
        type=type_,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        source="model",
        author=author,
        pinned=pinned,
    )
    path = folder / filename
    path.write_bytes(dump_note(meta, "body\n"))
    return path


def test_each_entry_says_what_its_line_says_and_the_text_is_made_of_them(
    stores: MemoryStores, repo: Path
) -> None:
    stale = cited_card(stores, "Makefile", title="Build")
    (repo / "Makefile").write_text("all:\n\techo bye\n")
    _card(
        stores,
        Level.PROJECT,
        "project_knowledge_deploy.md",
        "Deploy",
        summary="on Fridays — never",
        author="Bea",
    )
    _card(stores, Level.PROJECT, "project_knowledge_pinned.md", "Pinned", pinned=True)
    conflicted = _card(stores, Level.PROJECT, "project_knowledge_merge.md", "Merge", summary="ours")
    head, _, rest = conflicted.read_text().partition("summary: ours\n")
    conflicted.write_text(
        f"{head}<<<<<<< HEAD\nsummary: ours\n=======\nsummary: theirs\n>>>>>>> main\n{rest}"
    )
    _card(
        stores,
        Level.USER,
        "user_preference_tabs.md",
        "Tabs",
        summary="indent with tabs",
        type_=NoteType.USER_PREFERENCE,
    )

    merged = stores.merged_entries()
    got = [
        (e.level, e.filename, e.type, e.title, e.summary, e.stale, e.author, e.pinned, e.in_prompt)
        for e in merged.entries
    ]
    assert got == [
        (Level.PROJECT, stale, NoteType.PROJECT_KNOWLEDGE, "Build", "", CHANGED, "", False, True),
        (
            Level.PROJECT,
            "project_knowledge_deploy.md",
            NoteType.PROJECT_KNOWLEDGE,
            "Deploy",
            "on Fridays — never",
            None,
            "Bea",
            False,
            True,
        ),
        (
            Level.PROJECT,
            "project_knowledge_pinned.md",
            NoteType.PROJECT_KNOWLEDGE,
            "Pinned",
            "",
            None,
            "",
            True,
            True,
        ),
        (
            Level.USER,
            "user_preference_tabs.md",
            NoteType.USER_PREFERENCE,
            "Tabs",
            "indent with tabs",
            None,
            "",
            False,
            True,
        ),
    ]
    assert merged.entries[0].line == f"- [project_knowledge] Build ({stale}) (stale: {CHANGED})"
    assert merged.text == "\n".join(
        [PROJECT_HEADER, *(e.line for e in merged.entries[:3]), "", USER_HEADER, merged.entries[3].line]
    )
    assert merged.text == stores.merged_index() == stores.prompt_index().text
    assert (merged.left_out, merged.pinned_left_out) == (0, 0)
    # The conflicted card has no line: listed among the cards no prompt gets, with why.
    assert [(lv, name) for lv, name, _ in merged.unindexed] == [(Level.PROJECT, "project_knowledge_merge.md")]
    # Without marks (a person's view of the cards as written) nothing is stale.
    assert [e.stale for e in stores.merged_entries(marks=False).entries] == [None] * 4


def test_an_untrusted_store_has_no_entries_unless_a_persons_view_asks(
    stores: MemoryStores, repo: Path, tmp_path: Path
) -> None:
    _card(stores, Level.PROJECT, "project_knowledge_a.md", "A")
    cloned = MemoryStores(repo, tmp_path / "elsewhere")  # another home: no trust recorded there
    assert cloned.merged_entries().entries == ()
    assert [e.filename for e in cloned.merged_entries(include_untrusted=True).entries] == [
        "project_knowledge_a.md"
    ]


def test_read_memory_says_a_card_stale_from_the_check_it_printed(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "Makefile")
    fresh = stores.read_memory_text(Level.PROJECT, name)
    assert not fresh.stale and fresh.text.startswith("Cites (checked now):") and STALE_LINE not in fresh.text
    (repo / "Makefile").write_text("all:\n\techo bye\n")
    read = stores.read_memory_text(Level.PROJECT, name)
    assert read.stale and STALE_LINE in read.text and read.text == stores.read_memory(Level.PROJECT, name)
    assert not stores.read_memory_text(Level.PROJECT, "MEMORY.md").stale  # an index is no card


async def test_the_read_tool_takes_staleness_from_the_read_not_from_the_page_it_shows(
    stores: MemoryStores, repo: Path
) -> None:
    name = cited_card(stores, "Makefile")
    (repo / "Makefile").write_text("all:\n\techo bye\n")
    ctx = ToolContext(workspace=repo, memory=stores)
    page = await run_tool("read_memory", {"level": "project", "filename": name, "offset": 5}, ctx)
    assert not page.is_error and STALE_LINE not in page.content
    assert page.card is not None and page.card.stale
