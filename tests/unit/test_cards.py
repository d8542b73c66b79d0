"""A person's card edits (memory/cards.py): one validated, redacted, undoable path."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.frontmatter import split_note
from memory.model import INDEX_FILE, Level
from memory.stores import MemoryStores
from tests.memtools import make_env, write_note

KEY = "sk-ant-api03-" + "Zq7xW2vB9nK4mP8rT1yU6iO3aS5dF0gH" * 2


@pytest.fixture
def env(tmp_path: Path) -> MemoryStores:
    return make_env(tmp_path)


def test_create_card_is_a_manual_validated_undoable_batch(env: MemoryStores) -> None:
    res = env.create_card("project", "project_knowledge", "Build  steps", "Use make.", f"Run make; token {KEY}")
    assert res.status == "applied" and res.filename == "project_knowledge_build-steps.md" and res.txid
    path = env.project.dir / res.filename
    fm, body = split_note(path.read_text())
    assert fm["source"] == "manual" and fm["title"] == "Build steps"
    assert KEY[:24] not in path.read_text() and "REDACTED" in body
    assert res.sha256 == env.read_note("project", res.filename).sha256
    assert env.history()[-1].label == "card created"
    env.undo()
    assert not path.exists()


def test_create_card_with_invalid_input_is_rejected_with_a_reason(env: MemoryStores) -> None:
    res = env.create_card("user", "gossip", "T", "", "body")
    assert res.status == "rejected" and "unknown type" in res.reason and res.txid is None
    assert env.create_card("user", "user_preference", "T", "", "   ").status == "rejected"


def test_edit_card_replaces_as_given_and_conflicts_when_changed_on_disk(env: MemoryStores) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1", summary="old")
    seen = env.read_note("project", "project_knowledge_x.md").sha256
    res = env.edit_card("project", "project_knowledge_x.md", "X2", "new", "reference_material", "v2", seen)
    assert res.status == "applied" and res.sha256 != seen
    fm, body = split_note(p.read_text())
    assert (fm["title"], fm["summary"], fm["type"], body) == ("X2", "new", "reference_material", "v2\n")
    # The editor still holds the old hash: a second save is a conflict, nothing written.
    before = p.read_bytes()
    stale = env.edit_card("project", "project_knowledge_x.md", "X3", "", "reference_material", "v3", seen)
    assert stale.status == "conflict" and "changed since" in stale.reason and p.read_bytes() == before
    env.undo()
    assert split_note(p.read_text())[1] == "v1\n"


def test_delete_card_needs_the_hash_it_read(env: MemoryStores) -> None:
    p = write_note(env, Level.USER, "user_preference_tabs.md", "Tabs", "v1")
    assert env.delete_card("user", "user_preference_tabs.md", "0" * 64).status == "conflict" and p.exists()
    sha = env.read_note("user", "user_preference_tabs.md").sha256
    res = env.delete_card("user", "user_preference_tabs.md", sha)
    assert res.status == "applied" and not p.exists() and res.sha256 is None
    env.undo()
    assert p.exists()


def test_move_card_is_one_transaction_and_undoable(env: MemoryStores) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_tabs.md", "Tabs", "use tabs", summary="s")
    sha = env.read_note("project", "project_knowledge_tabs.md").sha256
    res = env.move_card("project", "project_knowledge_tabs.md", "user", sha)
    assert res.status == "applied" and (res.level, res.filename) == (Level.USER, "project_knowledge_tabs.md")
    assert not p.exists() and env.read_note("user", res.filename).body == "use tabs\n"
    assert "(project_knowledge_tabs.md)" in (env.user.dir / INDEX_FILE).read_text()
    env.undo()
    assert p.exists() and not (env.user.dir / "project_knowledge_tabs.md").exists()


def test_move_card_conflict_or_rejection_writes_nothing(env: MemoryStores) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_big.md", "Big", "x" * (17 * 1024))
    sha = env.read_note("project", "project_knowledge_big.md").sha256
    assert env.move_card("project", "project_knowledge_big.md", "user", "0" * 64).status == "conflict"
    res = env.move_card("project", "project_knowledge_big.md", "user", sha)
    assert res.status == "rejected" and "larger" in res.reason
    assert p.exists() and not env.user.dir.exists() and env.history() == []
