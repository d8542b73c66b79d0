"""The App with its memory worker in a child process: the card reaches the panel, the child's
batch is one job event and one panel refresh (its outcome line), a child killed mid-apply is
survived (the job finishes once, said once, announced once), two windows share one worker, and
quitting with a job in flight leaves the child to finish it and exit.

The children run the real `pseudoclaude memory worker` (the SDK against the fake API) — or
tests/support/worker_driver.py, which is that command killing itself once mid-apply.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import app.agent.runtime as runtime_module
from memory.constants import MemoryMode
from memory.events import JobApplied, JobQueued, MemoryEvent
from memory.jobs.spool import Spool
from memory.store.stores import MemoryStores
from tests.support.clitools import create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, Gate, text
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
CHILD_START_S = 60.0  # a child imports the SDK before its first request: seconds on a busy machine


def _titles(cards: object) -> list[str]:
    return [c.title for c in cards]  # type: ignore[attr-defined]


def _project_cards(ws: Path) -> list[Path]:
    folder = ws / ".PseudoClaude" / "memory"
    return sorted(p for p in folder.glob("*.md") if p.name != "MEMORY.md") if folder.is_dir() else []


def _batches_for(ws: Path, job_prefix: str = "") -> list[object]:
    stores = MemoryStores(ws)
    return [e for e in stores.history() if e.jobs and e.label.startswith("memory job")]


def _spooled_states(ws: Path) -> list[str]:
    return [
        f"{e.id}:{e.job.state}/{e.job.phase}" if e.job else f"{e.id}:{e.problem}"
        for e in Spool(MemoryStores(ws).paths).list(ws, include_orphans=False)
    ]


def _worker_pids(ws: Path) -> list[int]:
    """Every live `memory worker` process of this workspace (read from /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"worker" in argv and str(ws).encode() in argv:
            pids.append(int(entry.name))
    return pids


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def process_worker(monkeypatch: pytest.MonkeyPatch, ws: Path) -> Iterator[None]:
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_WORKER", "process")
    # The children find this checkout's packages (tests.support too) as the app does.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    yield  # first in each test's arguments: torn down after make_app has closed the apps
    # The apps are closed: their children drain and exit by themselves; one still there after
    # that is stopped so it cannot run on into other tests.
    deadline = time.monotonic() + 20
    while (left := _worker_pids(ws)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGKILL)


async def test_a_turns_card_reaches_the_panel_from_the_worker_child(
    process_worker: None, make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("Use make build."))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run make build.", summary="make build")))
    )
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot, CHILD_START_S)
        rt = app.bridge.runtime
        await wait_until(pilot, lambda: rt.child.pid is not None, CHILD_START_S, "the worker child")
        assert rt.child.pid != os.getpid()
        await send(pilot, "How do I build?")
        await wait_until(
            pilot,
            lambda: "Build with make" in _titles(app.panel.state.project),
            CHILD_START_S,
            "the new card in the panel",
        )
        [card] = app.panel.state.project
        assert card.new and card.summary == "make build"
        # The app's own manager never ran a job: the child did.
        assert not rt.manager.is_worker and rt.manager.worker.may_elect is False
        assert len(server.requests_for(MEMORY_MODEL)) == 1
        assert rt.child.deaths == []
        # The child's commit is the app's own worker's: not an outside change that would rebuild
        # the indexes and re-read the stores on the app's side (its `wrote` lines on the pipe).
        await wait_until(pilot, lambda: app.bridge.watcher_ready, what="the store watcher")
        await pilot.pause(0.5)
        assert app.memory.sharing.refreshes == 0
        # The child's request counts in the session's cost (its usage line on the pipe).
        await wait_until(
            pilot, lambda: set(app.chat_screen.cost.by_model) == {MODEL, MEMORY_MODEL}, what="the memory cost"
        )


