"""One write reaches the app as one event, with the store watcher running: the worker child's
``outcome`` line announces its batch (its ``wrote`` lines keep the watcher quiet), and another
window's batch is announced once, as its job's end seen in the spool, not also as an outside
change. The watcher reports only what no event announced: a hand edit.

Each test ends with a hand edit of a card: the watcher's first event must be that edit alone,
so an echo of the batch (which would come before it) cannot go unseen.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agent.memory_bridge.worker_process import WorkerProcess
from app.agent.memory_bridge.worker_wire import OutcomeMsg, WroteMsg, encode
from memory.constants import Action, Level
from memory.events import CardsChanged, JobApplied, MemoryEvent, StoresChanged
from memory.jobs.manager import Manager
from memory.model import AppliedOp
from memory.store.stores import MemoryStores
from memory.store.watch import StoresWatcher
from tests.support.memtools import make_env, write_note
from tests.unit.memory.jobs.test_manager import Script, manager, turn

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[3]
DEADLINE = 30.0
HAND = "project_knowledge_by-hand.md"


class App:
    """The app's side: its manager (it runs no job) and its store watcher, and all they say."""

    def __init__(self, env: MemoryStores) -> None:
        self.env = env
        self.manager: Manager = manager(env, Script(default="[]"), runs_jobs=False)
        self.events: list[MemoryEvent] = []
        self.manager.subscribe(self.events.append)
        self.watcher = StoresWatcher(
            env, debounce_ms=100, poll_s=0.2, own=self.manager.announced_writes, settle=self.manager.settle
        )
        self._changes = self.watcher.events()

    async def next_change(self) -> StoresChanged:
        return await asyncio.wait_for(self._changes.__anext__(), DEADLINE)

    async def until_applied(self, job_id: str) -> JobApplied:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        while not (found := [e for e in self.events if isinstance(e, JobApplied) and e.job_id == job_id]):
            assert loop.time() < deadline, "the batch was never announced"
            await asyncio.sleep(0.02)
        [applied] = found
        assert isinstance(applied, JobApplied)
        return applied

    async def hand_edit_is_the_next_change(self) -> None:
        await asyncio.to_thread(write_note, self.env, Level.PROJECT, HAND, "By hand", "typed")
        hand = CardsChanged(level=Level.PROJECT, written=(HAND,))
        assert await self.next_change() == StoresChanged(levels=(Level.PROJECT,), cards=(hand,))


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    a = App(make_env(tmp_path))
    first = asyncio.ensure_future(a.next_change())
    await asyncio.wait_for(a.watcher.ready.wait(), DEADLINE)
    a._changes = _resumed(first, a._changes)
    yield a
    a.watcher.stop()
    await a.manager.close(2)


async def _resumed(
    first: asyncio.Future[StoresChanged], rest: AsyncIterator[StoresChanged]
) -> AsyncIterator[StoresChanged]:
    yield await first
    async for change in rest:
        yield change


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_the_childs_batch_is_one_event_its_outcome_line(app: App, tmp_path: Path) -> None:
    folder = app.env.project.dir
    card, index = folder / "project_knowledge_build.md", folder / "MEMORY.md"
    card_bytes = b"---\ntitle: Build\ntype: project_knowledge\n---\nRun make.\n"
    index_bytes = b"- [project_knowledge] Build (project_knowledge_build.md)\n"
    applied = JobApplied(
        job_id="00000000000000000001-aaaaaaaa",
        txid="tx1",
        applied=(AppliedOp(index=0, action=Action.CREATE, level=Level.PROJECT, filename=card.name),),
    )
    # A stand-in child, as `memory worker` speaks: wrote lines, the files moved in, the outcome.
    wrote = [encode(WroteMsg.of(str(p), _sha(b))) for p, b in ((card, card_bytes), (index, index_bytes))]
    code = (
        "import os, sys, time\n"
        f"sys.stdout.write({''.join(line + chr(10) for line in wrote)!r}); sys.stdout.flush()\n"
        f"os.makedirs({str(folder)!r}, exist_ok=True)\n"
        f"open({str(card)!r}, 'wb').write({card_bytes!r})\n"
        f"open({str(index)!r}, 'wb').write({index_bytes!r})\n"
        "time.sleep(0.3)\n"
        f"print({encode(OutcomeMsg(event=applied))!r})\n"
    )
    await app.manager.start()
    child = WorkerProcess(app.manager, lambda mode: [sys.executable, "-c", code], log_path=tmp_path / "w.log")
    await child.check()
    assert child.proc is not None
    await asyncio.to_thread(child.proc.wait, DEADLINE)
    assert await app.until_applied(applied.job_id) == applied
    await app.hand_edit_is_the_next_change()
    assert [e for e in app.events if isinstance(e, JobApplied)] == [applied]
    await child.stop()


async def test_another_windows_batch_is_one_event_its_jobs_end(app: App) -> None:
    job = await app.manager.submit(turn("we build with make"))
    assert job is not None
    await app.manager.tick()  # this window saw the job spooled
    # Another process (another window's worker) runs it, as a worker does: elected, the job
    # marked applying, one commit that removes the job file, which lags behind the cards by half
    # a second (a busy machine): the watcher sees the cards first and must wait for the job's end.
    code = (
        "import time\n"
        "from memory.constants import Action, Level, NoteType\n"
        "from memory.jobs.manager import Manager\n"
        "from memory.model import Operation\n"
        "from memory.store.fs import FS\n"
        "from memory.store.stores import MemoryStores\n"
        "job_path = None\n"
        "def hook(op, path):\n"
        "    if op == 'unlink' and path == str(job_path):\n"
        "        time.sleep(0.5)\n"
        f"st = MemoryStores({str(app.env.paths.workspace)!r}, {str(app.env.paths.home)!r}, fs=FS(hook))\n"
        "m = Manager(st, None)\n"
        "assert m.worker.try_elect()\n"
        f"job = m.spool.load({job.id!r}); job.phase = 'applying'; m.spool.save(job)\n"
        f"job_path = m.spool.path({job.id!r})\n"
        "op = Operation(action=Action.CREATE, level=Level.PROJECT, type=NoteType.PROJECT_KNOWLEDGE, "
        "title='Build with make', content='Run make.')\n"
        "st.apply([(0, op)], source='other', jobs=[job_path], kind='turn')\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", code], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    applied = await app.until_applied(job.id)
    assert [a.filename for a in applied.applied] == ["project_knowledge_build-with-make.md"]
    await app.hand_edit_is_the_next_change()
    assert len([e for e in app.events if isinstance(e, JobApplied)]) == 1
