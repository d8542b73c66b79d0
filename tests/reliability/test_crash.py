"""Hard crashes: a forked child exits at every file operation k; random SIGKILLs of a process
applying batches. After recovery: no mixed store, no lost and no twice-applied job."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory.jobs.spool import Spool, make_job
from memory.model import Turn, TurnMessage
from memory.store.fs import FS
from memory.store.stores import MemoryStores
from tests.reliability.scenario import reference, run_batch, seeded
from tests.support.memtools import create, leftovers, make_env, stores_state

ROOT = Path(__file__).resolve().parents[2]


def _exit_at(k: int):
    calls = {"n": 0}

    def hook(op: str, path: str) -> None:
        if calls["n"] == k:
            os._exit(17)
        calls["n"] += 1

    return hook


def test_os_exit_at_every_file_operation(tmp_path: Path) -> None:
    before, after, log = reference(tmp_path / "ref")
    seen = set()
    for k in range(len(log)):
        root = tmp_path / f"k{k}"
        root.mkdir()
        # Seed in the parent so the child only runs the batch.
        _, job = seeded(root)
        pid = os.fork()
        if pid == 0:  # child: die hard at operation k
            try:
                run_batch(make_env(root, FS(hook=_exit_at(k))), job)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 17, f"child did not crash at op {k}"
        clean = make_env(root)
        clean.recover()
        state = stores_state(clean)
        assert state in (before, after), f"mixed store after a crash at op {k} ({log[k]})"
        assert leftovers(clean) == []
        if job.exists():
            # Not committed: the job is still spooled; running it now applies it exactly once.
            assert state == before
            run_batch(clean, job)
        assert stores_state(clean) == after, f"job lost or applied twice after a crash at op {k}"
        seen.add(state == after)
    assert seen == {True, False}


APPLIER = r"""
import json, os, sys
from pathlib import Path
from tests.support.memtools import make_env, create
root = Path(sys.argv[1])
stores = make_env(root)
stores.recover()
spool = stores.paths.spool_dir
spool.mkdir(parents=True, exist_ok=True)
# Leftover jobs first (their batch was never committed), then new ones.
def batch(i):
    return [(0, create("project", f"P-{i}", f"project fact {i}")),
            (1, create("user", f"U-{i}", f"user fact {i}", type_="user_preference"))]
counter = root / "next"
i = int(counter.read_text()) if counter.exists() else 0
for name in sorted(os.listdir(spool)):
    if name.endswith(".json"):
        j = int(name.split(".")[0])
        stores.apply(batch(j), source=f"job-{j}", jobs=[spool / name])
        # A job spooled just before the kill, before the counter moved past it.
        i = max(i, j + 1)
sys.stdout.write("ready\n"); sys.stdout.flush()
while True:
    job = spool / f"{i:08d}.json"
    stores.fs.create_durable(job, json.dumps({"i": i}).encode())
    stores.fs.atomic_write(counter, str(i + 1).encode())
    stores.apply(batch(i), source=f"job-{i}", jobs=[job])
    i += 1