async def test_the_childs_batch_is_one_job_event_and_one_panel_refresh(
    process_worker: None, make_app, server: FakeAnthropic, ws: Path
) -> None:
    gate = Gate("memory answer", timeout=60)
    server.script(MODEL, text("Use make build."))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run make build.")), hold_before=gate)
    )
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot, CHILD_START_S)
        rt = app.bridge.runtime
        await wait_until(pilot, lambda: rt.child.pid is not None, CHILD_START_S, "the worker child")
        await send(pilot, "How do I build?")
        await wait_until(pilot, lambda: gate.reached, CHILD_START_S, "the memory request, held")
        await pilot.pause(1.5)  # the turn's end and the job's start have reached the panel
        events: list[MemoryEvent] = []
        rt.manager.subscribe(events.append)
        refreshes: list[int] = []
        refresh = app.memory.panel.update

        def counted() -> object:
            refreshes.append(1)
            return refresh()

        app.memory.panel.update = counted
        gate.release()
        await wait_until(
            pilot,
            lambda: "Build with make" in _titles(app.panel.state.project),
            CHILD_START_S,
            "the new card in the panel",
        )
        await pilot.pause(2.0)  # several looks at the spool: none may announce the batch again
        assert [type(e) for e in events] == [JobApplied]
        assert [a.filename for a in events[0].applied] == [c.name for c in _project_cards(ws)]  # type: ignore[union-attr]
        assert refreshes == [1]
        assert app.memory.sharing.refreshes == 0  # and the watcher took the child's writes for the app's own


async def test_a_child_killed_mid_apply_is_said_once_replaced_and_the_job_applies_once(
    process_worker: None,
    make_app,
    server: FakeAnthropic,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = tmp_path / "killed"
    real_argv = runtime_module.worker_argv

    def driver_argv(*args: object, **kwargs: object) -> list[str]:
        argv = real_argv(*args, **kwargs)  # type: ignore[arg-type]
        rest = argv[argv.index("app.cli.main") + 1 :]
        # The 4th file change of the transaction: after the journal's commit point, before the cards.
        return [sys.executable, "-P", "-m", "tests.support.worker_driver", "4", str(marker), "--", *rest]

    monkeypatch.setattr(runtime_module, "worker_argv", driver_argv)
    server.script(MODEL, text("Deploy with make deploy."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Deploy with make", "Run make deploy."))))
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot, CHILD_START_S)
        rt = app.bridge.runtime
        events: list[MemoryEvent] = []
        rt.manager.subscribe(events.append)
        await wait_until(pilot, lambda: rt.child.pid is not None, CHILD_START_S, "the worker child")
        first = rt.child.pid
        await send(pilot, "How do I deploy?")
        await wait_until(pilot, marker.exists, CHILD_START_S, "the child to kill itself mid-apply")
        await wait_until(
            pilot,
            lambda: "Deploy with make" in _titles(app.panel.state.project),
            CHILD_START_S,
            "the card, applied by the next child",
        )
        assert int(marker.read_text()) == first and _gone(first)
        assert rt.child.pid not in (None, first) and rt.child.started == 2
        said = [t for t in chat_texts(app) if "memory worker stopped" in t]
        assert said == ["memory worker stopped (killed by SIGKILL); started another (no memory job is lost)"]
        # Exactly once: one card, one batch, one extraction request (the answer was kept on the job).
        assert len(_project_cards(ws)) == 1
        assert len(_batches_for(ws)) == 1
        assert len(server.requests_for(MEMORY_MODEL)) == 1
        await wait_until(
            pilot,
            lambda: not Spool(MemoryStores(ws).paths).list(ws, include_orphans=False),
            what="the spool to empty",
        )
        # The killed child never said the job's outcome: the app's look at the spool did, once.
        await pilot.pause(1.5)
        [queued] = [e for e in events if isinstance(e, JobQueued)]
        assert [e.job_id for e in events if isinstance(e, JobApplied)] == [queued.job_id]


async def test_two_windows_on_one_workspace_have_one_worker_process(
    process_worker: None, make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("first"), text("second"))
    server.script(
        MEMORY_MODEL,
        text(ops_answer(create_op("Card one", "one"))),
        text(ops_answer(create_op("Card two", "two"))),
    )
    one, two = make_app(server), make_app(server)
    async with one.run_test(size=(140, 40)) as p1, two.run_test(size=(140, 40)) as p2:
        await wait_ready(p1, CHILD_START_S)
        await wait_ready(p2, CHILD_START_S)
        c1, c2 = one.bridge.runtime.child, two.bridge.runtime.child
        await wait_until(
            p1, lambda: len(_worker_pids(ws)) == 1 and (c1.pid or c2.pid), CHILD_START_S, "one worker child"
        )
        # A child started meanwhile by the other window found the lock taken and left quietly.
        await wait_until(
            p1, lambda: (c1.pid is None) != (c2.pid is None), CHILD_START_S, "one supervisor's child"
        )
        # Each window's turn in turn (queued together, they would be one coalesced request).
        for pilot, msg, title in (
            (p2, "second window's turn", "Card one"),
            (p1, "first window's turn", "Card two"),
        ):
            await send(pilot, msg)
            for p, a in ((p1, one), (p2, two)):
                await wait_until(
                    p,
                    lambda a=a, title=title: title in _titles(a.panel.state.project),
                    CHILD_START_S,
                    f"{title} in both windows ({_titles(a.panel.state.project)}, cards on disk "
                    f"{[c.name for c in _project_cards(ws)]}, {len(server.requests_for(MEMORY_MODEL))} "
                    f"memory requests, spool {_spooled_states(ws)})",
                )
        assert len(_worker_pids(ws)) == 1
        assert c1.deaths == [] and c2.deaths == []


async def test_quitting_with_a_job_in_flight_leaves_the_child_to_finish_it_and_exit(
    process_worker: None, make_app, server: FakeAnthropic, ws: Path
) -> None:
    gate = Gate("memory answer", timeout=60)
    server.script(MODEL, text("Lint with ruff."))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Lint with ruff", "Run ruff check.")), hold_before=gate)
    )
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot, CHILD_START_S)
        rt = app.bridge.runtime
        await wait_until(pilot, lambda: rt.child.pid is not None, CHILD_START_S, "the worker child")
        proc = rt.child.proc
        await send(pilot, "How do I lint?")
        await wait_until(pilot, lambda: gate.reached, CHILD_START_S, "the memory request, held")
        started = time.monotonic()
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, 20, "the app to quit")
    # The app left within its bounded drain; the child still runs, its request held.
    assert time.monotonic() - started < 15
    assert proc.poll() is None
    assert _project_cards(ws) == []
    gate.release()
    code = await asyncio.to_thread(proc.wait, 60)
    assert code == 0
    assert len(_project_cards(ws)) == 1
    assert _worker_pids(ws) == []


