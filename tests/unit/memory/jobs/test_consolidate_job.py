"""Consolidation as a job: three duplicate cards and a scripted memory model
through the real SDK against the fake Messages API → one held job; approve, undo, partial
review; a failing or hanging model fails the job visibly and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.agent.memory_bridge.completion import AnthropicCompletion
from memory.constants import Level
from memory.events import JobFailed, JobHeld, MemoryEvent
from memory.jobs.manager import Manager
from memory.jobs.spool import Job
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL
from tests.support.fakeapi import FakeAnthropic, http_error, text
from tests.support.memtools import make_env, write_note

pytestmark = pytest.mark.timeout(60)

DUPS = {
    "project_knowledge_use-pnpm.md": (
        "Use pnpm, not npm",
        "This project uses pnpm for installs; npm breaks the lockfile.",
    ),
    "project_knowledge_pnpm.md": (
        "Package manager is pnpm",
        "Use pnpm install, never npm: npm breaks the pnpm lockfile.",
    ),
    "project_knowledge_pnpm-only.md": (
        "pnpm only",
        "The project installs with pnpm; npm would break the lockfile.",
    ),
}
UNRELATED = {
    f"project_knowledge_other{k}.md": (
        f"Topic {word}",
        f"The {word} subsystem keeps its {word} settings in {word}.toml.",
    )
    for k, word in enumerate(["frobnicator", "telemetry", "gazetteer", "kubelet", "quaternion", "harmonica"])
}
KEEP, GONE = "project_knowledge_use-pnpm.md", ["project_knowledge_pnpm.md", "project_knowledge_pnpm-only.md"]
MERGED = "The project installs with pnpm only (`pnpm install`); npm breaks the pnpm lockfile."


@pytest.fixture(autouse=True)
def sdk_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def stores(tmp_path: Path) -> MemoryStores:
    env = make_env(tmp_path)
    for name, (title, body) in {**DUPS, **UNRELATED}.items():
        write_note(env, Level.PROJECT, name, title, body, summary=title)
    return env


async def _no_sleep(_: float) -> None:
    return None


def manager(stores: MemoryStores, events: list[MemoryEvent], **kw: Any) -> Manager:
    kw.setdefault("sleep", _no_sleep)
    m = Manager(
        stores,
        AnthropicCompletion(MEMORY_MODEL, home=stores.paths.home),
        poll_interval=0.05,
        session="s",
        **kw,
    )
    m.subscribe(events.append)
    return m


def cards(stores: MemoryStores) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(stores.project.dir.glob("*.md")) if p.name != "MEMORY.md"}


def answer() -> str:
    return json.dumps(
        [
            {"action": "update", "level": "project", "filename": KEEP, "content": MERGED},
            {"action": "delete", "level": "project", "filename": GONE[0]},
            {"action": "delete", "level": "project", "filename": GONE[1]},
            # Out of scope, each refused with a reason: another store, a card no cluster holds.
            {"action": "delete", "level": "user", "filename": "user_preference_x.md"},
            {"action": "delete", "level": "project", "filename": "project_knowledge_other0.md"},
        ]
    )


async def held_job(
    stores: MemoryStores, server: FakeAnthropic, events: list[MemoryEvent]
) -> tuple[Manager, Job]:
    server.script(MEMORY_MODEL, text(answer()))
    m = manager(stores, events)
    await m.start()
    outcomes = await m.consolidate(Level.PROJECT)
    assert [(o.level, o.clusters, o.cards) for o in outcomes] == [(Level.PROJECT, 1, 3)], outcomes
    job_id = outcomes[0].job_id
    assert job_id is not None
    done = await m.wait_for(job_id, 30)
    assert done.status == "held", done
    return m, m.spool.peek(job_id)


async def test_three_duplicates_make_one_held_job_whose_request_holds_only_the_clusters_bodies(
    stores: MemoryStores, server: FakeAnthropic
) -> None:
    events: list[MemoryEvent] = []
    before = cards(stores)
    m, job = await held_job(stores, server, events)
    await m.close(0)
    assert job.purpose == "consolidate" and job.level is Level.PROJECT and job.mode == "review"
    assert sorted(job.clusters[0]) == sorted(DUPS)
    assert job.excerpt() == "consolidate the project store: 1 cluster, 3 cards"
    assert [(h.index, h.op.action.value) for h in job.held_ops] == [
        (0, "update"),
        (1, "delete"),
        (2, "delete"),
    ]
    reasons = [r.reason for r in job.rejected]
    assert any("changes only that store's cards" in r for r in reasons), reasons
    assert any("not one of the consolidated cards" in r for r in reasons), reasons
    held = [e for e in events if isinstance(e, JobHeld)]
    assert held and held[-1].purpose == "consolidate"
    assert cards(stores) == before, "held: nothing written yet"
    (req,) = server.requests_for(MEMORY_MODEL)
    assert req.stream
    prompt = req.body["messages"][0]["content"]
    for _, body in DUPS.values():
        assert body in prompt
    for name, (_, body) in UNRELATED.items():
        assert name in prompt, "the whole index is there for context"
        assert body not in prompt, "an unrelated card's body is never sent"


async def test_approve_leaves_one_card_the_others_in_trash_and_undo_restores_all_three(
    stores: MemoryStores, server: FakeAnthropic
) -> None:
    events: list[MemoryEvent] = []
    before = cards(stores)
    m, job = await held_job(stores, server, events)
    try:
        result = await m.approve(job.id)
    finally:
        await m.close(0)
    assert sorted(a.filename for a in result.applied) == sorted([KEEP, *GONE])
    after = cards(stores)
    assert sorted(after) == sorted([KEEP, *UNRELATED])
    assert after[KEEP].decode().endswith(MERGED + "\n"), (
        "the update replaces the body as given: no merge request"
    )
    assert len(server.requests_for(MEMORY_MODEL)) == 1
    trash = sorted(p.name for p in (stores.project.dir / ".trash").iterdir())
    assert len(trash) == 2 and all(any(t.endswith(g) for t in trash) for g in GONE), trash
    assert "consolidation of the project store" in stores.history()[-1].label
    stores.undo()
    assert cards(stores) == before


async def test_review_rejects_one_op_and_approves_the_rest(
    stores: MemoryStores, server: FakeAnthropic
) -> None:
    events: list[MemoryEvent] = []
    before = cards(stores)
    m, job = await held_job(stores, server, events)
    try:
        left = await m.reject(job.id, [2])
        assert left is not None and [h.index for h in left.held_ops] == [0, 1]
        await m.approve(job.id)
    finally:
        await m.close(0)
    after = cards(stores)
    assert sorted(after) == sorted([KEEP, GONE[1], *UNRELATED])
    assert after[GONE[1]] == before[GONE[1]], "the rejected delete wrote nothing"
    assert after[KEEP].decode().endswith(MERGED + "\n")


async def test_a_failing_model_fails_the_job_visibly_and_changes_nothing(
    stores: MemoryStores, server: FakeAnthropic
) -> None:
    server.script(MEMORY_MODEL, *[http_error(500) for _ in range(3)])
    events: list[MemoryEvent] = []
    before = cards(stores)
    m = manager(stores, events, max_attempts=3)
    await m.start()
    try:
        (o,) = await m.consolidate("project")
        assert o.job_id is not None
        done = await m.wait_for(o.job_id, 30)
    finally:
        await m.close(0)
    assert done.status == "failed" and "consolidate request failed" in done.reason, done
    assert "500" in done.reason
    assert any(isinstance(e, JobFailed) and e.job_id == o.job_id for e in events)
    assert len(server.requests_for(MEMORY_MODEL)) == 3
    assert cards(stores) == before


async def test_a_hanging_model_fails_the_job_within_the_request_timeout_and_changes_nothing(
    stores: MemoryStores, server: FakeAnthropic
) -> None:
    gate = server.gate("hang")
    server.script(MEMORY_MODEL, text(answer(), hold_before=gate))
    events: list[MemoryEvent] = []
    before = cards(stores)
    m = manager(stores, events, max_attempts=1, request_timeout=0.5)
    await m.start()
    try:
        (o,) = await m.consolidate("project")
        assert o.job_id is not None
        done = await m.wait_for(o.job_id, 30)
    finally:
        gate.release()
        await m.close(0)
    assert done.status == "failed" and "no answer within 0.5 s" in done.reason, done
    assert any(isinstance(e, JobFailed) for e in events)
    assert cards(stores) == before
