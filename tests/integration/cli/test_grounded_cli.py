"""Grounded cards from the command line, with real git: a card citing the Makefile
goes stale when the Makefile changes, says so in `memory list --stale`, the index, `memory show`,
`memory doctor`, the next session's prompt and `read_memory`; `memory confirm` makes it fresh
and `memory undo` reverts that. Renames and deletions are said as such; citations leading out of
the workspace are dropped with a reason."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from memory.store.stores import MemoryStores
from tests.support.clitools import (
    MEMORY_MODEL,
    MODEL,
    create_op,
    ops_answer,
    result_text,
    run_cli,
    system_text,
    tool_results,
)
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.gittools import git

pytestmark = pytest.mark.timeout(120)

CARD = "project_knowledge_build.md"
CHANGED = "Makefile changed since this card was written"
MARKED = f"- [project_knowledge] Build — How to build. ({CARD}) (stale: {CHANGED})"
UNMARKED = f"- [project_knowledge] Build — How to build. ({CARD})"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git work tree with a tracked, committed Makefile (by its real path)."""
    w = tmp_path / "repo"
    w.mkdir()
    git(w, "init", "-q", "-b", "main")
    (w / "Makefile").write_text("all:\n\tcc -o app main.c\n")
    git(w, "add", "Makefile")
    git(w, "commit", "-q", "-m", "start")
    return Path(os.path.realpath(w))


def card_path(ws: Path, name: str = CARD) -> Path:
    return ws / ".PseudoClaude" / "memory" / name


def apply(ws: Path, *ops: dict[str, Any]) -> tuple[str, str]:
    res = run_cli(None, ws, "memory", "apply", "-", stdin=json.dumps(list(ops)))
    assert res.code == 0, res.err
    return res.out, res.err


def cited(title: str, *cites: Any) -> dict[str, Any]:
    return {
        **create_op(title, f"{title}: see the cited files.", summary="How to build."),
        "cites": list(cites),
    }


def stale_list(ws: Path) -> str:
    res = run_cli(None, ws, "memory", "list", "--stale")
    assert res.code == 0, res.err
    return res.out


def cites_of(ws: Path, name: str = CARD) -> list[tuple[str, str | None, str]]:
    note = MemoryStores(ws).read_note("project", name)
    return [(c.path, c.lines, c.blob) for c in note.meta.cites]


def test_a_card_citing_the_makefile_goes_stale_is_confirmed_and_the_confirmation_undone(repo: Path) -> None:
    apply(repo, cited("Build", "Makefile"))
    res = run_cli(None, repo, "memory", "list", "--stale")
    assert (res.code, res.out, res.err) == (0, "", "pseudoclaude: no stale cards\n")

    (repo / "Makefile").write_text("all:\n\tclang -o app main.c\n")
    assert stale_list(repo) == f"project  {CARD}  Build — {CHANGED}\n"
    index = run_cli(None, repo, "memory", "index").out
    assert MARKED in index.splitlines()
    listing = run_cli(None, repo, "memory", "list").out
    assert (
        f"{CARD}  [project_knowledge] Build — How to build." in listing and f"  stale: {CHANGED}" in listing
    )
    shown = run_cli(None, repo, "memory", "show", "project", CARD)
    assert shown.code == 0
    assert shown.out.startswith(f"Cites (checked now):\n- Makefile: {CHANGED}\n")
    assert shown.out.endswith("Build: see the cited files.\n") and "\n---\ntitle: Build\n" in shown.out

    before = card_path(repo).read_bytes()
    res = run_cli(None, repo, "memory", "confirm", "project", CARD)
    assert (res.code, res.out, res.err) == (0, f"confirmed project/{CARD}\n", "")
    assert stale_list(repo) == ""
    assert UNMARKED in run_cli(None, repo, "memory", "index").out.splitlines()
    assert cites_of(repo)[0][2] == git(repo, "hash-object", "Makefile").strip()
    assert "confirmed: " in card_path(repo).read_text()

    res = run_cli(None, repo, "memory", "undo")
    assert res.code == 0 and res.out == f"reverted project/{CARD}\n", res.err
    assert card_path(repo).read_bytes() == before
    assert stale_list(repo) == f"project  {CARD}  Build — {CHANGED}\n"


