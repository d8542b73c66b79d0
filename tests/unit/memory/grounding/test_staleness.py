"""Citations checked against the workspace (memory/grounding/staleness.py through
``MemoryStores``): fresh, changed, deleted, renamed (staged, committed, plain ``mv``), and hostile
front matter or a hostile workspace that must never crash a check or make it read outside."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memory.constants import Level, NoteType
from memory.grounding.hashing import FileIds, git_blob_id
from memory.grounding.staleness import Grounding, shared_ids
from memory.model import Cite, NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.stores import MemoryStores
from tests.unit.memory.grounding.conftest import cited_card, git, stores_for


def _check(stores: MemoryStores, name: str) -> tuple[bool, str, list[str]]:
    check = stores.staleness()[name]
    return check.stale, check.reason, [c.state for c in check.cites]


def test_a_card_whose_cited_files_did_not_change_is_fresh(stores: MemoryStores) -> None:
    name = cited_card(stores, "Makefile", "src/app.py:3-9")
    assert _check(stores, name) == (False, "", ["fresh", "fresh"])
    assert "(stale" not in stores.merged_index()


def test_a_changed_file_makes_the_card_stale_and_a_confirmation_fresh_again(
    stores: MemoryStores, repo: Path
) -> None:
    name = cited_card(stores, "Makefile")
    (repo / "Makefile").write_text("all:\n\techo bye\n")
    assert _check(stores, name) == (True, "Makefile changed since this card was written", ["changed"])
    assert "(stale: Makefile changed since this card was written)" in stores.merged_index()
    stores.confirm("project", name)
    assert _check(stores, name) == (False, "", ["fresh"])
    (repo / "Makefile").write_text("all:\n\techo again\n")
    assert _check(stores, name) == (True, "Makefile changed since this card was last confirmed", ["changed"])


def test_a_deleted_file_is_said_deleted(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "src/app.py")
    (repo / "src" / "app.py").unlink()  # deleted, not staged: git's index still has it
    assert _check(stores, name) == (True, "src/app.py was deleted", ["deleted"])
    git(repo, "rm", "-q", "--cached", "src/app.py")
    assert _check(stores, name)[1] == "src/app.py was deleted"


def test_a_staged_git_mv_is_a_rename(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "src/app.py")
    git(repo, "mv", "src/app.py", "src/main.py")
    check = stores.staleness()[name]
    assert check.reason == "src/app.py was renamed to src/main.py"
    assert (check.cites[0].state, check.cites[0].renamed_to) == ("renamed", "src/main.py")


def test_a_committed_rename_with_small_edits_is_found_by_gits_rename_detection(
    stores: MemoryStores, repo: Path
) -> None:
    name = cited_card(stores, "src/app.py")
    git(repo, "mv", "src/app.py", "src/main.py")
    text = (repo / "src" / "main.py").read_text().replace("line_7 = 7", "line_7 = 70")
    (repo / "src" / "main.py").write_text(text)
    git(repo, "commit", "-qam", "rename and edit")
    assert _check(stores, name) == (True, "src/app.py was renamed to src/main.py", ["renamed"])


def test_a_plain_mv_of_an_untracked_file_is_a_rename_by_content(stores: MemoryStores, repo: Path) -> None:
    (repo / "NOTES.txt").write_text("deploy with make ship\n")
    name = cited_card(stores, "NOTES.txt")
    (repo / "docs").mkdir()
    os.replace(repo / "NOTES.txt", repo / "docs" / "NOTES.txt")
    assert _check(stores, name) == (True, "NOTES.txt was renamed to docs/NOTES.txt", ["renamed"])


def test_a_plain_mv_of_a_tracked_file_is_a_rename_by_content(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "Makefile")
    os.replace(repo / "Makefile", repo / "GNUmakefile")  # not staged: git's index still names the old path
    assert _check(stores, name) == (True, "Makefile was renamed to GNUmakefile", ["renamed"])


def test_several_stale_citations_are_one_line(stores: MemoryStores, repo: Path) -> None:
    (repo / "b.txt").write_text("b\n")
    two = cited_card(stores, "Makefile", "src/app.py", title="Two")
    three = cited_card(stores, "Makefile", "src/app.py", "b.txt", title="Three")
    (repo / "Makefile").write_text("changed\n")
    (repo / "src" / "app.py").unlink()
    (repo / "b.txt").write_text("changed\n")
    assert _check(stores, two)[1] == "Makefile changed since this card was written; and 1 more citation"
    assert _check(stores, three)[1] == "Makefile changed since this card was written; and 2 more citations"


def test_a_cited_file_that_became_a_symlink_out_is_not_read(
    stores: MemoryStores, repo: Path, outside: Path
) -> None:
    shutil.copy(repo / "Makefile", outside / "Makefile")  # same bytes: read, it would look fresh
    shutil.copytree(repo / "src", outside / "src")
    name = cited_card(stores, "Makefile", "src/app.py")
    (repo / "Makefile").unlink()
    (repo / "Makefile").symlink_to(outside / "Makefile")
    shutil.rmtree(repo / "src")
    (repo / "src").symlink_to(outside / "src")
    reads = shared_ids().reads
    check = stores.staleness()[name]
    assert [c.state for c in check.cites] == ["unreadable", "unreadable"]
    assert check.reason.startswith(
        "Makefile cannot be checked: 'Makefile' resolves through a symlink outside"
    )
    assert "src/app.py cannot be checked" in check.cites[1].reason
    assert shared_ids().reads == reads


def _hand_card(stores: MemoryStores, name: str, cites: object) -> None:
    """A card file as a hostile clone could carry it: any ``cites`` value in its front matter."""
    import yaml

    meta = NoteMeta(
        title="Hostile",
        summary="s",
        type=NoteType.PROJECT_KNOWLEDGE,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        source="seed",
    )
    text = dump_note(meta, "body").decode()
    head = yaml.safe_dump({"cites": cites}, allow_unicode=False)
    text = text.replace("source: seed\n", f"source: seed\n{head}", 1)
    folder = stores.project.dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8", errors="surrogateescape")


def test_hostile_front_matter_never_crashes_and_never_reads_outside(
    stores: MemoryStores, repo: Path, outside: Path
) -> None:
    secret = git_blob_id((outside / "secret.txt").read_bytes())
    head = git_blob_id((repo / ".git" / "HEAD").read_bytes())
    cited_card(stores, "Makefile")  # the store exists, its files hold real ids
    mem = stores.project.dir / "MEMORY.md"
    _hand_card(stores, "project_knowledge_a.md", "Makefile")
    _hand_card(
        stores,
        "project_knowledge_b.md",
        [{"path": "Makefile"}, {"path": "Makefile", "blob": "nothex"}, 7, None],
    )
    _hand_card(
        stores,
        "project_knowledge_c.md",
        [
            {"path": "../outside/secret.txt", "blob": secret},
            {"path": str(outside / "secret.txt"), "blob": secret},
            {"path": "src/../../outside/secret.txt", "blob": secret},
            {"path": ".git/HEAD", "blob": head},
            {"path": ".PseudoClaude/memory/MEMORY.md", "blob": git_blob_id(mem.read_bytes())},
            {"path": ".", "blob": secret},
            {"path": "Make\x00file", "blob": secret},  # skipped by the reader
            {"path": "Makefile", "lines": "9-1x", "blob": git_blob_id((repo / "Makefile").read_bytes())},
        ],
    )
    reads = shared_ids().reads
    checks = stores.staleness()
    assert (
        "project_knowledge_a.md" not in checks and "project_knowledge_b.md" not in checks
    )  # nothing to check
    c = checks["project_knowledge_c.md"]
    assert [s.state for s in c.cites] == ["unreadable"] * 6 + ["fresh"]
    assert c.cites[-1].state == "fresh" and c.cites[-1].lines is None
    assert all("\n" not in s.reason for s in c.cites)
    assert shared_ids().reads == reads  # the Makefile's id was cached by the apply; nothing else was read
    assert "(stale:" in stores.merged_index()
    assert "Cites (checked now):" in stores.read_memory("project", "project_knowledge_c.md")


def test_a_path_that_is_no_file_name_never_crashes_a_check(repo: Path) -> None:
    # A lone surrogate cannot be a file name; YAML readers without libyaml let one through.
    meta = NoteMeta(
        title="t",
        type=NoteType.PROJECT_KNOWLEDGE,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        cites=(Cite(path="src/\ud800.py", blob="a" * 40),),
    )
    check = Grounding(repo, ids=FileIds()).check(Level.PROJECT, "x.md", meta)
    assert [c.state for c in check.cites] == ["unreadable"]
    assert "\ud800" not in check.reason and check.reason.startswith("src/")


@pytest.mark.plain_ws
def test_a_workspace_that_is_not_a_git_repository_works(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path)) / "plain"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("beta\n")
    stores = stores_for(ws)
    name = cited_card(stores, "a.txt", "b.txt")
    cites = stores.read_note("project", name).meta.cites
    assert all(c.blob.startswith("sha256:") for c in cites)
    assert _check(stores, name) == (False, "", ["fresh", "fresh"])
    (ws / "a.txt").write_text("alpha changed\n")
    (ws / "sub").mkdir()
    os.replace(ws / "b.txt", ws / "sub" / "b.txt")
    assert _check(stores, name) == (
        True,
        "a.txt changed since this card was written; and 1 more citation",
        ["changed", "renamed"],
    )
    assert stores.staleness()[name].cites[1].reason == "b.txt was renamed to sub/b.txt"


def test_git_missing_from_path_still_works(
    stores: MemoryStores, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_git = cited_card(stores, "Makefile", "src/app.py", title="With git")
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("git") is None
    stores = stores_for(repo)
    without = cited_card(stores, "Makefile", title="Without git")
    assert stores.read_note("project", without).meta.cites[0].blob.startswith("sha256:")
    assert _check(stores, with_git) == (False, "", ["fresh", "fresh"])  # a git blob id needs no git to check
    (repo / "Makefile").write_text("changed\n")
    os.replace(repo / "src" / "app.py", repo / "src" / "main.py")
    assert _check(stores, with_git)[2] == ["changed", "renamed"]
    assert _check(stores, without)[2] == ["changed"]


def test_check_reads_each_cited_file_once_for_many_cards(stores: MemoryStores, repo: Path) -> None:
    names = [cited_card(stores, "Makefile", "src/app.py", title=f"Card {i}") for i in range(5)]
    (repo / "Makefile").write_text("changed\n")
    reads = shared_ids().reads
    checks = stores.staleness()
    assert all(checks[n].stale for n in names)
    assert shared_ids().reads == reads + 1
    assert stores.grounding_of(Level.PROJECT, names[0]) == checks[names[0]]


def test_a_cited_file_grown_past_the_limit_is_never_read(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "Makefile")
    ids = shared_ids()
    with open(repo / "Makefile", "r+b") as f:
        f.truncate(65 * 1024 * 1024)  # sparse: no disk used, but hashing it would read 65 MiB
    before = ids.reads
    stale, reason, states = _check(stores, name)
    assert stale and states == ["unreadable"] and "larger than 64 MiB" in reason
    assert ids.reads == before


def test_many_cards_citing_moved_files_hash_the_other_files_once(stores: MemoryStores, repo: Path) -> None:
    # A store of many cards whose cited files were moved by hand: each card's rename is found by
    # content, but the untracked files are hashed once per check, not once per card.
    for i in range(30):
        (repo / f"doc{i}.txt").write_text(f"doc {i}\n")
    names = [cited_card(stores, f"doc{i}.txt", title=f"Doc {i}") for i in range(30)]
    (repo / "moved").mkdir()
    for i in range(30):
        os.replace(repo / f"doc{i}.txt", repo / "moved" / f"doc{i}.txt")
    looked: list[str] = []

    class CountingIds(FileIds):
        def of(self, real: str, kind: str, st: os.stat_result | None = None) -> str:
            looked.append(real)
            return super().of(real, kind, st)

    stores.layout.grounding.ids = CountingIds()
    checks = stores.staleness()
    assert all(checks[n].reason == f"doc{i}.txt was renamed to moved/doc{i}.txt" for i, n in enumerate(names))
    assert len(looked) <= 31, len(looked)  # the 30 moved files (and at most one other), not 30 × 30
