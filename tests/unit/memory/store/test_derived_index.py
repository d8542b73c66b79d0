"""MEMORY.md is derived: whatever a merge, a checkout or an editor left in it, it is
rebuilt from the cards before it is used, with no history entry; a store in git carries the
``.gitattributes`` that makes a merge of it conflict-free."""

from __future__ import annotations

from pathlib import Path

from memory.constants import INDEX_FILE, Level
from memory.store.store import GIT_FILES, GITATTRIBUTES, render_index
from tests.support.memtools import make_env, op, write_note


def index_of(stores) -> str:  # type: ignore[no-untyped-def]
    return (stores.project.dir / INDEX_FILE).read_text()


def seeded(tmp_path: Path):  # type: ignore[no-untyped-def]
    stores = make_env(tmp_path)
    for name in ("a", "b", "c"):
        write_note(stores, Level.PROJECT, f"project_knowledge_{name}.md", f"Card {name}", f"{name}\n")
    return stores


def test_a_union_merged_index_is_rebuilt_sorted_once_each_without_a_history_entry(tmp_path: Path) -> None:
    stores = seeded(tmp_path)
    want = render_index(stores.project.notes())
    lines = want.splitlines(keepends=True)
    # What a union merge leaves: both sides' lines, out of order, one twice, and a stray marker.
    (stores.project.dir / INDEX_FILE).write_text(
        "".join([lines[2], lines[0], lines[2], "=======\n", lines[1]])
    )
    assert stores.refresh_indexes() == [Level.PROJECT]
    assert index_of(stores) == want
    assert stores.history() == []
    assert stores.refresh_indexes() == []  # in step now: nothing written


def test_the_first_batch_writes_gitattributes_with_gitignore(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    stores.apply(
        [(0, op("create", "project", type="project_knowledge", title="Build", content="make\n"))], source="s1"
    )
    assert (stores.project.dir / ".gitattributes").read_bytes() == GITATTRIBUTES
    assert b"MEMORY.md merge=union" in GITATTRIBUTES
    assert all((stores.project.dir / name).exists() for name in GIT_FILES)
    # The user store is not in git: none of it there.
    stores.apply(
        [(0, op("create", "user", type="user_preference", title="Terse", content="terse\n"))], source="s1"
    )
    assert not (stores.user.dir / ".gitattributes").exists()


def test_an_older_store_gets_its_gitattributes_back_on_refresh(tmp_path: Path) -> None:
    stores = seeded(tmp_path)
    stores.refresh_indexes()
    (stores.project.dir / ".gitattributes").unlink()
    assert stores.refresh_indexes() == [Level.PROJECT]
    assert (stores.project.dir / ".gitattributes").read_bytes() == GITATTRIBUTES


def test_a_user_store_in_git_carries_the_git_files_too(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.USER, "user_preference_terse.md", "Terse", "terse\n")
    (stores.user.dir / ".git").mkdir()
    assert Level.USER in stores.refresh_indexes()
    assert (stores.user.dir / ".gitattributes").read_bytes() == GITATTRIBUTES
    assert (stores.user.dir / ".gitignore").exists()


def test_an_untrusted_project_store_is_left_as_it_came(tmp_path: Path) -> None:
    stores = make_env(tmp_path, trusted=False)
    write_note(stores, Level.PROJECT, "project_knowledge_a.md", "Card a", "a\n")
    (stores.project.dir / INDEX_FILE).write_text("forged line\n")
    assert stores.refresh_indexes() == []
    assert index_of(stores) == "forged line\n"
    assert not (stores.project.dir / ".gitattributes").exists()


def test_an_interrupted_batch_is_left_for_its_recovery_and_for_doctor(tmp_path: Path) -> None:
    stores = seeded(tmp_path)
    (stores.project.dir / INDEX_FILE).write_text("stale\n")
    jdir = stores.paths.journal_dir
    jdir.mkdir(parents=True)
    (jdir / "00000000000000000001-deadbeef.json").write_text("{}")
    assert stores.refresh_indexes() == []
    assert index_of(stores) == "stale\n"


def test_a_conflicted_card_is_listed_in_the_rebuilt_index_file_never_in_a_prompt(tmp_path: Path) -> None:
    stores = seeded(tmp_path)
    (stores.project.dir / "project_knowledge_b.md").write_text(
        "<<<<<<< HEAD\n---\ntitle: B1\n---\nx\n=======\n---\ntitle: B2\n---\ny\n>>>>>>> other\n"
    )
    stores.refresh_indexes()
    # MEMORY.md keeps one line per file (nothing vanishes from the file a person reads) …
    assert "(project_knowledge_b.md)" in index_of(stores)
    # … but the prompt's index is built from the cards, and a conflicted one is not among them.
    assert "project_knowledge_b.md" not in stores.merged_index()


def test_an_unchanged_folder_is_not_checked_again_and_any_change_is(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    import memory.store.transaction as transaction

    stores = seeded(tmp_path)
    assert stores.refresh_indexes() == [Level.PROJECT]  # rebuilt: not stamped yet
    assert stores.refresh_indexes() == []  # in step, but just written: too recent to stamp
    assert stores.refresh_indexes() == []
    hour_ago = os.stat(stores.project.dir).st_mtime - 3600
    for p in stores.project.dir.iterdir():
        os.utime(p, (hour_ago, hour_ago), follow_symlinks=False)
    assert stores.refresh_indexes() == []  # checked, found in step, settled: stamped
    checks: list[object] = []
    real = transaction.rebuild_indexes_locked
    monkeypatch.setattr(
        transaction, "rebuild_indexes_locked", lambda *a, **k: checks.append(a) or real(*a, **k)
    )
    assert stores.refresh_indexes() == [] and checks == []  # the stamp holds: no card parsed
    # A merge rewrites MEMORY.md (same size even): the stamp no longer holds, the check runs.
    path = stores.project.dir / INDEX_FILE
    good = path.read_text()
    path.write_text(good.replace("Card a", "Card x"))
    assert stores.refresh_indexes() == [Level.PROJECT] and len(checks) == 1
    assert path.read_text() == good
