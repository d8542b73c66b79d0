"""Three processes applying batches to the same stores at once lose no note and no index line."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from memory.constants import INDEX_FILE
from tests.support.memtools import create, make_env

PER_PROCESS = 12


def _worker(root: str, who: int, barrier) -> None:
    stores = make_env(Path(root))
    barrier.wait(timeout=60)
    for i in range(PER_PROCESS):
        stores.apply(
            [
                (0, create("project", f"W{who}-{i}", f"fact {who}/{i}")),
                (1, create("user", f"W{who}-{i}", f"pref {who}/{i}", type_="user_preference")),
            ],
            source=f"proc-{who}",
        )


def test_three_processes_lose_nothing(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3)
    procs = [ctx.Process(target=_worker, args=(str(tmp_path), w, barrier)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    stores = make_env(tmp_path)
    for store in (stores.project, stores.user):
        names = store.note_names()
        assert len(names) == 3 * PER_PROCESS
        lines = (store.dir / INDEX_FILE).read_text().splitlines()
        assert len(lines) == 3 * PER_PROCESS
        titles = {n.meta.title for n in store.notes()}
        assert titles == {f"W{w}-{i}" for w in range(3) for i in range(PER_PROCESS)}
