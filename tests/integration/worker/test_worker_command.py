"""``pseudoclaude memory worker`` as its own process: it runs the spooled jobs, drains at the end of
stdin within its bound, leaves when another process is the worker, and stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from app.agent.memory_bridge.worker_wire import UsageMsg, decode
from memory.constants import WORKER_EXIT_BUSY
from memory.jobs.manager import Manager
from memory.jobs.spool import Spool, make_job
from memory.model import Turn, TurnMessage
from memory.store.stores import MemoryStores
from tests.support.clitools import ROOT, cli_cmd, cli_env, create_op, ops_answer, run_cli
from tests.support.fakeapi import FakeAnthropic, Gate, text

pytestmark = pytest.mark.timeout(120)

MEMORY_MODEL = "claude-haiku-5-5"


def _spool_turn(ws: Path, said: str = "we build with make") -> str:
    stores = MemoryStores(ws)
    job = make_job(
        ws, [Turn(messages=[TurnMessage(role="user", text=said), TurnMessage(role="assistant", text="ok")])]
    )
    Spool(stores.paths).submit(job)
    return job.id


def _cards(ws: Path) -> list[str]:
    return [n.meta.title for n in MemoryStores(ws).project.notes()] if (ws / ".PseudoClaude").exists() else []


def _spooled(ws: Path) -> list[object]:
    return [e.job for e in Spool(MemoryStores(ws).paths).list(ws, include_orphans=False)]


def test_it_runs_the_spooled_jobs_and_exits_at_the_end_of_stdin(server: FakeAnthropic, ws: Path) -> None:
    _spool_turn(ws)
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run make build."))))
    r = run_cli(server, ws, "memory", "worker", "--drain", "60", stdin="")
    assert (r.code, r.err) == (0, "")
    assert _cards(ws) == ["Build with make"] and _spooled(ws) == []
    usage = decode(r.out.splitlines()[0])  # for the app's cost
    assert isinstance(usage, UsageMsg) and usage.model == "claude-haiku-5-5"


async def test_it_leaves_at_once_when_another_process_is_the_worker(server: FakeAnthropic, ws: Path) -> None:
    _spool_turn(ws)
    manager = Manager(MemoryStores(ws), completion=None)
    assert manager.worker.try_elect()
    try:
        r = run_cli(server, ws, "memory", "worker", stdin="")
    finally:
        manager.worker.release()
    assert r.code == WORKER_EXIT_BUSY
    assert r.err == "pseudoclaude: another process runs this workspace's memory jobs\n"
    assert server.requests_for(MEMORY_MODEL) == [] and len(_spooled(ws)) == 1


def _start(server: FakeAnthropic, ws: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cli_cmd("-C", str(ws), "memory", "worker", *args),
        cwd=ROOT,
        env=cli_env(server),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_job_cut_off_by_the_drain_bound_stays_spooled(server: FakeAnthropic, ws: Path) -> None:
    gate = Gate("held", timeout=60)
    job_id = _spool_turn(ws)
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Never", "x")), hold_before=gate))
    proc = _start(server, ws, "--drain", "1")
    try:
        assert gate.wait_reached(60)
        # Background work: it yields the CPU to the app (niceness, field 19 of /proc/PID/stat).
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(fields[16]) == os.getpriority(os.PRIO_PROCESS, 0) + 10 or int(fields[16]) == 19
        assert proc.stdin is not None
        proc.stdin.close()  # the app quit
        started = time.monotonic()
        assert proc.wait(30) == 0
        assert time.monotonic() - started < 15  # its bound, not the held request's
    finally:
        gate.release()
        if proc.poll() is None:
            proc.kill()
    [job] = _spooled(ws)
    assert job.id == job_id and _cards(ws) == []


def test_sigterm_drains_and_exits(server: FakeAnthropic, ws: Path) -> None:
    gate = Gate("held", timeout=60)
    _spool_turn(ws)
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Terminated kindly", "x")), hold_before=gate))
    proc = _start(server, ws, "--drain", "30")
    try:
        assert gate.wait_reached(60)
        os.kill(proc.pid, signal.SIGTERM)
        gate.release()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _cards(ws) == ["Terminated kindly"] and _spooled(ws) == []


def test_a_bad_setting_is_one_line_and_exit_2(server: FakeAnthropic, ws: Path) -> None:
    r = run_cli(server, ws, "memory", "worker", stdin="", PSEUDOCLAUDE_MAX_TOKENS="lots")
    assert r.code == 2 and r.err.count("\n") == 1 and r.err.startswith("pseudoclaude: ")


def test_the_mode_command_switches_it_off(server: FakeAnthropic, ws: Path) -> None:
    _spool_turn(ws)
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Not asked", "x"))))
    proc = _start(server, ws, "--memory", "off", "--drain", "2")
    proc.communicate("", timeout=60)
    assert proc.returncode == 0 and server.requests_for(MEMORY_MODEL) == [] and len(_spooled(ws)) == 1
