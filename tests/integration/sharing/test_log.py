"""``memory log`` with real git: the app's batches (job, turn excerpt, reasons) and
the commits that touched the store (author, date, subject), merged newest first, filtered by level
and card, with a hostile commit subject shown as one plain line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, create_op, ops_answer, run_cli
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.gittools import git, new_repo

pytestmark = pytest.mark.timeout(120)

BUILD = "project_knowledge_build-with-make.md"
SKY = "project_knowledge_sky-colour.md"
HEAD = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  ")


def commit(repo: Path, message: str, date: str, author: str = "Ann") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, f"--date={date}", f"--author={author} <a@example.invalid>")


def blocks(out: str) -> list[str]:
    """The log's entries: each header line with its indented details."""
    found: list[str] = []
    for line in out.splitlines():
        if HEAD.match(line):
            found.append(line)
        else:
            assert line.startswith("    ") and found, line
            found[-1] += "\n" + line
    return found


def test_memory_log_lists_batches_and_commits_newest_first_filtered_and_sanitized(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "repo", "Ann")
    # A model batch: one op applied, one rejected with its reason.
    server.script(MODEL, text("The sky is blue."))
    server.script(
        MEMORY_MODEL,
        text(
            ops_answer(
                create_op("Sky colour", "Blue.", summary="The sky is blue."),
                {"action": "create", "level": "project"},
            )
        ),
    )
    res = run_cli(server, repo, "-p", "what colour is the sky")
    assert res.code == 0, res.err
    commit(
        repo, "memory: the sky card\x1b]0;pwned\x07 \x1b[31mred\x1b[0m", "2020-01-02T03:04:05Z", "Bob\x1b[2J"
    )
    hand = json.dumps([create_op("Build with make", "Run make build.")])
    res = run_cli(None, repo, "memory", "apply", "-", stdin=hand)
    assert res.code == 0, res.err
    commit(repo, "memory: the build card", "2099-01-01T00:00:00Z")
    (repo / "src.txt").write_text("not the store\n")
    commit(repo, "outside the store", "2099-06-01T00:00:00Z")

    res = run_cli(None, repo, "memory", "log")
    assert res.code == 0, res.err
    assert "\x1b" not in res.out and "\x07" not in res.out
    got = blocks(res.out)
    assert len(got) == 4, res.out
    assert got[0].startswith("2099-01-01T00:00:00Z  project store commit ")
    assert got[0].endswith(" by Ann: memory: the build card")
    assert got[1].split("  ", 1)[1].startswith("batch ") and "(manual): memory apply" in got[1]
    assert f"create project/{BUILD}  Build with make" in got[1]
    model = got[2]
    job = re.search(r": memory job (\d{20}-[0-9a-f]{8}): what colour is the sky\n", model)
    assert job is not None, model
    assert f"    job {job.group(1)}\n" in model and f"    create project/{SKY}  Sky colour" in model
    assert "    rejected: op 1: " in model
    assert (
        got[3]
        == f"2020-01-02T03:04:05Z  project store commit {got[3].split()[4]} by Bob: memory: the sky card red"
    )

    res = run_cli(None, repo, "memory", "log", "project", SKY)
    assert res.code == 0, res.err
    got = blocks(res.out)
    assert len(got) == 2 and "memory job" in got[0] and "the sky card" in got[1]
    res = run_cli(None, repo, "memory", "log", "user")
    assert res.code == 0 and res.out == "no history of the user store in this workspace\n"
    res = run_cli(None, repo, "memory", "log", "project", "../MEMORY.md")
    assert res.code == 1 and res.out == "" and len(res.err.splitlines()) == 1


@pytest.mark.plain_ws
def test_memory_log_outside_git_lists_the_batches_only(plain_ws: Path) -> None:
    res = run_cli(None, plain_ws, "memory", "log")
    assert res.code == 0 and res.out == "no history of the memory stores in this workspace\n", res
    res = run_cli(
        None, plain_ws, "memory", "apply", "-", stdin=json.dumps([create_op("Build with make", "x")])
    )
    assert res.code == 0, res.err
    res = run_cli(None, plain_ws, "memory", "log", "--limit", "1")
    assert res.code == 0 and res.err == ""
    got = blocks(res.out)
    assert len(got) == 1 and "memory apply" in got[0]
