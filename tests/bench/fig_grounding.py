"""`make bench`: checking grounded cards for staleness.

A git workspace of 300 committed files and a trusted project store of 1,000 cards, each citing
3 of those files with the ids the app records (written directly with ``dump_note``: fast, and
the same bytes a transaction writes). Then:

* warm: ``MemoryStores.staleness()`` called again and again in one process (the app's runtime
  checks on a timer and after changes); the median of ``runs`` × 3 calls after a first one.
  Target ≤ 100 ms. Beside it, how many files those warm calls hashed (the content ids are cached
  by stat key: 0);
* cold: the first ``staleness()`` of a fresh process (``MemoryStores`` built there, every cited
  file hashed once), timed inside that process; the median of ``runs`` processes. Reported,
  with a generous target.

    python -m tests.bench fig_grounding --no-readme
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.common import Figure, at_most, median, private_env

ROOT = Path(__file__).resolve().parents[2]
FILES, CARDS, CITES = 300, 1_000, 3
WARM_TARGET_MS = 100.0
COLD_TARGET_S = 5.0

_COLD = """
import json, sys, time
from memory.store.stores import MemoryStores
from memory.grounding.staleness import shared_ids
t = time.perf_counter()
checks = MemoryStores(sys.argv[1]).staleness()
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "cards": len(checks), "stale": sum(c.stale for c in checks.values()),
                  "reads": shared_ids().reads}))
"""


def _log(msg: str) -> None:
    print(f"  fig_grounding: {msg}", file=sys.stderr, flush=True)


def _git(ws: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-C",
            str(ws),
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def _workspace(root: Path) -> Path:
    """The workspace and its store: FILES tracked source files, CARDS cards citing CITES each."""
    from memory.constants import NoteType
    from memory.grounding.hashing import git_blob_id
    from memory.model import Cite, NoteMeta
    from memory.store.frontmatter import dump_note
    from memory.store.stores import MemoryStores

    ws = Path(os.path.realpath(root)) / "ws"
    ws.mkdir()
    _git(ws, "init", "-q")
    rels: list[str] = []
    for i in range(FILES):
        rel = f"pkg{i % 20:02d}/mod_{i:03d}.py"
        (ws / rel).parent.mkdir(exist_ok=True)
        (ws / rel).write_text("".join(f"def f_{i}_{j}(x):\n    return x + {j}\n" for j in range(40)))
        rels.append(rel)
    _git(ws, "add", ".")
    _git(ws, "commit", "-q", "-m", "sources")
    blobs = {rel: git_blob_id((ws / rel).read_bytes()) for rel in rels}
    stores = MemoryStores(ws)
    folder = stores.project.dir
    folder.mkdir(parents=True)
    for n in range(CARDS):
        cited = [rels[(n * 7 + k * 101) % FILES] for k in range(CITES)]
        meta = NoteMeta(
            title=f"Card {n} about {cited[0]}",
            summary=f"what {cited[0]} does, part {n}",
            type=NoteType.PROJECT_KNOWLEDGE,
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            source="manual",
            cites=tuple(Cite(path=r, lines=f"{k + 1}-{k + 20}", blob=blobs[r]) for k, r in enumerate(cited)),
        )
        (folder / f"project_knowledge_card-{n:04d}.md").write_bytes(
            dump_note(meta, f"Card {n}: {cited[0]} adds.\n")
        )
    stores.trust_project()
    stores.rebuild_indexes()
    return ws


def _cold(ws: Path) -> dict[str, float]:
    """The first check of a fresh process, timed there."""
    proc = subprocess.run(
        [sys.executable, "-c", _COLD, str(ws)],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the cold check failed: {proc.stderr.strip()[-300:]}")
    out: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _expect_fresh(cards: float, stale: float, what: str) -> None:
    if cards != CARDS or stale:
        raise RuntimeError(f"{what}: {cards:.0f} cards checked, {stale:.0f} stale (expected {CARDS}, 0)")


def figures(runs: int = 5) -> list[Figure]:
    from memory.grounding.staleness import shared_ids
    from memory.store.stores import MemoryStores

    with private_env() as root:
        t = time.perf_counter()
        ws = _workspace(root)
        _log(f"{FILES} files and {CARDS} cards written in {time.perf_counter() - t:.1f} s")
        cold: list[dict[str, float]] = []
        warm: list[float] = []
        warm_reads = 0
        first = 0.0
        for run in range(runs):
            # Side by side: a cold process, then warm calls in this one.
            cold.append(_cold(ws))
            _expect_fresh(cold[-1]["cards"], cold[-1]["stale"], "cold")
            if run == 0:
                stores = MemoryStores(ws)
                t = time.perf_counter()
                checks = stores.staleness()
                first = time.perf_counter() - t
                _expect_fresh(len(checks), sum(c.stale for c in checks.values()), "first in-process")
            reads = shared_ids().reads
            for _ in range(3):
                t = time.perf_counter()
                checks = stores.staleness()
                warm.append(time.perf_counter() - t)
            warm_reads += shared_ids().reads - reads
            _expect_fresh(len(checks), sum(c.stale for c in checks.values()), "warm")
            _log(
                f"run {run + 1}/{runs}: cold {cold[-1]['seconds'] * 1000:.0f} ms, "
                f"warm {warm[-1] * 1000:.1f} ms"
            )
    warm_ms = 1000 * median(warm)
    cold_s = median([c["seconds"] for c in cold])
    cites = f"{CARDS:,} cards × {CITES} cited files ({FILES} distinct, tracked in git)"
    return [
        at_most(
            "staleness check, 1,000 cards × 3 cited files, warm",
            warm_ms,
            WARM_TARGET_MS,
            "ms",
            f"MemoryStores.staleness() again in one process, median of {len(warm)} calls; {cites}; "
            f"max {1000 * max(warm):.1f} ms",
        ),
        at_most(
            "staleness check, files read by a warm check",
            warm_reads,
            0,
            "",
            f"files hashed in all {len(warm)} warm calls (content ids cached by stat key)",
        ),
        at_most(
            "staleness check, 1,000 cards × 3 cited files, cold (first check in a process)",
            cold_s,
            COLD_TARGET_S,
            "s",
            f"the first staleness() of a fresh process, timed inside it, median of {runs} processes "
            f"(each hashed {median([c['reads'] for c in cold]):.0f} files); first in this process "
            f"{1000 * first:.0f} ms",
        ),
    ]
