"""`make bench`, figure 6: how the stores scale — a 50-op batch applied to project
stores of 100, 1,000 and 10,000 notes, and `memory index` / `memory list` on each.

Three workspaces under one private home, each with a trusted project store of N notes (written
with ``memory.frontmatter.dump_note``, indexed by one ``rebuild_indexes``). Every run, for each
size in turn (so the sizes alternate and share the machine's noise):

* cold apply: a new ``python -m app.cli.main memory apply FILE`` process (what a person's command
  pays: the interpreter, the imports, reading the store, the transaction);
* warm apply: ``MemoryStores.apply`` in this process, whose ``MemoryStores`` read the store at
  set-up (the app's runtime is such a process: it keeps its stores and their parsed notes);
* ``memory index`` and ``memory list`` in new processes.

Each batch creates 20 notes, updates 10 and deletes 20 (so a store keeps its size), and names
notes that the previous batches left, cold and warm alike.

    python -m tests.bench fig_stores --no-readme
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, at_most, median, private_env

ROOT = Path(__file__).resolve().parents[2]
SIZES = (100, 1_000, 10_000)
CREATES, UPDATES, DELETES = 20, 10, 20  # 50 ops; creates = deletes keeps the size


def _log(msg: str) -> None:
    print(f"  fig_stores: {msg}", file=sys.stderr, flush=True)


def _cli(ws: Path, *args: str) -> tuple[float, str]:
    """Wall seconds and stdout of one `pseudoclaude -C ws memory ...` process."""
    cmd = [sys.executable, "-m", "app.cli.main", "-C", str(ws), "memory", *args]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"memory {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return seconds, proc.stdout


class _Store:
    """One workspace with a project store of ``size`` notes, its pool of current note names,
    and a warm ``MemoryStores`` that has read it."""

    def __init__(self, root: Path, size: int) -> None:
        from memory.constants import NoteType
        from memory.model import NoteMeta
        from memory.store.frontmatter import dump_note
        from memory.store.stores import MemoryStores

        self.size = size
        self.ws = root / f"ws-{size}"
        (self.ws / ".git").mkdir(parents=True)
        self.stores = MemoryStores(self.ws)
        folder = self.stores.project.dir
        folder.mkdir(parents=True)
        types = list(NoteType)
        names: list[str] = []
        for i in range(size):
            kind = types[i % len(types)]
            meta = NoteMeta(
                title=f"Note {i} about module {i % 97}",
                summary=f"what the code of module {i % 97} does, part {i}",
                type=kind,
                created="2025-01-01T00:00:00Z",
                updated="2025-01-01T00:00:00Z",
                source="manual",
            )
            name = f"{kind.value}_note-{i:05d}.md"
            (folder / name).write_bytes(
                dump_note(meta, f"Body of note {i}: a fact about module {i % 97}.\n" * 4)
            )
            names.append(name)
        self.stores.trust_project()
        self.stores.rebuild_indexes()
        self.pool: deque[str] = deque(names)
        self.batches = 0
        # The warm process: it has read the notes and the index, as the app's runtime has.
        self.stores.notes("project")
        self.stores.merged_index()

    def batch(self) -> str:
        """The next 50-op batch as a model would write it (JSON), naming notes that exist now."""
        k = self.batches
        self.batches += 1
        ops: list[dict[str, Any]] = []
        for j in range(CREATES):
            ops.append(
                {
                    "action": "create",
                    "level": "project",
                    "type": "project_knowledge",
                    "title": f"Batch {k} finding {j}",
                    "summary": f"what batch {k} learnt, item {j}",
                    "content": f"Batch {k}, item {j}: the build needs step {j} first.\n" * 3,
                }
            )
        for _ in range(UPDATES):
            name = self.pool.popleft()
            self.pool.append(name)
            ops.append(
                {
                    "action": "update",
                    "level": "project",
                    "filename": name,
                    "content": f"Updated by batch {k}.\n",
                }
            )
        for _ in range(DELETES):
            ops.append({"action": "delete", "level": "project", "filename": self.pool.popleft()})
        return json.dumps(ops)

    def created(self, names: list[str]) -> None:
        if len(names) != CREATES:
            raise RuntimeError(f"{self.size} notes: {len(names)} of {CREATES} creates applied")
        self.pool.extend(names)

    def cold_apply(self, file: Path) -> float:
        file.write_text(self.batch(), encoding="utf-8")
        seconds, out = _cli(self.ws, "apply", str(file))
        self.created(
            [line.split("/", 1)[1] for line in out.splitlines() if line.startswith("create project/")]
        )
        return seconds

    def warm_apply(self) -> float:
        from memory.constants import MANUAL_SOURCE
        from memory.extract.parser import parse_and_validate

        parsed = parse_and_validate(self.batch())
        t = time.perf_counter()
        result = self.stores.apply(parsed.ops, source=MANUAL_SOURCE, rejected=parsed.rejected, label="bench")
        seconds = time.perf_counter() - t
        if result.rejected or result.conflicts:
            raise RuntimeError(
                f"{self.size} notes: warm batch refused: {(result.rejected + result.conflicts)[:1]}"
            )
        self.created([a.filename for a in result.applied if a.action == "create"])
        return seconds


def _ms(values: dict[int, float]) -> str:
    return " / ".join(f"{1000 * values[n]:.0f}" for n in SIZES) + " ms"


def _s(values: dict[int, float]) -> str:
    return " / ".join(f"{values[n]:.2f}" for n in SIZES) + " s"


def figures(runs: int = 5) -> list[Figure]:
    """How the stores scale: a batch's apply, `memory index` and `memory list` at each size."""
    timings: dict[str, dict[int, list[float]]] = {
        k: {n: [] for n in SIZES} for k in ("cold", "warm", "index", "list")
    }
    with private_env() as root:
        t = time.perf_counter()
        stores = [_Store(root, n) for n in SIZES]
        _log(f"stores of {', '.join(map(str, SIZES))} notes written in {time.perf_counter() - t:.1f} s")
        for run in range(runs):
            for st in stores:
                n = st.size
                timings["cold"][n].append(st.cold_apply(root / f"batch-{n}-{run}.json"))
                timings["warm"][n].append(st.warm_apply())
                timings["index"][n].append(_cli(st.ws, "index")[0])
                timings["list"][n].append(_cli(st.ws, "list")[0])
            _log(f"run {run + 1}/{runs} done")
        for st in stores:
            left = len(st.stores.project.note_names())
            if left != st.size:
                raise RuntimeError(f"the store of {st.size} notes has {left} after the batches")
    m = {k: {n: median(v) for n, v in by.items()} for k, by in timings.items()}
    small, big = SIZES[0], SIZES[-1]
    sizes = " / ".join(f"{n:,}" for n in SIZES)
    return [
        at_most(
            "store scaling: warm apply, 10,000 / 100 notes",
            m["warm"][big] / m["warm"][small],
            5,
            "×",
            f"50-op batch in a process that read the store (MemoryStores.apply), medians of {runs}: "
            f"{_ms(m['warm'])} at {sizes} notes",
        ),
        Figure(
            "store scaling: cold apply at 10,000 notes",
            m["cold"][big],
            "s",
            "reported",
            True,
            f"a new `memory apply` process, medians of {runs}: {_s(m['cold'])} at {sizes} notes "
            "(0.77 / 1.98 / 12.2 s when first measured)",
        ),
        at_most(
            "store scaling: cold memory list at 10,000 notes",
            m["list"][big],
            2,
            "s",
            f"a new `memory list` process, medians of {runs}: {_s(m['list'])} at {sizes} notes",
        ),
        at_most(
            "store scaling: memory index, 10,000 / 100 notes",
            m["index"][big] / m["index"][small],
            2,
            "×",
            f"a new `memory index` process, medians of {runs}: {_s(m['index'])} at {sizes} notes",
        ),
    ]
