"""Reading ``memory import``'s sources (files, Claude Code and Codex memory folders, bad input) and
planning their cards against the store: an identical card or a held one is never made twice."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.constants import Action, Level, NoteType
from memory.jobs.importing import MAX_SOURCE_BYTES, display_path, gather, hold_import, plan_import
from memory.jobs.spool import Spool
from memory.model import Operation
from memory.store.stores import MemoryStores
from tests.support.importdata import CLAUDE_MD, CLAUDE_TITLES, claude_memory_folder, codex_memories_folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "repo"
    (w / ".git").mkdir(parents=True)
    return Path(os.path.realpath(w))


def test_a_claude_md_in_the_workspace_is_named_relative_to_it(ws: Path) -> None:
    (ws / "CLAUDE.md").write_text(CLAUDE_MD)
    got = gather([str(ws / "CLAUDE.md")], ws)
    assert not got.problems and got.origins == ["CLAUDE.md"]
    assert [c.title for c in got.cards] == CLAUDE_TITLES
    assert got.cards[2].provenance == "import:CLAUDE.md#Code style"


def test_a_claude_code_memory_folder_is_one_card_per_note(ws: Path) -> None:
    folder = claude_memory_folder(Path(os.environ["HOME"]))
    got = gather([str(folder)], ws)
    assert not got.problems and got.origins == ["~/.claude/projects/-work-frob/memory"]
    cards = {c.title: c for c in got.cards}
    # MEMORY.md held only links to the notes: nothing of it is a card of its own.
    assert sorted(cards) == ["Deploy steps", "Integration tests use a real database", "user role"]
    assert cards["Integration tests use a real database"].type is NoteType.CORRECTION_FEEDBACK
    assert (
        cards["Integration tests use a real database"].summary
        == "Mocked tests hid a broken migration last quarter."
    )
    assert cards["user role"].type is NoteType.USER_PREFERENCE
    assert cards["Deploy steps"].provenance == "import:~/.claude/projects/-work-frob/memory/deploy_notes.md"


def test_a_codex_folder_gives_its_handbook_by_task_group_and_its_notes(ws: Path) -> None:
    folder = codex_memories_folder(Path(os.environ["HOME"]))
    got = gather([str(folder)], ws)
    assert not got.problems
    assert [c.title for c in got.cards] == [
        "Task Group: frob service builds",
        "Task Group: release process",
        "tabs",
    ]
    first = got.cards[0]
    assert "## Reusable knowledge\n\n- `make clean` before `make test`" in first.body
    assert first.provenance == "import:~/.codex/memories/MEMORY.md#Task Group: frob service builds"
    assert got.cards[2].provenance == "import:~/.codex/memories/extensions/ad_hoc/notes/tabs.md"
    # The derived summary, the raw phase-one file and the rollout recaps are not memory of their own.
    assert not any("phase one" in c.body or "long recap" in c.body for c in got.cards)


def test_bad_input_is_one_reason_each_and_the_other_paths_still_count(ws: Path, tmp_path: Path) -> None:
    (ws / "CLAUDE.md").write_text("## Build\nmake\n")
    (tmp_path / "bin.md").write_bytes(b"## x\n\x00\x01\x02")
    (tmp_path / "latin1.md").write_bytes("## Caf\xe9\n".encode("latin-1"))
    (tmp_path / "empty-folder").mkdir()
    (tmp_path / "only-text").mkdir()
    (tmp_path / "only-text" / "a.txt").write_text("not a note")
    os.mkfifo(tmp_path / "pipe.md")
    paths = [
        str(tmp_path / n)
        for n in ("bin.md", "latin1.md", "empty-folder", "only-text", "pipe.md", "missing.md")
    ]
    got = gather([*paths, str(ws / "CLAUDE.md")], ws)
    assert [c.title for c in got.cards] == ["Build"]
    reasons = {Path(p.path).name: (p.reason, p.usage) for p in got.problems}
    assert reasons == {
        "bin.md": ("a binary file (it holds NUL bytes), not Markdown", False),
        "latin1.md": ("not UTF-8 text (invalid byte at offset 6)", False),
        "empty-folder": ("no notes in this folder (no .md files)", False),
        "only-text": ("no notes in this folder (no .md files)", False),
        "pipe.md": ("not a regular file", False),
        "missing.md": ("no such file or folder", True),
    }


def test_a_symlinked_source_is_read_and_named_as_given(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("## Build\nmake\n")
    (ws / "AGENTS.md").symlink_to(target)
    assert display_path(str(ws / "AGENTS.md"), ws) == "AGENTS.md"
    got = gather([str(ws / "AGENTS.md")], ws)
    assert [c.provenance for c in got.cards] == ["import:AGENTS.md#Build"]


def test_a_huge_file_is_read_up_to_its_bound_and_said_so(ws: Path) -> None:
    section = "## Part {n}\n" + ("word " * 19 + "\n") * 50
    text = "".join(section.format(n=n) for n in range(MAX_SOURCE_BYTES // 5000 + 20))
    (ws / "CLAUDE.md").write_text(text)
    got = gather([str(ws / "CLAUDE.md")], ws)
    assert len(got.notices) == 1 and got.notices[0].startswith("CLAUDE.md: only its first ")
    assert got.cards and all(len(c.body.encode()) < 16 * 1024 for c in got.cards)


def test_plan_skips_an_existing_card_and_one_held_and_names_the_rest_like_the_store(ws: Path) -> None:
    (ws / "CLAUDE.md").write_text(CLAUDE_MD)
    stores = MemoryStores(ws)
    cards = gather([str(ws / "CLAUDE.md")], ws).cards
    first = plan_import(stores, cards, Level.PROJECT)
    assert [p.skip for p in first] == [""] * len(CLAUDE_TITLES)
    assert [p.filename for p in first] == [
        "project_knowledge_frobnicator.md",
        "project_knowledge_build-and-test.md",
        "project_knowledge_code-style.md",
        "user_preference_preferences.md",
        "reference_material_references.md",
    ]
    job = hold_import(stores, first[:2], ["CLAUDE.md"])
    again = plan_import(stores, cards, Level.PROJECT)
    assert [p.skip for p in again[:2]] == [f"already held for review in job {job.id}"] * 2
    assert [p.skip for p in again[2:]] == ["", "", ""]
    entries = Spool(stores.paths).list(ws)
    assert [e.job.state for e in entries if e.job] == ["held"]
    assert [h.source for h in entries[0].job.held_ops] == [
        "import:CLAUDE.md#Frobnicator",
        "import:CLAUDE.md#Build and test",
    ]


def test_two_identical_sections_make_one_card(ws: Path) -> None:
    (ws / "CLAUDE.md").write_text("## Build\nmake\n## Build\nmake\n")
    stores = MemoryStores(ws)
    planned = plan_import(stores, gather([str(ws / "CLAUDE.md")], ws).cards, Level.PROJECT)
    assert [p.skip for p in planned] == ["", "the same title and text as an earlier card of this import"]


def test_a_per_card_source_is_written_as_one_clean_line_and_the_others_keep_the_batch_source(
    ws: Path,
) -> None:
    stores = MemoryStores(ws)
    ops = [
        (
            i,
            Operation(
                action=Action.CREATE,
                level=Level.PROJECT,
                type=NoteType.PROJECT_KNOWLEDGE,
                title=f"Card {i}",
                content=f"body {i}",
            ),
        )
        for i in range(2)
    ]
    result = stores.apply(ops, source="import", sources={0: "import:x.md#a\x1b[31m\nb"})
    assert len(result.applied) == 2
    sources = {n.meta.title: n.meta.source for n in stores.notes(Level.PROJECT)}
    assert sources == {"Card 0": "import:x.md#a b", "Card 1": "import"}
