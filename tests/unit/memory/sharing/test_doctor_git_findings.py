"""Doctor's findings for stores shared through git (memory/jobs/doctor.py): a
conflicted card names both versions; a card deleted here that is back (a merge kept another
branch's change) is reported with who changed it until a batch of ours settles it; a store in git
without its .gitattributes is a fixable finding. And a conflicted card never reaches the search
cache, search or recall."""

from __future__ import annotations

from pathlib import Path

from memory.constants import Level, NoteType
from memory.jobs.doctor import DoctorReport, diagnose, fix
from memory.model import NoteMeta
from memory.search.cache import cache_path
from memory.search.engine import MemorySearch
from memory.store.frontmatter import dump_note
from memory.store.stores import MemoryStores
from tests.support.gittools import commit_all, git
from tests.support.memtools import make_env, op, write_note

CARD = "project_knowledge_build.md"


def card(title: str, body: str, summary: str = "", author: str = "") -> bytes:
    meta = NoteMeta(
        title=title,
        summary=summary,
        type=NoteType.PROJECT_KNOWLEDGE,
        author=author,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        source="x",
    )
    return dump_note(meta, body)


def conflicted(ours: str, theirs: str) -> str:
    return f"<<<<<<< HEAD\n{ours}=======\n{theirs}>>>>>>> feature\n"


def diagnosed(stores: MemoryStores) -> DoctorReport:
    stores.refresh_indexes()  # what `memory doctor` does first (the derived-index rule)
    return diagnose(stores)


def findings(stores: MemoryStores) -> list[str]:
    return [f.message for f in diagnosed(stores).findings]


def test_a_conflicted_card_names_both_versions_and_is_not_fixable(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    ours = card("Build", "Run make build.\n", "How to build.").decode()
    theirs = card("Build (ninja)", "Run ninja.\n").decode()
    write_note(stores, Level.PROJECT, "project_knowledge_ok.md", "Ok", "fine")
    (stores.project.dir / CARD).write_text(conflicted(ours, theirs))
    stores.refresh_indexes()
    report = diagnose(stores)
    assert [(f.message, f.fixable) for f in report.findings] == [
        (
            f"project store: {CARD} is conflicted (changed on two branches): ours: Build — How to build., "
            "theirs: Build (ninja); resolve it in the card editor or with `memory apply` of an update",
            False,
        )
    ]
    (stores.project.dir / CARD).write_text(conflicted(ours, "no front matter here\n"))
    (line,) = findings(stores)
    assert "ours: Build — How to build., theirs: (its front matter does not parse: no front matter" in line


def test_a_conflicted_card_never_reaches_the_search_cache_search_or_recall(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_ok.md", "Ok", "nothing to see")
    text = conflicted(
        card("Frob", "The frobnicator ours.\n").decode(), card("Frob", "The frobnicator theirs.\n").decode()
    )
    (stores.project.dir / CARD).write_text(text)
    search = MemorySearch(stores)
    try:
        assert search.search("frobnicator") == []
        assert search.recall("how is the frobnicator calibrated", shown=()) == []
    finally:
        search.close()
    db = cache_path(stores.paths.home, stores.project.dir)
    for f in (db, db.with_name(db.name + "-wal")):
        assert not f.exists() or b"frobnicator" not in f.read_bytes()
    assert db.exists()


def test_a_card_deleted_here_and_back_from_another_branch_is_reported_until_a_batch_of_ours(
    tmp_path: Path,
) -> None:
    stores = make_env(tmp_path)
    path = stores.project.dir / CARD
    assert stores.apply(
        [(0, op("create", "project", type="project_knowledge", title="Build", content="Run make."))],
        source="manual",
    ).applied
    assert stores.apply([(0, op("delete", "project", filename=CARD))], source="manual").applied
    when = stores.history()[-1].time
    assert findings(stores) == []
    path.write_bytes(card("Build", "Run make, then test.\n", author="Bob"))  # what a merge kept
    report = diagnosed(stores)
    assert [(f.message, f.fixable) for f in report.findings] == [
        (
            f"project store: {CARD} was deleted here ({when}) and changed by Bob on another branch; "
            "keep it (edit or `memory confirm` it) or delete it again",
            False,
        )
    ]
    path.write_bytes(card("Build", "Run make, then test.\n"))  # no author, not in git (make_env)
    assert "changed by someone on another branch" in findings(stores)[0]
    stores.confirm("project", CARD)
    assert findings(stores) == []


def test_the_author_comes_from_git_when_the_card_does_not_say(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    stores = MemoryStores(ws, tmp_path / "home")
    stores.trust_project()
    assert stores.apply(
        [(0, op("create", "project", type="project_knowledge", title="Build", content="x"))], source="manual"
    ).applied
    assert stores.apply([(0, op("delete", "project", filename=CARD))], source="manual").applied
    (stores.project.dir / CARD).write_bytes(card("Build", "y\n"))
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "back", "--author=Carol <c@example.invalid>")
    assert "changed by Carol on another branch" in findings(stores)[0]


def test_a_card_restored_unchanged_is_said_so_and_an_undone_delete_is_no_finding(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    assert stores.apply(
        [(0, op("create", "project", type="project_knowledge", title="Build", content="x"))], source="manual"
    ).applied
    path = stores.project.dir / CARD
    data = path.read_bytes()
    assert stores.apply([(0, op("delete", "project", filename=CARD))], source="manual").applied
    path.write_bytes(data)  # `git checkout -- file`
    (line,) = findings(stores)
    assert line.startswith(f"project store: {CARD} was deleted here (") and "is back unchanged" in line
    path.unlink()
    stores.undo()
    assert path.read_bytes() == data and findings(stores) == []


def test_a_store_in_git_without_gitattributes_is_a_fixable_finding(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_ok.md", "Ok", "fine")
    write_note(stores, Level.USER, "user_preference_tabs.md", "Tabs", "tabs")
    stores.refresh_indexes()
    (stores.project.dir / ".gitattributes").unlink()
    assert [(f.message, f.fixable) for f in diagnose(stores).findings] == [
        (
            "project store: .gitattributes (MEMORY.md merge=union, so merges of cards do not conflict on it) "
            "is missing",
            True,
        )
    ]
    git(stores.user.dir, "init", "-q", "-b", "main")
    assert any(
        f.message.startswith("user store: .gitattributes") and f.fixable for f in diagnose(stores).findings
    )
    report = fix(stores)
    assert report.ok, report.findings
    assert (stores.project.dir / ".gitattributes").exists() and (stores.user.dir / ".gitattributes").exists()
    commit_all(stores.user.dir, "sync")
    assert findings(stores) == []
