"""``pseudoclaude memory consolidate [--level L] [--yes]``, the real CLI against the
fake Messages API: the job id and its proposed ops, held; ``--yes`` applies them; it needs a
configured model like ``flush``; nothing alike is one line, exit 0; a failed job says why, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, create_op, run_cli
from tests.support.fakeapi import FakeAnthropic, http_error, text

pytestmark = pytest.mark.timeout(120)

BODY = "This project uses pnpm for installs; npm breaks the lockfile."
KEEP, GONE = "project_knowledge_use-pnpm.md", ["project_knowledge_pnpm.md", "project_knowledge_pnpm-only.md"]


def store(ws: Path) -> Path:
    return ws / ".PseudoClaude" / "memory"


def cards(ws: Path) -> list[str]:
    return sorted(p.name for p in store(ws).glob("*.md") if p.name != "MEMORY.md")


def seed(ws: Path, dups: bool = True) -> None:
    ops = [
        {**create_op("Topic frobnicator", "The frobnicator settings live in frob.toml."), "slug": "frob"},
        {**create_op("Topic telemetry", "Telemetry is off by default in CI."), "slug": "telemetry"},
    ]
    if dups:
        ops += [
            {**create_op("Use pnpm, not npm", BODY, summary="pnpm, not npm"), "slug": "use-pnpm"},
            {
                **create_op(
                    "Package manager is pnpm",
                    "Use pnpm install, never npm: npm breaks the lockfile.",
                    summary="pnpm, not npm",
                ),
                "slug": "pnpm",
            },
            {
                **create_op(
                    "pnpm only",
                    "The project installs with pnpm; npm would break the lockfile.",
                    summary="pnpm, not npm",
                ),
                "slug": "pnpm-only",
            },
        ]
    res = run_cli(None, ws, "memory", "apply", "-", stdin=json.dumps(ops))
    assert res.code == 0, res.err


def answer() -> str:
    return json.dumps(
        [
            {
                "action": "update",
                "level": "project",
                "filename": KEEP,
                "content": "pnpm only; npm breaks the lockfile.",
            },
            {"action": "delete", "level": "project", "filename": GONE[0]},
            {"action": "delete", "level": "project", "filename": GONE[1]},
        ]
    )


def test_consolidate_prints_the_job_and_its_ops_and_leaves_them_held(server: FakeAnthropic, ws: Path) -> None:
    seed(ws)
    server.script(MEMORY_MODEL, text(answer()))
    res = run_cli(server, ws, "memory", "consolidate", "--level", "project")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0].startswith("job ") and lines[0].endswith(
        ": consolidate the project store: 1 cluster, 3 cards"
    )
    job_id = lines[0].split()[1].rstrip(":")
    assert lines[1:4] == [
        f"0 update project/{KEEP} \u2014 Use pnpm, not npm",
        f"1 delete project/{GONE[0]}",
        f"2 delete project/{GONE[1]}",
    ]
    assert f"memory approve {job_id}" in res.out and "memory reject" in res.out
    assert len(cards(ws)) == 5, "held: nothing written"
    pending = run_cli(None, ws, "memory", "pending")
    assert job_id in pending.out and "held" in pending.out and "consolidate the project store" in pending.out
    res = run_cli(None, ws, "memory", "approve", job_id)
    assert res.code == 0, res.err
    assert cards(ws) == ["project_knowledge_frob.md", "project_knowledge_telemetry.md", KEEP]


def test_yes_applies_the_ops_and_says_what_was_applied(server: FakeAnthropic, ws: Path) -> None:
    seed(ws)
    server.script(MEMORY_MODEL, text(answer()))
    res = run_cli(server, ws, "memory", "consolidate", "--yes")
    assert res.code == 0, res.err
    for line in (f"update project/{KEEP}", f"delete project/{GONE[0]}", f"delete project/{GONE[1]}"):
        assert line in res.out.splitlines(), res.out
    assert "the user store has no cards" in res.out
    assert cards(ws) == ["project_knowledge_frob.md", "project_knowledge_telemetry.md", KEEP]
    assert (store(ws) / KEEP).read_text().endswith("pnpm only; npm breaks the lockfile.\n")
    assert "no pending memory jobs" in run_cli(None, ws, "memory", "pending").out
    undo = run_cli(None, ws, "memory", "undo")
    assert undo.code == 0 and len(cards(ws)) == 5


def test_without_credentials_it_says_so_like_flush_and_makes_no_job(ws: Path) -> None:
    seed(ws)
    res = run_cli(None, ws, "memory", "consolidate")
    assert res.code == 1
    assert "no credentials" in res.err and "ANTHROPIC_API_KEY" in res.err
    assert "no pending memory jobs" in run_cli(None, ws, "memory", "pending").out


def test_nothing_to_consolidate_is_one_line_and_exit_0(server: FakeAnthropic, ws: Path) -> None:
    seed(ws, dups=False)
    res = run_cli(server, ws, "memory", "consolidate", "--level", "project")
    assert res.code == 0, res.err
    assert res.out == "no likely duplicates among 2 project cards\n"
    assert server.requests_for(MEMORY_MODEL) == []


def test_a_failed_job_says_why_on_stderr_and_exits_1(server: FakeAnthropic, ws: Path) -> None:
    seed(ws)
    server.script(MEMORY_MODEL, *[http_error(500) for _ in range(3)])
    res = run_cli(server, ws, "memory", "consolidate", "--level", "project")
    assert res.code == 1
    assert "failed" in res.err and "500" in res.err
    assert len(cards(ws)) == 5
