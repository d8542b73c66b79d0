"""The cards service (app/services/cards.py) over real stores, without a terminal: a card saved
is listed and read back with the hash an edit needs, an edit from a stale hash is a conflict that
writes nothing, deletes and moves are undoable, a pin from the editor is its outcome, the
person's own editor round-trips a private copy, citations make a card stale, a conflicted card
comes with both versions parsed, and the staleness check takes turns with the other whole-store
reads on the lock it is given."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from app.services.cards import CardsService, CardText, list_cards
from memory.constants import Level
from memory.search.engine import MemorySearch
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note

pytestmark = pytest.mark.timeout(60)

BUILD = CardText(
    level="project",
    type="project_knowledge",
    title="Build",
    summary="how to build",
    body="Run `make build`.\n",
)


@pytest.fixture
def stores(tmp_path: Path) -> MemoryStores:
    return make_env(tmp_path)


def files(stores: MemoryStores, level: Level) -> dict[str, bytes]:
    folder = stores.store(level).dir
    return (
        {p.name: p.read_bytes() for p in sorted(folder.glob("*.md")) if p.name != "MEMORY.md"}
        if folder.exists()
        else {}
    )


async def test_a_saved_card_is_listed_and_read_back_with_the_hash_its_next_edit_needs(
    stores: MemoryStores,
) -> None:
    cards = CardsService(stores, None)
    saved = await cards.save_card(BUILD, None, None, None)
    assert saved.status == "applied", saved.reason
    assert (saved.level, saved.filename) == ("project", "project_knowledge_build.md") and saved.txid
    listing = await cards.list_cards()
    (entry,) = listing.cards
    assert entry.card.note.meta.title == "Build" and entry.card.note.body == "Run `make build`.\n"
    assert (
        entry.card.conflict is None and not entry.untrusted and entry.in_prompt and entry.use == "never read"
    )
    read = await cards.read_card("project", saved.filename)
    assert read is not None and read.note.sha256 == saved.sha256 == entry.card.note.sha256
    edited = await cards.save_card(
        CardText("project", "project_knowledge", "Build", "how to build", "Run ninja.\n"),
        saved.filename,
        read.note.sha256,
        "project",
    )
    assert edited.status == "applied", edited.reason
    assert await cards.read_card("project", "project_knowledge_gone.md") is None


async def test_an_edit_from_a_stale_hash_is_a_conflict_and_writes_nothing(stores: MemoryStores) -> None:
    cards = CardsService(stores, None)
    saved = await cards.save_card(BUILD, None, None, None)
    assert saved.sha256 is not None
    first = await cards.save_card(
        CardText("project", "project_knowledge", "Build", "", "first\n"),
        saved.filename,
        saved.sha256,
        "project",
    )
    assert first.status == "applied"
    before = files(stores, Level.PROJECT)
    late = await cards.save_card(
        CardText("project", "project_knowledge", "Build", "", "second\n"),
        saved.filename,
        saved.sha256,
        "project",
    )
    assert late.status == "conflict" and late.reason
    assert files(stores, Level.PROJECT) == before
    read = await cards.read_card("project", saved.filename)
    assert read is not None and read.note.body == "first\n"
    # The editor's pin-only save from the stale hash is refused too (one line), writing nothing.
    with pytest.raises(StoreError, match="changed since it was opened"):
        await cards.pin_as_edit("project", saved.filename, True, saved.sha256)
    assert files(stores, Level.PROJECT) == before


async def test_a_move_and_a_delete_are_each_undone_by_the_next_undo(stores: MemoryStores) -> None:
    cards = CardsService(stores, None)
    saved = await cards.save_card(BUILD, None, None, None)
    assert saved.sha256 is not None
    moved = await cards.move_card("project", saved.filename, saved.sha256)
    assert moved.status == "applied" and moved.level == "user"
    assert files(stores, Level.PROJECT) == {} and list(files(stores, Level.USER)) == [moved.filename]
    undone = await cards.undo()
    assert undone.applied and list(files(stores, Level.PROJECT)) == [saved.filename]
    read = await cards.read_card("project", saved.filename)
    assert read is not None
    deleted = await cards.delete_card("project", saved.filename, read.note.sha256)
    assert deleted.status == "applied" and files(stores, Level.PROJECT) == {}
    await cards.undo()
    assert list(files(stores, Level.PROJECT)) == [saved.filename]


async def test_a_pin_is_its_own_batch_and_the_listing_shows_it(stores: MemoryStores) -> None:
    cards = CardsService(stores, None)
    saved = await cards.save_card(BUILD, None, None, None)
    result = await cards.pin_as_edit("project", saved.filename, True, saved.sha256)
    assert result.status == "applied" and result.txid
    (entry,) = (await cards.list_cards()).cards
    assert entry.card.note.meta.pinned
    again = await cards.pin_card("project", saved.filename, True, None)
    assert not again.applied  # it already was


async def test_the_persons_editor_gets_a_private_copy_applied_as_one_edit(stores: MemoryStores) -> None:
    cards = CardsService(stores, None)
    saved = await cards.save_card(BUILD, None, None, None)
    copy = await cards.start_external_edit("project", saved.filename)
    assert (copy.level, copy.filename) == ("project", saved.filename) and copy.path.exists()
    assert copy.path != stores.store(Level.PROJECT).dir / saved.filename
    unchanged = await cards.finish_external_edit(copy)
    assert unchanged.status == "unchanged" and unchanged.result is None
    copy.path.write_text(copy.path.read_text().replace("Run `make build`.", "Run `make all`."))
    back = await cards.finish_external_edit(copy)
    assert back.status == "applied" and back.result is not None and back.result.status == "applied"
    read = await cards.read_card("project", saved.filename)
    assert read is not None and read.note.body == "Run `make all`.\n"
    await cards.discard_external_edit(copy)
    assert not copy.folder.exists()


async def test_a_copy_edited_while_the_card_changed_on_disk_is_a_conflict_with_the_persons_fields(
    stores: MemoryStores,
) -> None:
    cards = CardsService(stores, None)
    saved = await cards.save_card(BUILD, None, None, None)
    assert saved.sha256 is not None
    copy = await cards.start_external_edit("project", saved.filename)
    await cards.save_card(
        CardText("project", "project_knowledge", "Build", "", "meanwhile\n"),
        saved.filename,
        saved.sha256,
        "project",
    )
    copy.path.write_text(copy.path.read_text().replace("Run `make build`.", "mine"))
    back = await cards.finish_external_edit(copy)
    assert back.status == "conflict" and back.fields is not None
    assert back.fields.body.strip() == "mine" and back.fields.title == "Build"
    read = await cards.read_card("project", saved.filename)
    assert read is not None and read.note.body == "meanwhile\n"
    await cards.discard_external_edit(copy)


async def test_a_card_whose_cited_file_changed_is_stale_in_the_check_and_the_listing(
    stores: MemoryStores,
) -> None:
    workspace = Path(stores.paths.workspace)
    (workspace / "build.sh").write_text("make\n")
    cards = CardsService(stores, None)
    saved = await cards.save_card(BUILD, None, None, None, ("build.sh",))
    assert saved.status == "applied", saved.reason
    assert await cards.stale_cards() == frozenset()
    (workspace / "build.sh").write_text("ninja\n")
    ((name, reason),) = await cards.stale_cards()
    assert name == saved.filename and "build.sh" in reason
    (entry,) = (await cards.list_cards()).cards
    assert entry.stale == reason
    (cite,) = entry.cites
    assert (cite.spec, cite.state) == ("build.sh", "changed")


async def test_the_staleness_check_waits_for_the_card_reads_lock_it_was_given(stores: MemoryStores) -> None:
    lock = threading.Lock()
    cards = CardsService(stores, None, card_reads=lock)
    assert cards.card_reads is lock
    lock.acquire()
    try:
        check = asyncio.ensure_future(cards.stale_cards())
        await asyncio.sleep(0.3)
        assert not check.done()  # another whole-store read holds the lock
    finally:
        lock.release()
    assert await asyncio.wait_for(check, 10) == frozenset()


def _side(title: str, body: str) -> str:
    return (
        f"---\ntitle: {title}\nsummary: s\ntype: project_knowledge\ncreated: 2026-01-01T00:00:00Z\n"
        f"updated: 2026-01-02T00:00:00Z\nsource: manual\n---\n{body}"
    )


def test_a_conflicted_card_is_listed_with_both_versions_parsed_and_an_unparsed_side_kept_whole(
    stores: MemoryStores,
) -> None:
    name = "project_knowledge_build.md"
    path = write_note(stores, Level.PROJECT, name, "placeholder", "x")
    broken = "---\ntitle: [unclosed\n---\ntheir notes\n"
    ours = _side("Build with make", "make\n")
    path.write_text(f"<<<<<<< HEAD\n{ours}=======\n{broken}>>>>>>> feature\n")
    (entry,) = list_cards(stores).cards
    versions = entry.card.conflict
    assert versions is not None and entry.card.note.broken
    assert versions.ours.label == "HEAD" and versions.ours.meta is not None
    assert (
        versions.ours.meta.title == "Build with make"
        and versions.ours.body == "make\n"
        and not versions.ours.problem
    )
    assert versions.theirs.label == "feature" and versions.theirs.meta is None
    assert versions.theirs.body == broken and versions.theirs.problem


async def test_the_levels_the_remembered_draft_and_the_filter_through_the_search_index(
    stores: MemoryStores,
) -> None:
    cards = CardsService(stores, MemorySearch(stores))
    assert cards.levels == ("project", "user")
    draft = cards.remember_draft("deploy from the release tag, never from main, and tag it first please")
    assert (draft.level, draft.type) == ("project", "project_knowledge")
    assert draft.title == "deploy from the release tag, never from main," and draft.body.startswith("deploy")
    await cards.save_card(
        CardText("project", "project_knowledge", "Deploy", "", "deploy from the tag\n"), None, None, None
    )
    await cards.save_card(
        CardText("user", "project_knowledge", "Tabs", "", "tabs not spaces\n"), None, None, None
    )
    found = await cards.filter_keys("deploy")
    assert set(found) == {"project", "user"}
    assert list(found["project"] or {}) == ["project/project_knowledge_deploy.md"]
    assert found["user"] == {}
    assert await cards.search_changed() == []
    with pytest.raises(RuntimeError):
        await CardsService(stores, None).filter_keys("deploy")
