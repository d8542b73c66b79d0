"""A person's card edits (memory/store/cards.py): one validated, redacted, undoable path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memory.constants import INDEX_FILE, Level
from memory.model import NoteMeta, rfc3339
from memory.store import cards
from memory.store.frontmatter import dump_note, split_note
from memory.store.history import UndoError
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from tests.support.memtools import FIXED, make_env, write_note

KEY = "sk-ant-api03-" + "Zq7xW2vB9nK4mP8rT1yU6iO3aS5dF0gH" * 2


@pytest.fixture
def env(tmp_path: Path) -> MemoryStores:
    return make_env(tmp_path)


def test_create_card_is_a_manual_validated_undoable_batch(env: MemoryStores) -> None:
    res = env.create_card(
        "project", "project_knowledge", "Build  steps", "Use make.", f"Run make; token {KEY}"
    )
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


def _aged_card(env: MemoryStores, level: Level, filename: str, **meta: object) -> str:
    """A card written long before the test's clock, as a model's job wrote it; returns its hash."""
    fields: dict[str, object] = {
        "title": "Tabs",
        "summary": "s",
        "type": "project_knowledge",
        "created": "2025-03-04T05:06:07Z",
        "updated": "2025-06-07T08:09:10Z",
        "source": "job-1234",
        "author": "Ann Lee",
        "pinned": True,
        **meta,
    }
    folder = env.store(level).dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_bytes(dump_note(NoteMeta.model_validate(fields), "use tabs"))
    return env.read_note(level, filename).sha256


@pytest.mark.parametrize(("start", "to"), [(Level.PROJECT, Level.USER), (Level.USER, Level.PROJECT)])
def test_a_moved_card_keeps_its_creation_date_source_author_and_pin(
    env: MemoryStores, start: Level, to: Level
) -> None:
    sha = _aged_card(env, start, "project_knowledge_tabs.md")
    res = env.move_card(start, "project_knowledge_tabs.md", to, sha)
    assert res.status == "applied"
    meta = env.read_note(to, res.filename).meta
    assert meta.created == "2025-03-04T05:06:07Z"
    assert meta.updated == rfc3339(FIXED)  # the move is a change: now
    assert (meta.source, meta.author, meta.pinned) == ("job-1234", "Ann Lee", True)
    # Undone, the card is back as it was, dates included.
    env.undo()
    assert env.read_note(start, "project_knowledge_tabs.md").sha256 == sha


def test_a_card_edited_and_moved_keeps_its_creation_date_and_pin_and_is_the_persons(
    env: MemoryStores,
) -> None:
    sha = _aged_card(env, Level.PROJECT, "project_knowledge_tabs.md")
    res = env.save_card(
        "user",
        "user_preference",
        "Tabs",
        "",
        "I use tabs.",
        filename="project_knowledge_tabs.md",
        expected_sha=sha,
        original_level="project",
    )
    assert res.status == "applied"
    meta = env.read_note("user", res.filename).meta
    assert (meta.created, meta.updated) == ("2025-03-04T05:06:07Z", rfc3339(FIXED))
    assert meta.pinned and meta.source == "manual"
    # git knows no name here: whoever wrote it stays named.
    assert meta.author == "Ann Lee"


def test_a_new_card_is_still_created_now(env: MemoryStores) -> None:
    res = env.create_card("user", "user_preference", "Fresh", "", "new")
    meta = env.read_note("user", res.filename).meta
    assert meta.created == meta.updated == rfc3339(FIXED) and not meta.pinned


# -- the editor's checks and Ctrl+S ----------------------------------------------------------


def test_check_card_names_each_bad_field_and_passes_a_good_card(env: MemoryStores) -> None:
    assert env.check_card("project", "project_knowledge", "Build", "make build", "Run make build.") == {}
    errors = env.check_card("nowhere", "gossip", "  ", "s" * 201, " \n ")
    assert errors == {
        "title": "a title is needed",
        "summary": "at most 200 characters (this one has 201)",
        "type": "choose a type",
        "level": "choose a level",
        "body": "the body is empty: write what should be remembered",
    }
    assert env.check_card("user", "user_preference", "t" * 101, "", "x")["title"].startswith("at most 100")
    assert "16 KiB" in env.check_card("user", "user_preference", "T", "", "é" * 9000)["body"]
    assert (
        env.check_card("user", "user_preference", "T", "", "bad \ud800")["body"]
        == "the text is not valid UTF-8"
    )


def test_check_card_refuses_the_project_level_of_a_workspace_at_home(tmp_path: Path) -> None:
    home = tmp_path / "alice"
    (home / ".git").mkdir(parents=True)
    # The workspace is ~ and the app's home ~/.PseudoClaude: one folder cannot be two levels.
    stores = MemoryStores(home, home / ".PseudoClaude")
    assert not stores.has_project_level
    assert "no project level" in stores.check_card("project", "project_knowledge", "T", "", "b")["level"]
    assert stores.check_card("user", "project_knowledge", "T", "", "b") == {}


def test_save_card_creates_edits_and_moves_with_an_edit_in_one_transaction(env: MemoryStores) -> None:
    made = env.save_card("project", "project_knowledge", "Build", "make", "Run make.")
    assert made.status == "applied" and made.filename == "project_knowledge_build.md"
    edited = env.save_card(
        "project",
        "project_knowledge",
        "Build",
        "make all",
        "Run make all.",
        filename=made.filename,
        expected_sha=made.sha256,
    )
    assert (
        edited.status == "applied" and env.read_note("project", made.filename).body.strip() == "Run make all."
    )
    moved = env.save_card(
        "user",
        "user_preference",
        "Builds",
        "",
        "I build with make.",
        filename=made.filename,
        expected_sha=edited.sha256,
        original_level="project",
    )
    assert (
        moved.status == "applied"
        and moved.level == Level.USER
        and moved.filename == "user_preference_builds.md"
    )
    assert not (env.project.dir / made.filename).exists()
    assert env.read_note("user", moved.filename).meta.source == "manual"
    assert env.history()[-1].label == "card edited and moved to user"
    env.undo()  # one batch: the card is back where it was, as it was
    assert env.read_note("project", made.filename).body.strip() == "Run make all."
    assert not (env.user.dir / moved.filename).exists()


def test_save_card_move_over_a_changed_card_writes_nothing(env: MemoryStores) -> None:
    made = env.save_card("project", "project_knowledge", "Build", "", "Run make.")
    path = env.project.dir / made.filename
    path.write_text(path.read_text() + "\nhand edit\n")
    res = env.save_card(
        "user",
        "project_knowledge",
        "Build",
        "",
        "mine",
        filename=made.filename,
        expected_sha=made.sha256,
        original_level="project",
    )
    assert res.status == "conflict"
    assert ("hand edit" in path.read_text() and not env.user.dir.exists()) or not any(
        env.user.dir.glob("*.md")
    )
    with pytest.raises(ValueError, match="hash"):
        env.save_card("project", "project_knowledge", "Build", "", "x", filename=made.filename)


# -- $EDITOR on a private copy (the card browser's `o`) ------------------------------------------


def _card_bytes(title: str, type_: str, body: str, summary: str = "", extra: str = "") -> bytes:
    return f"---\ntitle: {title}\nsummary: {summary}\ntype: {type_}\n{extra}---\n{body}".encode()


def test_an_external_edit_copies_the_card_to_a_private_file_outside_the_stores(env: MemoryStores) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1")
    edit = cards.start_external_edit(env, "project", "project_knowledge_x.md")
    assert edit.path.read_bytes() == p.read_bytes() == edit.original
    assert edit.sha256 == env.read_note("project", "project_knowledge_x.md").sha256
    assert edit.path.name == "project_knowledge_x.md" and edit.path.parent == edit.folder
    assert edit.folder.parent == env.paths.home / "tmp"
    for store in (env.project.dir, env.user.dir):
        assert not edit.path.resolve().is_relative_to(store.resolve())
    assert stat.S_IMODE(edit.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(edit.folder.stat().st_mode) == 0o700
    (edit.folder / "project_knowledge_x.md~").write_text("an editor's backup")
    cards.discard_external_edit(edit)
    assert not edit.folder.exists() and p.exists()


def test_a_symlinked_card_is_not_copied_for_the_editor(env: MemoryStores, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_bytes(_card_bytes("S", "project_knowledge", "secret\n"))
    env.project.dir.mkdir(parents=True)
    (env.project.dir / "project_knowledge_s.md").symlink_to(secret)
    with pytest.raises(StoreError, match="symlink"):
        cards.start_external_edit(env, "project", "project_knowledge_s.md")
    assert not (env.paths.home / "tmp").exists() or not any((env.paths.home / "tmp").iterdir())


def test_a_valid_external_edit_is_one_manual_batch_that_keeps_the_filename_and_undoes_exactly(
    env: MemoryStores,
) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1", summary="old")
    other = write_note(env, Level.USER, "user_preference_tabs.md", "Tabs", "use tabs")
    before, other_before = p.read_bytes(), other.read_bytes()
    edit = cards.start_external_edit(env, "project", "project_knowledge_x.md")
    # A new title and type (an edit, not a rename); the app owns created/updated/source.
    edit.path.write_bytes(
        _card_bytes(
            "Renamed",
            "reference_material",
            "v2\n",
            "new",
            extra="source: someone-else\nupdated: 1999-01-01T00:00:00Z\n",
        )
    )
    res = cards.finish_external_edit(env, edit)
    assert (
        res.status == "applied" and res.result is not None and res.result.filename == "project_knowledge_x.md"
    )
    fm, body = split_note(p.read_text())
    assert (fm["title"], fm["summary"], fm["type"], fm["source"], body) == (
        "Renamed",
        "new",
        "reference_material",
        "manual",
        "v2\n",
    )
    assert fm["updated"] != "1999-01-01T00:00:00Z"
    [entry] = env.history()
    assert entry.source == "manual" and entry.label == "card edited"
    assert [(c.level, c.filename) for c in entry.changes] == [(Level.PROJECT, "project_knowledge_x.md")]
    env.undo()
    assert p.read_bytes() == before and other.read_bytes() == other_before


def test_an_unchanged_copy_applies_nothing(env: MemoryStores) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1")
    edit = cards.start_external_edit(env, "project", "project_knowledge_x.md")
    assert cards.finish_external_edit(env, edit).status == "unchanged"
    # Only the app's own fields changed, or the final newline dropped: still no change.
    edit.path.write_bytes(
        p.read_bytes().replace(b"2026-01-01T00:00:00Z", b"2030-01-01T00:00:00Z").rstrip(b"\n")
    )
    assert cards.finish_external_edit(env, edit).status == "unchanged"
    assert env.history() == []


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"---\ntitle: [unclosed\ntype: project_knowledge\n---\nbody\n", "front matter is not valid YAML"),
        (b"---\ntitle: T\ntype: project_knowledge\n---\nbad \xff\xfe bytes\n", "not valid UTF-8"),
        (b"---\nsummary: s\ntype: project_knowledge\n---\nbody\n", "front matter has no title"),
        (b"---\ntitle: T\ntype: gossip\n---\nbody\n", "unknown type 'gossip'"),
        (b"no front matter at all\n", "no front matter"),
        (b"---\ntitle: T\ntype: project_knowledge\n---\n  \n", "body: the body is empty"),
        (b"---\ntitle: [a, b]\ntype: project_knowledge\n---\nbody\n", "title must be one line of text"),
        (b"---\ntitle: T\ntype: project_knowledge\n---\n" + b"x" * (17 * 1024), "at most 16,384"),
        (b"---\ntitle: T\ntype: project_knowledge\n---\n" + b"x" * (2 * 1024 * 1024), "larger than"),
    ],
)
def test_an_invalid_copy_is_refused_with_its_problem_and_the_card_is_untouched(
    env: MemoryStores, data: bytes, problem: str
) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1")
    before = p.read_bytes()
    edit = cards.start_external_edit(env, "project", "project_knowledge_x.md")
    edit.path.write_bytes(data)
    res = cards.finish_external_edit(env, edit)
    assert res.status == "invalid" and problem in res.problem, res.problem
    assert "\n" not in res.problem
    assert p.read_bytes() == before and env.history() == []
    assert edit.path.read_bytes() == data  # the person's text stays for "edit again"


@pytest.mark.parametrize("what", ["symlink", "folder", "gone", "fifo"])
def test_a_copy_the_editor_replaced_by_something_else_is_not_followed(
    env: MemoryStores, tmp_path: Path, what: str
) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1")
    before = p.read_bytes()
    elsewhere = tmp_path / "elsewhere.md"
    # Valid card text: following the link would make an edit out of it.
    elsewhere.write_bytes(_card_bytes("Planted", "project_knowledge", "planted\n"))
    edit = cards.start_external_edit(env, "project", "project_knowledge_x.md")
    edit.path.unlink()
    if what == "symlink":
        edit.path.symlink_to(elsewhere)
    elif what == "folder":
        edit.path.mkdir()
    elif what == "fifo":
        os.mkfifo(edit.path)
    res = cards.finish_external_edit(env, edit)
    expected = {
        "symlink": "a symlink",
        "folder": "not a regular file",
        "gone": "removed",
        "fifo": "not a regular file",
    }[what]
    assert res.status == "invalid" and expected in res.problem, res.problem
    assert p.read_bytes() == before and env.history() == []
    cards.discard_external_edit(edit)
    assert elsewhere.exists() and not edit.folder.exists()


def test_an_external_edit_of_a_card_changed_on_disk_meanwhile_is_a_conflict(env: MemoryStores) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1")
    edit = cards.start_external_edit(env, "project", "project_knowledge_x.md")
    p.write_bytes(p.read_bytes().replace(b"v1", b"hand edit"))
    on_disk = p.read_bytes()
    edit.path.write_bytes(_card_bytes("X", "project_knowledge", "mine\n"))
    res = cards.finish_external_edit(env, edit)
    assert res.status == "conflict" and res.fields is not None and res.fields.body == "mine\n"
    assert p.read_bytes() == on_disk and env.history() == []


def test_an_external_edit_refused_because_the_editor_failed_writes_nothing(env: MemoryStores) -> None:
    p = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1")
    before = p.read_bytes()
    edit = cards.start_external_edit(env, "project", "project_knowledge_x.md")
    assert cards.finish_external_edit(env, edit, refuse="vi exited with 1").status == "unchanged"
    edit.path.write_bytes(_card_bytes("X", "project_knowledge", "mine\n"))
    res = cards.finish_external_edit(env, edit, refuse="vi exited with 1")
    assert (res.status, res.problem) == ("invalid", "vi exited with 1") and "mine" in res.text
    assert p.read_bytes() == before and env.history() == []


def test_undo_of_an_expected_batch_is_refused_when_another_is_the_last(env: MemoryStores) -> None:
    first = env.create_card("project", "project_knowledge", "First", "one", "One.").txid
    second = env.create_card("project", "project_knowledge", "Second", "two", "Two.").txid
    with pytest.raises(UndoError, match=f"memory batch {second} came after {first}"):
        env.undo(expect=first)
    assert [e.undone_by for e in env.history()] == [None, None]
    assert env.undo(expect=second).txid
    assert env.undo(expect=first).txid
