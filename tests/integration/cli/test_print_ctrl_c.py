"""Print mode: a person's Ctrl+C always cancels, however the SIGINT arrives.

The real CLI in a subprocess (tests/support/sigint_driver.py arranges the hard cases), the fake
Messages API holding the rest of the answer until the test has seen the cancel take effect.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, Live, Result, cli_env, create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, Gate, text

pytestmark = pytest.mark.timeout(120)

# Longer than every wait below: a held answer is never let go before the test has seen the cancel.
HOLD_S = 100.0


def _driver(server: FakeAnthropic, ws: Path, mode: str, *args: str) -> Live:
    argv = [sys.executable, "-m", "tests.support.sigint_driver", mode, "-C", str(ws), *args]
    return Live.command(argv, cli_env(server))


def _session() -> list[dict[str, Any]]:
    [session] = (Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions").glob("*.jsonl")
    return [json.loads(x) for x in session.read_text().splitlines()]


def _spooled() -> list[str]:
    d = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "spool"
    return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []


def _cancelled(live: Live, gate: Gate) -> Result:
    """The first chunk is on stdout; the SIGINT is on its way: the cancel must take effect while
    the rest of the answer is still held."""
    try:
        live.wait_until(lambda s: b"cancelled" in s.err, 45, "the turn to be cancelled (the SIGINT was lost)")
        res = live.finish()
    finally:
        gate.release()
        if live.proc.poll() is None:
            live.kill()
    assert not gate.timed_out
    return res


def _assert_cancelled_cleanly(server: FakeAnthropic, res: Result) -> None:
    assert res.code == 130, res.err
    assert res.out == "partial\n", "the rest of the answer was never printed"
    lines = _session()
    messages = [x["message"] for x in lines if x["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "user"]
    assert messages[-1]["content"][0]["text"].startswith("[PseudoClaude: this turn was interrupted")
    assert lines[-1]["type"] == "turn_end" and lines[-1]["status"] == "cancelled"
    assert _spooled() == [] and server.requests_for(MEMORY_MODEL) == []


def _held_answer(server: FakeAnthropic) -> Gate:
    gate = server.gate("the rest of the answer", timeout=HOLD_S)
    server.script(MODEL, text("partial answer", chunks=["partial", " answer"], hold_after=gate))
    return gate


def test_ctrl_c_cancels_a_run_started_with_sigint_ignored(server: FakeAnthropic, ws: Path) -> None:
    # A script's `pseudoclaude -p … &`: the shell starts it with SIGINT ignored, and asyncio.run
    # then installed no handler at all: the SIGINT was lost, the whole answer printed, exit 0.
    gate = _held_answer(server)
    live = _driver(server, ws, "ignored", "-p", "hi")
    live.wait_until(lambda s: b"partial" in s.out, what="the first chunk")
    live.proc.send_signal(signal.SIGINT)
    _assert_cancelled_cleanly(server, _cancelled(live, gate))


def test_ctrl_c_landing_on_another_thread_cancels_at_once(server: FakeAnthropic, ws: Path) -> None:
    # The kernel may give the process's SIGINT to any thread: asyncio.run's handler then ran only
    # when the loop next woke (the model's next byte), so a held stream held the cancel too.
    gate = _held_answer(server)
    live = _driver(server, ws, "thread", "-p", "hi")
    live.wait_until(lambda s: b"partial" in s.out, what="the first chunk")
    _assert_cancelled_cleanly(server, _cancelled(live, gate))


def test_ctrl_c_while_the_answers_job_is_spooled_keeps_the_completed_turn_and_its_job(
    server: FakeAnthropic, ws: Path
) -> None:
    # The whole answer is out and its job is being written: the turn completes with its job (a
    # cancel there used to close it as cancelled with the job spooled all the same).
    memory_gate = server.gate("the memory model", timeout=HOLD_S)
    server.script(MODEL, text("the whole answer"))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Kept", "kept")), hold_before=memory_gate))
    live = _driver(server, ws, "commit", "-p", "hi")
    try:
        res = live.finish()
    finally:
        memory_gate.release()
    assert res.code == 130, res.err
    assert res.out == "the whole answer\n"
    assert "cancelled" not in res.err and res.err.rstrip().endswith("pseudoclaude: interrupted")
    lines = _session()
    messages = [x["message"] for x in lines if x["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    end = lines[-1]
    assert end["type"] == "turn_end" and end["status"] == "completed", end
    assert _spooled() == [end["job"]], "the completed turn's job stays spooled for the next run"
