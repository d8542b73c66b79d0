"""One worker per workspace across processes, with and without a crash.

Two real processes start together on one workspace with a backlog of jobs. Every model call
is appended (O_APPEND) to a shared log, so the test can see which process ran which job. With
no crash each job is asked exactly once, by the one elected worker. When the worker is killed
(mid-request, just before the transaction's commit point, or just after it) the other process
takes over: the effect is still exactly once, and the model is asked again only for a job whose
answer had not been stored yet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from memory.jobs.spool import Spool, make_job
from memory.model import Turn, TurnMessage
from memory.store.stores import MemoryStores

ROOT = Path(__file__).resolve().parents[2]
N_JOBS = 12
KILL_AT_EVENT = 4

CHILD = r"""
import asyncio, json, os, re, signal, sys
from pathlib import Path

from memory.store.fs import FS
from memory.jobs.manager import Manager
from memory.store.stores import MemoryStores

ws, home, log_path, kill_at, kill_n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
marker = Path(log_path).with_name("killed")
count = {"n": 0}


def die_once():
    # The k-th event of this process kills it, but only the first process to get there.
    count["n"] += 1
    if count["n"] < kill_n:
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def hook(op, path):
    if kill_at == "before-commit" and op == "replace" and "/journal/" in path:
        die_once()
    if kill_at == "after-commit" and op == "unlink" and "/spool/" in path:
        die_once()


async def completion(request):
    ids = list(dict.fromkeys(re.findall(r"MARK-(\d+)", request.prompt)))
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, f"{os.getpid()} {' '.join(ids)}\n".encode())
    os.close(fd)
    if kill_at == "request":
        die_once()
    await asyncio.sleep(0.01)  # a model takes time: both processes are alive together
    return json.dumps([
        {"action": "create", "level": "project", "type": "project_knowledge", "title": f"Fact {i}",
         "content": f"content {i}"}
        for i in ids
    ])


async def main():
    fs = FS(hook=hook)
    stores = MemoryStores(ws, Path(home), fs=fs)
    m = Manager(stores, completion, fs=fs, poll_interval=0.02, max_batch_turns=1, session=f"p{os.getpid()}")
    print("ready", flush=True)
    sys.stdin.readline()  # the barrier: both processes start together
    await m.start()
    print("worker" if m.is_worker else "watcher", flush=True)
    while m.pending():
        await asyncio.sleep(0.02)
    await m.close(10)
    print("done", flush=True)


asyncio.run(main())
"""


def _backlog(tmp_path: Path) -> tuple[Path, Path, MemoryStores]:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    ws = Path(os.path.realpath(ws))
    home = tmp_path / "home"
    stores = MemoryStores(ws, home)
    spool = Spool(stores.paths)
    for i in range(N_JOBS):
        msgs = [
            TurnMessage(role="user", text=f"MARK-{i} is a fact"),
            TurnMessage(role="assistant", text="ok"),
        ]
        spool.submit(make_job(ws, [Turn(messages=msgs, session="backlog")]))
    return ws, home, stores


def _run_two(ws: Path, home: Path, log: Path, kill_at: str) -> list[tuple[int, str]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(ws), str(home), str(log), kill_at, str(KILL_AT_EVENT)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == b"ready", p.stderr.read().decode() if p.stderr else ""
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(b"go\n")
            p.stdin.flush()
        out = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=90)
            out.append((p.returncode, stdout.decode() + stderr.decode()))
        return out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _calls(log: Path) -> list[tuple[str, list[str]]]:
    out = []
    for line in log.read_text().splitlines():
        pid, *ids = line.split()
        out.append((pid, ids))
    return out


@pytest.mark.parametrize("kill_at", ["none", "request", "before-commit", "after-commit"])
def test_two_processes_on_one_workspace_never_run_the_same_job(tmp_path: Path, kill_at: str) -> None:
    ws, home, stores = _backlog(tmp_path)
    log = tmp_path / "calls.log"
    results = _run_two(ws, home, log, kill_at)
    codes = sorted(rc for rc, _ in results)
    outputs = "\n".join(o for _, o in results)
    calls = _calls(log)
    per_job = Counter(i for _, ids in calls for i in ids)
    every = {str(i) for i in range(N_JOBS)}
    assert set(per_job) == every, outputs
    assert all(len(ids) == 1 for _, ids in calls)  # max_batch_turns=1: one job per request

    if kill_at == "none":
        assert codes == [0, 0], outputs
        assert len({pid for pid, _ in calls}) == 1  # only the elected worker asked
        assert all(n == 1 for n in per_job.values()), per_job
    else:
        assert codes == [-9, 0], outputs
        assert len({pid for pid, _ in calls}) == 2  # the survivor took over
        if kill_at == "request":
            # The answer of the killed request was never stored: that job alone is asked again.
            assert sorted(per_job.values()) == [1] * (N_JOBS - 1) + [2], per_job
        else:
            # The answer was stored before the crash: the survivor re-parsed it, never re-asked.
            assert all(n == 1 for n in per_job.values()), per_job

    # Exactly once on disk: one note per job, no "-2" duplicates, one history entry per job.
    names = sorted(p.name for p in stores.project.dir.glob("*.md") if p.name != "MEMORY.md")
    assert names == sorted(f"project_knowledge_fact-{i}.md" for i in range(N_JOBS))
    assert len((stores.project.dir / "MEMORY.md").read_text().splitlines()) == N_JOBS
    jobs_in_history = Counter(j for e in stores.history() for j in e.jobs)
    assert len(jobs_in_history) == N_JOBS and set(jobs_in_history.values()) == {1}
    assert Spool(stores.paths).list() == []
    assert stores.recover() == []