"""


def _titles(folder: Path, prefix: str) -> list[int]:
    out = []
    for p in folder.glob("*.md"):
        if p.name == "MEMORY.md":
            continue
        for line in p.read_text().splitlines():
            if line.startswith("title: "):
                t = line.removeprefix("title: ").strip("'\"")
                if t.startswith(prefix):
                    out.append(int(t.removeprefix(prefix)))
    return sorted(out)


def test_random_sigkill_of_applying_process(tmp_path: Path) -> None:
    kills = int(os.environ.get("PSEUDOCLAUDE_STRESS_KILLS", "20"))
    seed = int(os.environ.get("PSEUDOCLAUDE_STRESS_SEED", str(random.randrange(1 << 30))))
    print(f"random SIGKILL test: {kills} kills, seed {seed} (PSEUDOCLAUDE_STRESS_SEED={seed} to replay)")
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", APPLIER, str(tmp_path)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line != "ready\n":
            proc.kill()
            pytest.fail(f"applier failed to start: {line}{proc.stderr.read() if proc.stderr else ''}")
        # A random moment inside the apply loop; the barrier above makes sure it is running.
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    stores = make_env(tmp_path)
    stores.recover()
    assert leftovers(stores) == []
    spooled = {int(p.stem) for p in stores.paths.spool_dir.glob("*.json")}
    project, user = _titles(stores.project.dir, "P-"), _titles(stores.user.dir, "U-")
    assert len(project) == len(set(project)) and len(user) == len(set(user)), "a job was applied twice"
    assert project == user, "a batch reached one store and not the other"
    started = int((tmp_path / "next").read_text()) if (tmp_path / "next").exists() else 0
    # Jobs are spooled one after another, so every id below the highest one seen was spooled.
    started = max([started, *(i + 1 for i in [*project, *spooled])])
    for i in range(started):
        assert (i in project) != (i in spooled), f"job {i} lost or applied while still spooled"
    # Drain what is left, as the next process would: every job ends applied exactly once.
    for i in sorted(spooled):
        stores.apply(
            [
                (0, create("project", f"P-{i}", f"project fact {i}")),
                (1, create("user", f"U-{i}", f"user fact {i}", type_="user_preference")),
            ],
            source=f"job-{i}",
            jobs=[stores.paths.spool_dir / f"{i:08d}.json"],
        )
    project, user = _titles(stores.project.dir, "P-"), _titles(stores.user.dir, "U-")
    assert project == user == sorted(set(range(started)) | spooled)
    for store in (stores.project, stores.user):
        index_lines = (
            (store.dir / "MEMORY.md").read_text().splitlines() if (store.dir / "MEMORY.md").exists() else []
        )
        assert len(index_lines) == len(store.note_names())


# -- the spool: a crash at any file operation of submit or of coalescing -------------------------------


def _turn(text: str) -> Turn:
    return Turn(messages=[TurnMessage(role="user", text=text), TurnMessage(role="assistant", text="ok")])


def _live_turns(root: Path) -> list[str]:
    """Every spooled turn's text (superseded originals dropped); asserts no job file is damaged."""
    stores = make_env(root)
    entries = Spool(stores.paths).list(None, include_split=True)
    damaged = [e.problem for e in entries if e.job is None]
    assert damaged == [], damaged
    return sorted(t.messages[0].text for e in entries if e.job is not None for t in e.job.turns)


def _crash_child(k: int, action) -> None:
    pid = os.fork()
    if pid == 0:  # child: die hard at operation k
        try:
            action(FS(hook=_exit_at(k)))
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 17, f"child did not crash at op {k}"


def test_os_exit_at_every_file_operation_of_submit_leaves_the_job_whole_or_absent(tmp_path: Path) -> None:
    # Before: the job was created at its final name and then written: a crash in between left an
    # empty <id>.json that blocked `memory flush` for good.
    ref = FS(record=True)
    job = make_job(make_env(tmp_path / "ref").paths.workspace, [_turn("remember me")])
    Spool(make_env(tmp_path / "ref", ref).paths, ref).submit(job)
    assert ref.log is not None
    n = len(ref.log)
    outcomes = set()
    for k in range(n):
        root = tmp_path / f"k{k}"
        env = make_env(root)
        job_k = make_job(env.paths.workspace, [_turn("remember me")])
        _crash_child(k, lambda fs, env=env, job_k=job_k: Spool(env.paths, fs).submit(job_k))
        turns = _live_turns(root)
        assert turns in ([], ["remember me"]), f"crash at op {k} ({ref.log[k]})"
        if turns:
            assert Spool(env.paths).load(job_k.id) == job_k
        outcomes.add(bool(turns))
    assert outcomes == {True, False}


def test_os_exit_at_every_file_operation_of_coalescing_keeps_each_turn_exactly_once(tmp_path: Path) -> None:
    texts = [f"turn {i}" for i in range(3)]

    def seed(root: Path) -> MemoryStores:
        env = make_env(root)
        spool = Spool(env.paths)
        for t in texts:
            spool.submit(make_job(env.paths.workspace, [_turn(t)]))
        return env

    def coalesce(root: Path, fs: FS) -> None:
        from memory.jobs.manager import Manager

        env = MemoryStores(make_env(root).paths.workspace, root / "home", fs=fs)
        m = Manager(env, None, fs=fs)
        picked = m.worker.pick(m.spool.list(env.paths.workspace))
        assert picked is not None and len(picked.turns) == 3

    seed(tmp_path / "ref")
    ref = FS(record=True)
    coalesce(tmp_path / "ref", ref)
    assert ref.log is not None
    n = len(ref.log)
    for k in range(n):
        root = tmp_path / f"c{k}"
        seed(root)
        _crash_child(k, lambda fs, root=root: coalesce(root, fs))
        assert _live_turns(root) == texts, f"turn lost or doubled after a crash at op {k} ({ref.log[k]})"
