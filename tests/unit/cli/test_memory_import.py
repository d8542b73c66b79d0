"""``pseudoclaude memory import PATH… [--level L] [--dry-run] [--yes]``: the dry run shows the
cards, ``--yes`` makes exactly those, a second import makes none, without ``--yes`` one held job
that ``memory approve`` applies, each card's ``source`` names its file and section, and the
sources are never changed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from app.cli.main import main
from memory.constants import Level
from memory.store.stores import MemoryStores
from tests.support.importdata import (
    CLAUDE_MD,
    CLAUDE_TITLES,
    claude_memory_folder,
    codex_memories_folder,
    digest_tree,
)

pytestmark = pytest.mark.plain_ws

_WOULD = re.compile(r"^would create (project|user)/(\S+)  \[(\w+)\] (.+)$")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "repo"
    (w / ".git").mkdir(parents=True)
    (w / "CLAUDE.md").write_text(CLAUDE_MD)
    return Path(os.path.realpath(w))


@pytest.fixture
def cli(ws: Path, capsys: pytest.CaptureFixture[str]):
    def run(*args: str) -> tuple[int, str, str]:
        code = main(["memory", *args, "-C", str(ws)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def cards(ws: Path, level: Level = Level.PROJECT) -> dict[str, tuple[str, str, str]]:
    """filename -> (title, type, source) of each card of a level."""
    return {
        n.filename: (n.meta.title, n.meta.type.value, n.meta.source) for n in MemoryStores(ws).notes(level)
    }


def would_create(out: str) -> dict[str, tuple[str, str]]:
    found = {}
    for line in out.splitlines():
        m = _WOULD.match(line)
        if m:
            found[m.group(2)] = (m.group(4), m.group(3))
    return found


def test_dry_run_shows_the_cards_and_yes_makes_exactly_those(cli, ws: Path) -> None:
    before = digest_tree(ws / "CLAUDE.md")
    code, out, err = cli("import", str(ws / "CLAUDE.md"), "--dry-run")
    assert code == 0 and err == ""
    shown = would_create(out)
    assert sorted(t for t, _ in shown.values()) == sorted(CLAUDE_TITLES)
    assert "    source: import:CLAUDE.md#Code style\n    Use four spaces; `ruff format` decides.\n" in out
    assert out.splitlines()[-1] == "dry run: 5 cards would be made, 0 skipped; nothing was changed"
    assert cards(ws) == {} and not (ws / ".PseudoClaude").exists()

    code, out, err = cli("import", str(ws / "CLAUDE.md"), "--yes")
    assert code == 0, err
    assert sorted(out.splitlines()) == sorted(f"create project/{name}" for name in shown)
    made = cards(ws)
    assert {name: (title, type_) for name, (title, type_, _) in made.items()} == shown
    assert made["project_knowledge_code-style.md"][2] == "import:CLAUDE.md#Code style"
    assert made["user_preference_preferences.md"][2] == "import:CLAUDE.md#Preferences"
    assert made["reference_material_references.md"][1] == "reference_material"
    assert digest_tree(ws / "CLAUDE.md") == before


def test_a_second_import_makes_no_card(cli, ws: Path) -> None:
    assert cli("import", str(ws / "CLAUDE.md"), "--yes")[0] == 0
    made = cards(ws)
    code, out, err = cli("import", str(ws / "CLAUDE.md"), "--yes")
    assert code == 0 and err == ""
    assert cards(ws) == made
    assert out.splitlines()[-1] == "nothing to import: 5 cards already there or refused"
    assert (
        "skip [project_knowledge] Code style (import:CLAUDE.md#Code style): already a project card: "
        "project_knowledge_code-style.md" in out
    )
    code, out, _ = cli("import", str(ws / "CLAUDE.md"), "--dry-run")
    assert (
        code == 0 and out.splitlines()[-1] == "dry run: 0 cards would be made, 5 skipped; nothing was changed"
    )


def test_without_yes_one_held_job_that_approve_applies(cli, ws: Path) -> None:
    code, out, err = cli("import", str(ws / "CLAUDE.md"))
    assert code == 0, err
    job = out.splitlines()[0].split()[1].rstrip(":")
    assert out.splitlines()[0] == f"job {job}: memory import CLAUDE.md (5 cards)"
    assert "0 create project/project_knowledge_frobnicator.md  [project_knowledge] Frobnicator" in out
    assert f"`pseudoclaude memory approve {job}`" in out
    assert cards(ws) == {}
    code, pending, _ = cli("pending")
    assert code == 0 and f"{job}  held" in pending and "5 held op(s)" in pending

    # The same file again: no second job with the same cards.
    code, out, _ = cli("import", str(ws / "CLAUDE.md"))
    assert code == 0 and f"already held for review in job {job}" in out
    assert len(cli("pending")[1].splitlines()) == 1

    code, out, err = cli("approve", job)
    assert code == 0, err
    made = cards(ws)
    assert sorted(t for t, _, _ in made.values()) == sorted(CLAUDE_TITLES)
    assert made["project_knowledge_build-and-test.md"][2] == "import:CLAUDE.md#Build and test"
    assert cli("pending")[1] == "no pending memory jobs\n"


def test_approving_some_ops_keeps_the_others_held_with_their_sources(cli, ws: Path) -> None:
    out = cli("import", str(ws / "CLAUDE.md"))[1]
    job = out.splitlines()[0].split()[1].rstrip(":")
    code, out, err = cli("approve", job, "2")
    assert code == 0, err
    assert cards(ws) == {
        "project_knowledge_code-style.md": ("Code style", "project_knowledge", "import:CLAUDE.md#Code style")
    }
    left = re.search(r"still held: ops 0, 1, 3, 4 \(job (\S+)\)", out)
    assert left is not None
    assert cli("approve", left.group(1))[0] == 0
    assert cards(ws)["user_preference_preferences.md"][2] == "import:CLAUDE.md#Preferences"


def test_undo_reverts_the_whole_import(cli, ws: Path) -> None:
    assert cli("import", str(ws / "CLAUDE.md"), "--yes")[0] == 0
    code, out, _ = cli("undo")
    assert code == 0 and len(out.splitlines()) == len(CLAUDE_TITLES)
    assert cards(ws) == {}


def test_a_claude_code_folder_and_a_codex_folder_import_unchanged(cli, ws: Path) -> None:
    home = Path(os.environ["HOME"])
    claude, codex = claude_memory_folder(home), codex_memories_folder(home)
    before = {**digest_tree(claude), **digest_tree(codex)}
    code, _, err = cli("import", str(claude), str(codex), "--level", "user", "--yes")
    assert code == 0, err
    made = cards(ws, Level.USER)
    by_source = {source: (title, type_) for title, type_, source in made.values()}
    assert by_source == {
        "import:~/.claude/projects/-work-frob/memory/feedback_testing.md": (
            "Integration tests use a real database",
            "correction_feedback",
        ),
        "import:~/.claude/projects/-work-frob/memory/user_role.md": ("user role", "user_preference"),
        "import:~/.claude/projects/-work-frob/memory/deploy_notes.md": ("Deploy steps", "project_knowledge"),
        "import:~/.codex/memories/MEMORY.md#Task Group: frob service builds": (
            "Task Group: frob service builds",
            "project_knowledge",
        ),
        "import:~/.codex/memories/MEMORY.md#Task Group: release process": (
            "Task Group: release process",
            "project_knowledge",
        ),
        "import:~/.codex/memories/extensions/ad_hoc/notes/tabs.md": ("tabs", "project_knowledge"),
    }
    assert cards(ws) == {}, "--level user: nothing in the project store"
    assert {**digest_tree(claude), **digest_tree(codex)} == before


def test_bad_paths_are_one_line_each_and_the_good_ones_still_import(cli, ws: Path, tmp_path: Path) -> None:
    (tmp_path / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    code, out, err = cli("import", str(tmp_path / "blob.md"), str(ws / "CLAUDE.md"), "--yes")
    assert code == 1
    assert err == f"pseudoclaude: {tmp_path / 'blob.md'}: a binary file (it holds NUL bytes), not Markdown\n"
    assert len(cards(ws)) == len(CLAUDE_TITLES) == len(out.splitlines())
    code, _, err = cli("import", str(tmp_path / "nope.md"), "--dry-run")
    assert code == 2 and err == f"pseudoclaude: {tmp_path / 'nope.md'}: no such file or folder\n"


def test_an_untrusted_project_store_is_refused_with_the_way_out(cli, ws: Path, tmp_path: Path) -> None:
    store = ws / ".PseudoClaude" / "memory"
    store.mkdir(parents=True)
    (store / "project_knowledge_x.md").write_text(
        "---\ntitle: X\ntype: project_knowledge\n"
        "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n"
        "source: manual\n---\nx\n"
    )
    code, out, err = cli("import", str(ws / "CLAUDE.md"), "--yes")
    assert code == 1 and out == "" and "not trusted yet" in err and "--level user" in err
    code, out, err = cli("import", str(ws / "CLAUDE.md"), "--yes", "--level", "user")
    assert code == 0, err
    assert len(cards(ws, Level.USER)) == len(CLAUDE_TITLES)