async def test_memory_off_stops_the_childs_requests_and_back_on_resumes_them(
    process_worker: None, make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("one"), text("two"))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Card after on", "x"))))
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot, CHILD_START_S)
        rt = app.bridge.runtime
        await wait_until(pilot, lambda: rt.child.pid is not None, CHILD_START_S, "the worker child")
        await rt.set_memory_mode(MemoryMode.OFF)
        assert rt.child.pid is not None  # it stays, idle
        await send(pilot, "a turn with memory off")
        await wait_until(pilot, lambda: "one" in chat_texts(app))
        await rt.set_memory_mode(MemoryMode.AUTO)
        await send(pilot, "a turn with memory on")
        await wait_until(
            pilot,
            lambda: "Card after on" in _titles(app.panel.state.project),
            CHILD_START_S,
            "the card after memory is back on",
        )
        assert len(server.requests_for(MEMORY_MODEL)) == 1


def test_the_child_is_a_session_of_its_own_reading_a_pipe(tmp_path: Path) -> None:
    # What keeps the terminal's Ctrl+C / hang-up off the child and its output off the screen.
    from app.agent.memory_bridge.worker_process import worker_argv

    argv = worker_argv(tmp_path, "m", MemoryMode.AUTO, drain=3)
    assert argv[:4] == [sys.executable, "-P", "-m", "app.cli.main"] and argv[-2:] == ["--drain", "3"]
    assert (
        subprocess.run(
            [*argv[:4], "memory", "worker", "--help"],
            capture_output=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        ).returncode
        == 0
    )
