"""A memory model that sends nothing for the idle timeout fails that attempt, through
the real SDK against the fake Messages API: the job retries, then fails with the idle reason on
the pending screen; a slow stream that keeps sending is never cut."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import anthropic  # noqa: F401  # imported here, not in the first attempt: its time is the requests'
import pytest

from app.agent.config.settings import load_settings
from app.agent.memory_bridge.completion import AnthropicCompletion
from app.agent.runtime import Runtime
from memory.jobs.manager import Manager
from memory.jobs.views import JobView
from memory.model import Turn, TurnMessage
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL
from tests.support.fakeapi import FakeAnthropic, Gate, Reply, drop_connection, text
from tests.support.memtools import make_env
from tests.support.memviews import pending_state
from widgets.pending.job_detail import job_detail
from widgets.pending.job_text import state_text

pytestmark = pytest.mark.timeout(60)

IDLE = 0.5
# The whole-request bound stays far above the idle timeout: a failure naming the idle timeout
# (well before this) is the idle timeout's own doing.
OUTER = 30.0
IDLE_REASON = f"no data from the memory model for {IDLE:g} s"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def sdk_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)


def _turn() -> Turn:
    return Turn(
        messages=[TurnMessage(role="user", text="remember this"), TurnMessage(role="assistant", text="ok")]
    )


async def _run_job(
    stores: MemoryStores, completion: AnthropicCompletion, retrying: list[list[JobView]] | None = None
) -> tuple[str, str, list[JobView], float]:
    """One turn's job to its end: (status, reason, final views, seconds). ``retrying`` collects the
    job views seen during each backoff (what the pending screen shows while the job waits)."""
    m: Manager

    async def backoff(_: float) -> None:
        if retrying is not None:
            retrying.append(await m.jobs())

    m = Manager(stores, completion, sleep=backoff, poll_interval=0.05, session="s", request_timeout=OUTER)
    await m.start()
    try:
        started = time.monotonic()
        job = await m.submit(_turn())
        assert job is not None
        outcome = await m.wait_for(job.id, 45)
        elapsed = time.monotonic() - started
        views = await m.jobs()
    finally:
        await m.close(5)
        await completion.aclose()
    return outcome.status, outcome.reason, views, elapsed


def _silent(gate: Gate, *, at: int | None = None) -> Reply:
    answer = text("[]")
    return answer.held(before=gate) if at is None else answer.held(after=gate, at=at)


@pytest.mark.parametrize("at", [None, 3], ids=["no-headers", "headers-then-silence"])
async def test_a_silent_memory_model_times_out_each_attempt_and_the_job_fails_with_the_reason(
    server: FakeAnthropic, tmp_path: Path, at: int | None
) -> None:
    # Before: no idle bound at all, only the whole request's (300 s here 30 s): each attempt hung
    # until it, and the reason said "no answer within 30 s".
    stores = make_env(tmp_path)
    gate = server.gate("silent", timeout=OUTER)  # never released: the model never speaks again
    server.script(MEMORY_MODEL, *[_silent(gate, at=at) for _ in range(3)])
    retrying: list[list[JobView]] = []
    status, reason, views, elapsed = await _run_job(
        stores, AnthropicCompletion(MEMORY_MODEL, idle_timeout=IDLE), retrying
    )

    assert status == "failed", reason
    assert reason.endswith(f"3 attempts used in all; last: {IDLE_REASON}"), reason
    assert len(server.requests_for(MEMORY_MODEL)) == 3 and gate.hits == 3
    assert elapsed < OUTER, elapsed  # three idle timeouts, not even one whole-request bound
    # While it waits to try again: "retrying 2/3", then "retrying 3/3", the reason in the detail.
    assert [[v.attempt for v in vs] for vs in retrying] == [[2], [3]]
    (waiting,) = pending_state(stores, retrying[0], [], [], "auto").jobs
    assert state_text(waiting, NOW).startswith("retrying 2/3")
    assert IDLE_REASON in job_detail(waiting, NOW, expanded=False).plain
    # Then the pending screen's row says it failed and why, in one line.
    (view,) = views
    (failed,) = pending_state(stores, views, [], [], "auto").jobs
    assert view.state == "failed"
    row = state_text(failed, NOW)
    assert row.startswith("failed: ") and row.endswith(IDLE_REASON) and "\n" not in row, row


async def test_a_silent_attempt_is_retried_and_the_next_answer_is_applied(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    stores = make_env(tmp_path)
    gate = server.gate("silent", timeout=OUTER)
    card = {
        "action": "create",
        "level": "project",
        "type": "project_knowledge",
        "title": "Build",
        "content": "make build builds it",
    }
    server.script(MEMORY_MODEL, _silent(gate, at=3), text(json.dumps([card])))
    retrying: list[list[JobView]] = []
    status, reason, _, elapsed = await _run_job(
        stores, AnthropicCompletion(MEMORY_MODEL, idle_timeout=IDLE), retrying
    )
    assert status == "done", reason
    # The silent attempt ended on the idle timeout, not on the whole request's bound.
    assert [[(v.attempt, v.reason) for v in vs] for vs in retrying] == [
        [(2, f"extract request failed: {IDLE_REASON}")]
    ]
    assert elapsed < OUTER, elapsed
    assert len(server.requests_for(MEMORY_MODEL)) == 2
    assert any("make build builds it" in p.read_text() for p in stores.project.dir.glob("*.md"))


# A slow model: an event every 0.1 s (15 times more often than the idle timeout), for more than
# twice the idle timeout in all. A bound on the whole
# request (instead of on the silence between events) would cut these.
SLOW_IDLE = 1.5
PACE = 0.1


async def test_a_slow_stream_that_keeps_sending_deltas_is_not_cut(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    stores = make_env(tmp_path)
    server.script(MEMORY_MODEL, text("[" + " " * 28 + "]", chunk_size=1).paced(PACE))  # 30 deltas: ≥ 3.4 s
    status, reason, _, elapsed = await _run_job(
        stores, AnthropicCompletion(MEMORY_MODEL, idle_timeout=SLOW_IDLE)
    )
    assert status == "done", reason
    assert elapsed > 2 * SLOW_IDLE, elapsed
    assert len(server.requests_for(MEMORY_MODEL)) == 1


async def test_pings_alone_keep_a_thinking_model_alive(server: FakeAnthropic, tmp_path: Path) -> None:
    # Nothing but pings for ≥ 3 s before the answer's first word: each one resets the idle clock.
    stores = make_env(tmp_path)
    server.script(MEMORY_MODEL, text("[]").paced(PACE, extra_pings=30))
    status, reason, _, elapsed = await _run_job(
        stores, AnthropicCompletion(MEMORY_MODEL, idle_timeout=SLOW_IDLE)
    )
    assert status == "done", reason
    assert elapsed > 2 * SLOW_IDLE, elapsed
    assert len(server.requests_for(MEMORY_MODEL)) == 1


async def test_the_whole_request_bound_still_applies_to_a_stream_that_never_goes_silent(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    # The two bounds compose: pings every 0.1 s never trip the idle timeout; the pipeline's outer
    # bound (here 1 s) ends the attempt all the same, through the same retry budget.
    stores = make_env(tmp_path)
    server.script(MEMORY_MODEL, *[text("[]").paced(PACE, extra_pings=200) for _ in range(3)])
    completion = AnthropicCompletion(MEMORY_MODEL, idle_timeout=SLOW_IDLE)
    m = Manager(stores, completion, sleep=_no_sleep, poll_interval=0.05, session="s", request_timeout=1.0)
    await m.start()
    try:
        job = await m.submit(_turn())
        assert job is not None
        outcome = await m.wait_for(job.id, 45)
    finally:
        await m.close(5)
        await completion.aclose()
    assert outcome.status == "failed" and outcome.reason.endswith("last: no answer within 1 s"), outcome
    assert len(server.requests_for(MEMORY_MODEL)) == 3


async def _no_sleep(_: float) -> None:
    return None


async def test_the_setting_reaches_the_runtimes_memory_model_end_to_end(
    server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment variable, through the settings and the Runtime, to the SDK's requests.
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_IDLE_TIMEOUT", str(IDLE))
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0.01")  # the worker's backoff in milliseconds
    gate = server.gate("silent", timeout=OUTER)
    server.script(MEMORY_MODEL, *[_silent(gate, at=3) for _ in range(3)])
    rt = Runtime(load_settings(), ws)
    try:
        await rt.open_session()
        await rt.start_worker()
        job = await rt.manager.submit(_turn())
        assert job is not None
        outcome = await rt.manager.wait_for(job.id, 45)
    finally:
        await rt.close(5)
    assert outcome.status == "failed" and outcome.reason.endswith(f"last: {IDLE_REASON}"), outcome
    assert gate.hits == 3


async def test_a_stream_dropped_mid_way_is_retried_and_the_next_answer_is_applied(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    # Before: the bare transport error was read as the request's own fault, and the job failed
    # at its first attempt.
    stores = make_env(tmp_path)
    card = {
        "action": "create",
        "level": "project",
        "type": "project_knowledge",
        "title": "Test",
        "content": "make test tests it",
    }
    server.script(MEMORY_MODEL, drop_connection(), text(json.dumps([card])))
    status, reason, _, _ = await _run_job(stores, AnthropicCompletion(MEMORY_MODEL, idle_timeout=IDLE))
    assert status == "done", reason
    assert len(server.requests_for(MEMORY_MODEL)) == 2
    assert any("make test tests it" in p.read_text() for p in stores.project.dir.glob("*.md"))