def test_the_next_session_prompt_marks_the_stale_card_and_read_memory_shows_the_changed_citation(
    server: FakeAnthropic, repo: Path
) -> None:
    apply(repo, cited("Build", "Makefile"))
    (repo / "Makefile").write_text("all:\n\tclang -o app main.c\n")
    server.script(MODEL, tool_use("read_memory", {"level": "project", "filename": CARD}), text("Use clang."))
    res = run_cli(server, repo, "-p", "how do I build?", "--memory", "off")
    assert res.code == 0, res.err
    first, second = server.requests_for(MODEL)
    assert MARKED in system_text(first).splitlines()
    [result] = tool_results(second)
    body = result_text(result)
    assert not result.get("is_error")
    assert body.startswith(f"Cites (checked now):\n- Makefile: {CHANGED}\n") and "STALE" in body
    assert body.rstrip().endswith("Build: see the cited files.")
    # The real read is counted: not unused in the last day.
    unused = run_cli(None, repo, "memory", "list", "--unused", "1")
    assert unused.code == 0 and CARD not in unused.out


def test_a_renamed_file_is_said_renamed_and_a_deleted_one_deleted(repo: Path) -> None:
    big = "".join(f"line {i}: some text that stays the same\n" for i in range(60))
    for name in ("a.py", "b.py", "c.py", "gone.py"):
        (repo / name).write_text(f"# {name}\n{big}")
    (repo / "loose.txt").write_text("an untracked file\n")
    git(repo, "add", "a.py", "b.py", "c.py", "gone.py")
    git(repo, "commit", "-q", "-m", "files")
    apply(
        repo,
        cited("Staged", "a.py"),
        cited("Committed", "b.py:1-3"),
        cited("Edited", "c.py"),
        cited("Gone", "gone.py"),
        cited("Loose", "loose.txt"),
    )

    git(repo, "mv", "a.py", "a2.py")  # staged only
    git(repo, "mv", "b.py", "b2.py")
    git(repo, "commit", "-q", "-m", "rename b")
    git(repo, "mv", "c.py", "c2.py")
    (repo / "c2.py").write_text((repo / "c2.py").read_text() + "one more line\n")  # a rename with edits
    git(repo, "add", "c2.py")
    git(repo, "commit", "-q", "-m", "rename c with an edit")
    git(repo, "rm", "-q", "gone.py")
    git(repo, "commit", "-q", "-m", "delete")
    (repo / "loose.txt").rename(repo / "loose2.txt")  # untracked: the same content at another path

    assert stale_list(repo).splitlines() == [
        "project  project_knowledge_committed.md  Committed — b.py was renamed to b2.py",
        "project  project_knowledge_edited.md  Edited — c.py was renamed to c2.py",
        "project  project_knowledge_gone.md  Gone — gone.py was deleted",
        "project  project_knowledge_loose.md  Loose — loose.txt was renamed to loose2.txt",
        "project  project_knowledge_staged.md  Staged — a.py was renamed to a2.py",
    ]
    res = run_cli(None, repo, "memory", "confirm", "project", "project_knowledge_committed.md")
    assert (
        res.code == 0
        and res.out == "confirmed project/project_knowledge_committed.md\n  b.py is now cited as b2.py\n"
    )
    assert cites_of(repo, "project_knowledge_committed.md") == [
        ("b2.py", "1-3", git(repo, "hash-object", "b2.py").strip())
    ]
    res = run_cli(None, repo, "memory", "confirm", "project", "project_knowledge_gone.md")
    assert res.code == 0 and "dropped the citation of gone.py: gone.py was deleted" in res.out
    assert "project_knowledge_gone.md" not in stale_list(repo)


