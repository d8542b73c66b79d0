"""``WorkerProcess``, the app's supervisor of its memory worker child, with stand-in children:
a death is said once and replaced, a busy child is not a death, restarts pause when a child keeps
dying, the child's usage, wrote and outcome lines are read and anything else on its stdout is not."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from app.agent.memory_bridge.worker_process import MAX_RESTARTS, WorkerProcess, describe_exit
from app.agent.memory_bridge.worker_wire import (
    MAX_LINE_BYTES,
    ModeMsg,
    OutcomeMsg,
    UsageMsg,
    WakeMsg,
    WroteMsg,
    decode,
    encode,
    fits,
    outcome_msg,
)
from app.agent.model.provider import Usage
from memory.constants import WORKER_EXIT_BUSY, Action, Level, MemoryMode
from memory.events import JobApplied, JobFailed, JobHeld, JobQueued, JobRetrying, MemoryEvent
from memory.model import AppliedOp, Rejection
from memory.store.journal import OWN_WRITES, OwnWrites

pytestmark = pytest.mark.timeout(60)


class _Worker:
    def __init__(self) -> None:
        self.busy = False

    def someone_works(self) -> bool:
        return self.busy


class _Manager:
    def __init__(self) -> None:
        self.announced_writes = OwnWrites(OWN_WRITES)
        self.mode = MemoryMode.AUTO
        self.completion: object | None = object()
        self.worker = _Worker()
        self.announced: list[MemoryEvent] = []

    def announce(self, event: MemoryEvent) -> None:
        self.announced.append(event)


def _child(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def _until(pred: Any, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def _exited(sup: WorkerProcess) -> None:
    proc = sup.proc
    assert proc is not None
    await asyncio.to_thread(proc.wait, 20)


def _supervisor(tmp_path: Path, code: str, notes: list[str], clock: Any = None, **kw: Any) -> WorkerProcess:
    extra = {"clock": clock} if clock is not None else {}
    return WorkerProcess(
        _Manager(),
        lambda mode: _child(code),
        log_path=tmp_path / "logs" / "w.log",  # type: ignore[arg-type]
        on_note=notes.append,
        **extra,
        **kw,
    )


async def test_a_dead_child_is_said_once_and_replaced(tmp_path: Path) -> None:
    notes: list[str] = []
    sup = _supervisor(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", notes)
    await sup.check()
    assert sup.started == 1
    await _exited(sup)
    await sup.check()  # the death is seen, another child started at once
    assert sup.started == 2
    assert notes == ["memory worker stopped (killed by SIGKILL); started another (no memory job is lost)"]
    await _exited(sup)
    await sup.stop()


async def test_a_child_that_found_the_lock_taken_or_ended_well_is_no_death(tmp_path: Path) -> None:
    notes: list[str] = []
    for code in (f"import sys; sys.exit({WORKER_EXIT_BUSY})", "pass"):
        sup = _supervisor(tmp_path, code, notes)
        await sup.check()
        await _exited(sup)
        await sup.check()
        assert notes == [] and sup.deaths == []
        await sup.stop()


async def test_nobody_is_started_while_another_process_works_or_memory_is_off(tmp_path: Path) -> None:
    notes: list[str] = []
    sup = _supervisor(tmp_path, "pass", notes)
    sup.manager.worker.busy = True  # type: ignore[attr-defined]
    await sup.check()
    assert sup.started == 0
    sup.manager.worker.busy = False  # type: ignore[attr-defined]
    sup.manager.mode = MemoryMode.OFF
    await sup.check()
    assert sup.started == 0
    sup.manager.mode = MemoryMode.AUTO
    sup.manager.completion = None
    await sup.check()
    assert sup.started == 0


async def test_a_child_that_keeps_dying_is_left_stopped_for_a_minute_said_in_one_line(tmp_path: Path) -> None:
    now = [1000.0]
    notes: list[str] = []
    sup = _supervisor(tmp_path, "import sys; sys.exit(3)", notes, clock=lambda: now[0])
    await sup.check()
    for _ in range(MAX_RESTARTS):
        await _exited(sup)
        await sup.check()
    assert sup.started == MAX_RESTARTS  # the fifth death did not start a sixth child
    assert notes[0] == "memory worker stopped (exit status 3); started another (no memory job is lost)"
    assert (
        len(notes) == MAX_RESTARTS
        and "5 times in a minute" in notes[-1]
        and "memory jobs stay spooled" in notes[-1]
    )
    now[0] += 61
    await sup.check()
    assert sup.started == MAX_RESTARTS + 1
    await _exited(sup)
    await sup.stop()


async def test_a_child_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    notes: list[str] = []
    sup = WorkerProcess(
        _Manager(),
        lambda mode: [str(tmp_path / "no-such-program")],  # type: ignore[arg-type]
        log_path=tmp_path / "logs" / "w.log",
        on_note=notes.append,
    )
    await sup.check()
    assert sup.proc is None and len(notes) == 1
    assert notes[0].startswith("memory worker stopped (could not start: ") and "\n" not in notes[0]


async def test_wake_and_mode_reach_the_childs_stdin_and_stop_closes_it(tmp_path: Path) -> None:
    out = tmp_path / "got"
    code = f"import sys\nopen({str(out)!r}, 'w').write(sys.stdin.read())"
    sup = _supervisor(tmp_path, code, [])
    await sup.check()
    sup.wake()
    sup.set_mode(MemoryMode.REVIEW)
    await sup.stop(timeout=20)  # stdin's end: the child finishes by itself
    assert sup.proc is not None and sup.proc.poll() == 0
    assert out.read_text() == f"{encode(WakeMsg())}\n{encode(ModeMsg(mode=MemoryMode.REVIEW))}\n"


async def test_the_childs_usage_lines_are_counted_and_nothing_else(tmp_path: Path) -> None:
    seen: list[tuple[str, Usage]] = []
    lines = [
        "hello",
        encode(UsageMsg(model="m", input_tokens=5, output_tokens=2)),
        '{"kind": "usage", "model": "m", "input_tokens": -1}',
        '{"kind": "usage", not json',
    ]
    code = _printing(tmp_path, lines)
    sup = WorkerProcess(
        _Manager(),
        lambda mode: _child(code),
        log_path=tmp_path / "logs" / "w.log",  # type: ignore[arg-type]
        on_usage=lambda m, u: seen.append((m, u)),
    )
    await sup.check()
    await _exited(sup)
    assert sup.proc is not None and sup.proc.stdout is not None
    await _until(lambda: sup.proc.stdout.closed)  # type: ignore[union-attr]  # the reader read to the end
    assert seen == [("m", Usage(input_tokens=5, output_tokens=2))]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"kind": "usage"}',
        b'{"kind": "usage", "model": 3}',
        b'{"kind": "usage", "model": "m", "output_tokens": true}',
        b'{"kind": "usage", "model": "m", "input_tokens": "5"}',
        b'{"kind": "usage", "model": "m", "more": 1}',
        b'{"kind": "usage", "model": "' + b"x" * 5000 + b'"}',
        b'[{"kind": "usage", "model": "m"}]',
        b'"usage"',
        b"usage",
    ],
)
def test_hostile_usage_lines_are_ignored(raw: bytes) -> None:
    assert decode(raw) is None


def test_exits_are_described() -> None:
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(2) == "exit status 2"


async def test_the_childs_stderr_goes_to_its_log_never_to_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sup = _supervisor(tmp_path, "import sys; sys.stderr.write('boom\\n'); sys.exit(0)", [])
    await sup.check()
    await _exited(sup)
    assert (tmp_path / "logs" / "w.log").read_text() == "boom\n"
    assert "boom" not in capfd.readouterr().err


async def test_the_childs_store_writes_become_the_apps_own(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    code = f"print({encode(WroteMsg.of(str(card), 'abc'))!r})"
    sup = _supervisor(tmp_path, code, [])
    await sup.check()
    await _exited(sup)
    assert sup.proc is not None and sup.proc.stdout is not None
    await _until(lambda: sup.proc.stdout.closed)  # type: ignore[union-attr]
    assert sup.writes.is_own(card, "abc") and not sup.writes.is_own(card, "other")
    assert not OWN_WRITES.is_own(card, "abc")  # this app's, not every app's of the process
    OWN_WRITES.record(tmp_path / "mine.md", "def")
    assert sup.writes.is_own(tmp_path / "mine.md", "def")  # and the process's own too


APPLIED = JobApplied(
    job_id="00000000000000000000-aaaaaaaa",
    txid="tx1",
    created="2025-01-01T00:00:00Z",
    applied=(
        AppliedOp(index=0, action=Action.CREATE, level=Level.PROJECT, filename="p.md", title="P"),
        AppliedOp(index=1, action=Action.DELETE, level=Level.USER, filename="u.md"),
    ),
    rejected=(Rejection(index=2, reason="op 2: no title", op={"action": "create"}),),
)
OUTCOMES: list[MemoryEvent] = [
    APPLIED,
    JobFailed(job_id="j2", reason="extraction request failed: 401", retryable=False),
    JobHeld(job_id="j3"),
    JobRetrying(job_id="j4", attempt=1, max_attempts=3, next_try_at="2025-01-01T00:00:01Z", reason="timeout"),
]


def _printing(tmp_path: Path, lines: list[str]) -> str:
    """A stand-in child printing ``lines`` on its stdout."""
    out = tmp_path / "stdout"
    out.write_text("".join(line + "\n" for line in lines))
    return f"import sys; sys.stdout.buffer.write(open({str(out)!r}, 'rb').read())"


async def _run_to_end(sup: WorkerProcess) -> None:
    await sup.check()
    await _exited(sup)
    assert sup.proc is not None and sup.proc.stdout is not None
    await _until(lambda: sup.proc.stdout.closed)  # type: ignore[union-attr]  # the reader read to the end


async def test_a_batch_of_the_childs_writes_is_the_watchers_only(tmp_path: Path) -> None:
    # The child's writes silence the app's watcher; the batch reaches the app as its outcome line.
    lines = [encode(WroteMsg.of(str(tmp_path / n), "abc")) for n in ("a.md", "b.md", "MEMORY.md")]
    sup = _supervisor(tmp_path, _printing(tmp_path, lines), [])
    await _run_to_end(sup)
    assert sup.writes.is_own(tmp_path / "b.md", "abc")
    assert sup.manager.announced == []  # type: ignore[attr-defined]


async def test_each_outcome_line_of_the_child_is_announced_once_as_the_same_event(tmp_path: Path) -> None:
    lines = [encode(msg) for e in OUTCOMES if (msg := outcome_msg(e)) is not None]
    assert len(lines) == len(OUTCOMES)
    sup = _supervisor(tmp_path, _printing(tmp_path, lines), [])
    await _run_to_end(sup)
    assert sup.manager.announced == OUTCOMES  # type: ignore[attr-defined]


async def test_malformed_and_oversized_outcome_lines_are_ignored_and_the_next_line_still_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = encode(OutcomeMsg(event=APPLIED))
    lines = [
        '{"kind": "outcome", not json',
        '{"kind": "outcome", "event": "' + "x" * (MAX_LINE_BYTES + 10) + '"}',
        '{"kind": "outcome", "event": {"kind": "queued", "job_id": "x"}}',
        good[:-1] + ', "extra": 1}',
        good,
    ]
    sup = _supervisor(tmp_path, _printing(tmp_path, lines), [])
    await _run_to_end(sup)
    assert sup.manager.announced == [APPLIED]  # type: ignore[attr-defined]
    said = [r.getMessage() for r in caplog.records if "memory worker wire" in r.getMessage()]
    assert len(said) == 4 and any("ignored" in m and str(MAX_LINE_BYTES) in m for m in said)
    assert all(len(m) < 400 for m in said)  # the log says it in a line, never the line itself


@pytest.mark.parametrize(
    "raw",
    [
        b'{"kind": "outcome"}',
        b"{}",
        b"null",
        b"[]",
        b'{"kind": "outcome", "event": null}',
        b'{"kind": "outcome", "event": {"kind": "queued", "job_id": "x"}}',  # not an outcome
        b'{"kind": "outcome", "event": {"kind": "failed", "job_id": 7, "reason": "r"}}',
        b'{"kind": "outcome", "event": {"kind": "failed", "job_id": "x"}}',
        b'{"kind": "outcome", "event": {"kind": "retrying", "job_id": "x", "attempt": "1", '
        b'"max_attempts": 3, "next_try_at": "", "reason": ""}}',
        b'{"kind": "outcome", "event": {"kind": "applied", "job_id": "x", "applied": [{"index": 0, '
        b'"action": "explode", "level": "project", "filename": "a"}]}}',
        b'{"kind": "outcome", "event": {"kind": "failed", "job_id": "x", "reason": "r"}, "more": 1}',
        b'{"kind": "explode", "event": {"kind": "failed", "job_id": "x", "reason": "r"}}',
        b"\xff\xfe",
        b'{"kind": "outcome", "event": ' + b"[" * 5000,
        b"[" * 5000,
        b'{"kind": "outcome", "event": "' + b"x" * MAX_LINE_BYTES + b'"}',
    ],
)
def test_hostile_outcome_lines_are_ignored(raw: bytes) -> None:
    assert decode(raw) is None


def test_only_outcomes_have_a_line_and_never_one_the_app_would_refuse() -> None:
    assert outcome_msg(JobQueued(job_id="x")) is None
    huge = JobFailed(job_id="x", reason="r" * MAX_LINE_BYTES)
    assert not fits(encode(OutcomeMsg(event=huge)))
    line = encode(OutcomeMsg(event=APPLIED))
    assert fits(line) and "\n" not in line and decode(line.encode() + b"\n") == OutcomeMsg(event=APPLIED)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"kind": "wrote"}',
        b'{"kind": "wrote", "path": 1, "sha": "x"}',
        b'{"kind": "wrote", "path": "a\\u0000b", "sha": "x"}',
        b'{"kind": "wrote", "path": "", "sha": "x"}',
        b'{"kind": "wrote", "path": "YQBi", "sha": "x"}',  # a NUL in the path's bytes
        b'{"kind": "wrote", "path": "a", "sha": 5}',
        b'{"kind": "wrote", "path": "a"}',
        b"wrote nope",
    ],
)
def test_hostile_write_lines_are_ignored(raw: bytes) -> None:
    assert decode(raw) is None
