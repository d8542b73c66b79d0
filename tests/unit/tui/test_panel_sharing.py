"""The side panel and sharing through git: a card's author when it is not this
person, conflicted cards listed apart (both stores, untrusted ones marked), the user store's sync
line; built from real stores on disk (app/tui/panel/state.py) and laid out at the panel's width
(widgets/panel/memory_panel.py)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.cells import cell_len

from app.services.index import index_view
from app.tui.panel.state import build_panel_state
from memory.constants import Level, NoteType
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.stores import MemoryStores
from tests.support.gittools import new_repo, set_user
from tests.support.memtools import trust_workspace, write_note
from widgets.panel.memory_panel import PanelCard, PanelState, _CardList

PANEL_WIDTH = 30  # the 32-column panel's content (a border and a padding cell)


def _stores(tmp_path: Path, *, trusted: bool = True, user: str = "Ann") -> MemoryStores:
    ws = new_repo(tmp_path / "ws", user)
    if trusted:
        trust_workspace(ws)
    return MemoryStores(os.path.realpath(ws))


def _card(
    stores: MemoryStores, level: Level, filename: str, title: str, *, author: str = "", summary: str = ""
) -> Path:
    folder = stores.store(level).dir
    folder.mkdir(parents=True, exist_ok=True)
    meta = NoteMeta(
        title=title,
        summary=summary,
        type=NoteType.PROJECT_KNOWLEDGE,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        source="model",
        author=author,
    )
    path = folder / filename
    path.write_bytes(dump_note(meta, "body\n"))
    return path


def _conflicted(stores: MemoryStores, level: Level, filename: str, title: str) -> Path:
    """A card as git leaves it when both branches changed its summary."""
    path = _card(stores, level, filename, title, summary="ours")
    text = path.read_text()
    head, _, rest = text.partition("summary: ours\n")
    path.write_text(
        f"{head}<<<<<<< HEAD\nsummary: ours\n=======\nsummary: theirs\n>>>>>>> origin/main\n{rest}"
    )
    return path


def _lines(state: PanelState, width: int = PANEL_WIDTH) -> list[str]:
    cards = _CardList()
    cards.state = state
    return [t.plain for t in cards.lines(width)]


# -- the author --------------------------------------------------------------------------------


def test_a_card_by_someone_else_carries_their_name_and_ones_own_cards_none(tmp_path: Path) -> None:
    stores = _stores(tmp_path, user="Ann")
    _card(stores, Level.PROJECT, "project_knowledge_build.md", "Build", author="Bea", summary="make build")
    _card(stores, Level.PROJECT, "project_knowledge_mine.md", "Mine", author="Ann")
    _card(stores, Level.PROJECT, "project_knowledge_old.md", "Old card")  # before authors existed
    state = build_panel_state(index_view(stores), [], None)
    assert {c.title: c.author for c in state.project} == {"Build": "Bea", "Mine": "", "Old card": ""}
    # This person's name is the workspace's git user.name: another name there, another view.
    set_user(stores.paths.workspace, "Bea")
    from memory.store import author as author_module

    author_module._NAMES.clear()  # the 30-second cache of the name
    state = build_panel_state(index_view(stores), [], None)
    assert {c.title: c.author for c in state.project} == {"Build": "", "Mine": "Ann", "Old card": ""}


def test_a_user_card_is_compared_with_the_name_where_user_cards_are_written(tmp_path: Path) -> None:
    stores = _stores(tmp_path, user="Ann")  # no git name for the user store's home
    _card(stores, Level.USER, "user_preference_tabs.md", "Tabs", author="Ann")
    [card] = build_panel_state(index_view(stores), [], None).user
    assert card.author == "Ann"  # the home has no user.name: "Ann" is not known to be this person


def test_the_author_is_shown_muted_before_the_summary_within_the_panel_width() -> None:
    state = PanelState(
        project=(
            PanelCard("project_knowledge", "Build", "make build, then make test", "b.md", author="Bea"),
            PanelCard(
                "project_knowledge",
                "Long",
                "the summary",
                "l.md",
                author="Beatrix Quentin-Longname the Third",
            ),
        ),
        user=(),
        cut_note=None,
        project_note=None,
        jobs=(),
    )
    lines = _lines(state)
    i = lines.index("know Build")
    assert lines[i + 1].replace("\xa0", " ").startswith("  by Bea · make build")
    # A long name is cut so the summary still has room; nothing passes the panel's width.
    k = lines.index("know Long")
    under = " ".join(line.replace("\xa0", " ").strip() for line in lines[k + 1 : k + 3])
    assert under == "by Beatrix Quentin… · the summary"
    assert all(cell_len(line) <= PANEL_WIDTH for line in lines)
    cards = _CardList()
    cards.state = state
    drawn = cards.lines(PANEL_WIDTH)[i + 1]
    assert any(s.style == "italic" and drawn.plain[s.start : s.end] == "by Bea" for s in drawn.spans)


# -- conflicted cards --------------------------------------------------------------------------


def test_conflicted_cards_of_both_stores_are_listed_apart_and_in_no_section(tmp_path: Path) -> None:
    stores = _stores(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_fine.md", "Fine", "body")
    _conflicted(stores, Level.PROJECT, "project_knowledge_deploy.md", "Deploy steps")
    _conflicted(stores, Level.USER, "user_preference_tabs.md", "Tabs")
    state = build_panel_state(index_view(stores), [], frozenset())
    assert [(c.level, c.filename, c.title) for c in state.conflicted] == [
        ("project", "project_knowledge_deploy.md", "Deploy steps"),
        ("user", "user_preference_tabs.md", "Tabs"),
    ]
    assert [c.title for c in state.project] == ["Fine"] and state.user == ()
    assert not any(c.untrusted or c.new for c in state.conflicted)
    # A card that merely does not parse is no conflict: not listed as one.
    (stores.project.dir / "project_knowledge_bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    assert len(build_panel_state(index_view(stores), [], None).conflicted) == 2


def test_a_conflicted_card_of_an_untrusted_store_is_listed_and_marked_untrusted(tmp_path: Path) -> None:
    stores = _stores(tmp_path, trusted=False)
    write_note(stores, Level.PROJECT, "project_knowledge_fine.md", "Fine", "body")
    _conflicted(stores, Level.PROJECT, "project_knowledge_deploy.md", "Deploy steps")
    state = build_panel_state(index_view(stores), [], None)
    [card] = state.conflicted
    assert (card.title, card.level, card.untrusted) == ("Deploy steps", "project", True)
    lines = _lines(state)
    i = lines.index("⚠ know Deploy steps")
    assert lines[i + 1].startswith("  untrusted")


def test_the_conflicted_section_comes_first_with_how_to_resolve_and_maps_its_lines_to_the_card() -> None:
    state = PanelState(
        project=(PanelCard("project_knowledge", "Fine", "", "f.md"),),
        user=(),
        cut_note=None,
        project_note=None,
        jobs=(),
        conflicted=(PanelCard("user_preference", "Tabs", "", "user_preference_tabs.md", level="user"),),
    )
    cards = _CardList()
    cards.state = state
    lines = [t.plain.replace("\xa0", " ") for t in cards.lines(PANEL_WIDTH)]
    head = lines.index("⚠ Conflicted 1")
    assert head < lines.index("Project 1")
    card = lines.index("⚠ pref Tabs")
    text = " ".join(line.strip() for line in lines[card + 1 : card + 4])
    assert text == "user · changed on two branches — Enter or click to resolve"
    assert {cards.card_at(y) for y in range(card, card + 4)} == {("user", "user_preference_tabs.md")}
    assert cards.card_at(head) is None
    assert all(cell_len(line) <= PANEL_WIDTH for line in lines)


# -- the sync line -----------------------------------------------------------------------------


def test_the_sync_line_is_passed_through_cleaned_and_drawn_under_the_header(tmp_path: Path) -> None:
    stores = _stores(tmp_path)
    state = build_panel_state(
        index_view(stores), [], None, sync=("push rejected by \x1b[31mthe remote\x1b[0m", True)
    )
    assert (state.sync_note, state.sync_failed) == ("push rejected by the remote", True)
    assert build_panel_state(index_view(stores), [], None).sync_note is None
    lines = _lines(state)
    assert lines[1] == "⚠ push rejected by the remote"
    ok = _lines(
        PanelState(
            project=(),
            user=(),
            cut_note=None,
            project_note=None,
            jobs=(),
            sync_note="synced: 2 cards pulled, 1 commit pushed, and more words",
            sync_failed=False,
        )
    )
    assert ok[1].startswith("synced: 2 cards pulled") and ok[1].endswith("…") and ok[2] == ""