def test_citations_out_of_the_workspace_are_dropped_each_with_a_reason_and_the_card_keeps_the_good_ones(
    repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "outside").write_text("not ours\n")
    os.symlink(tmp_path / "outside", repo / "link-out")
    (repo / "notes.txt").write_text("untracked notes\n")
    apply(repo, create_op("Seed", "a card, so the store exists"))
    out, err = apply(
        repo,
        cited(
            "Build",
            "Makefile",
            "../outside",
            "/etc/passwd",
            "link-out",
            ".git/config",
            ".PseudoClaude/memory/project_knowledge_seed.md",
            "notes.txt:2-4",
        ),
    )
    assert out == f"create project/{CARD}\n"
    assert err.splitlines() == [
        "pseudoclaude: op 0: citation '../outside' dropped: '../outside' leaves the workspace through '..'",
        "pseudoclaude: op 0: citation '/etc/passwd' dropped: '/etc/passwd' is an absolute path; "
        "a citation is relative to the workspace",
        "pseudoclaude: op 0: citation 'link-out' dropped: 'link-out' resolves through a symlink "
        "outside the workspace",
        "pseudoclaude: op 0: citation '.git/config' dropped: '.git/config' is inside .git/: a card cites the "
        "repository's files, not git's",
        "pseudoclaude: op 0: citation '.PseudoClaude/memory/project_knowledge_seed.md' dropped: "
        "'.PseudoClaude/memory/project_knowledge_seed.md' is inside a memory store "
        "or PseudoClaude's own folder",
    ]
    assert [(p, lines) for p, lines, _ in cites_of(repo)] == [("Makefile", None), ("notes.txt", "2-4")]
    text_of_card = card_path(repo).read_text()
    assert "outside" not in text_of_card and "passwd" not in text_of_card and ".git" not in text_of_card


def test_recorded_ids_are_the_git_blob_for_tracked_files_and_sha256_for_others_whatever_the_op_says(
    repo: Path,
) -> None:
    (repo / "notes.txt").write_bytes(b"untracked \xff bytes\n")
    fake = "0" * 40
    apply(
        repo,
        cited(
            "Build",
            {"path": "Makefile", "blob": fake},
            {"path": "notes.txt", "lines": "1-1", "blob": "sha256:" + "0" * 64},
        ),
    )
    assert cites_of(repo) == [
        ("Makefile", None, git(repo, "hash-object", "Makefile").strip()),
        ("notes.txt", "1-1", "sha256:" + hashlib.sha256(b"untracked \xff bytes\n").hexdigest()),
    ]
    assert fake not in card_path(repo).read_text()


def test_doctor_reports_a_stale_card_as_information_and_fix_leaves_it(repo: Path) -> None:
    apply(repo, cited("Build", "Makefile"))
    (repo / "Makefile").write_text("changed\n")
    res = run_cli(None, repo, "memory", "doctor")
    assert res.code == 0, res.out + res.err
    lines = res.out.splitlines()
    assert (
        f"stale: project/{CARD}: {CHANGED} "
        f"(check it; `pseudoclaude memory confirm project {CARD}` if it still holds)" in lines
    )
    assert lines[-1] == "memory stores are healthy" and not any(x.startswith("problem:") for x in lines)
    before = card_path(repo).read_bytes()
    res = run_cli(None, repo, "memory", "doctor", "--fix")
    assert res.code == 0 and f"stale: project/{CARD}: {CHANGED}" in res.out
    assert card_path(repo).read_bytes() == before


def test_print_mode_says_each_citation_the_memory_job_dropped_and_still_exits_0(
    server: FakeAnthropic, repo: Path
) -> None:
    server.script(MODEL, text("Build with make."))
    server.script(MEMORY_MODEL, text(ops_answer(cited("Build", "Makefile", "../outside", ".git/config"))))
    res = run_cli(server, repo, "-p", "how do I build?")
    assert res.code == 0, res.err
    lines = res.err.splitlines()
    [applied] = [x for x in lines if " applied: " in x]
    job = applied.split()[2]
    assert (
        f"[memory: job {job}: op 0: citation '../outside' dropped: "
        "'../outside' leaves the workspace through '..']" in lines
    )
    assert any(x.startswith(f"[memory: job {job}: op 0: citation '.git/config' dropped: ") for x in lines)
    assert cites_of(repo) == [("Makefile", None, git(repo, "hash-object", "Makefile").strip())]
