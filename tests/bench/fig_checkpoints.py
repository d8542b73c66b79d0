"""`make bench`: what checkpointing adds to one edit of a 100 KB file.

The checkpoint calls an ``edit_file`` makes (``before_write`` then ``after_write``, through the
Recorder the runtime gives the tools), timed around a real edit of a 100 KB text file, each edit
in a new turn: the worst case, where the file's bytes before the turn are kept too (the edits
after it in the same turn keep only the new bytes). The edit itself (the tool's own write and
fsync) is measured apart and not counted. Median of 200 edits.

    python -m tests.bench fig_checkpoints --no-readme
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.bench.common import Figure, at_most, median, private_env

EDITS = 200
SIZE = 100 * 1024
LIMIT_MS = 5.0


def _text(i: int) -> str:
    line = "def handler_{n}(request):  # a line of an ordinary source file\n"
    out, n = [], 0
    while sum(map(len, out)) < SIZE:
        out.append(line.format(n=n))
        n += 1
    out[len(out) // 2] = f"MARKER = {i}\n"
    return "".join(out)


def measure(edits: int = EDITS) -> tuple[list[float], list[float], int]:
    """(checkpoint seconds per edit, the edit's own seconds, blobs kept)."""
    from app.agent.tools.base import ToolContext
    from app.agent.tools.files import edit_file
    from app.agent.undo.checkpoints import CheckpointStore, Recorder

    with private_env() as root:
        ws = root / "ws"
        ws.mkdir()
        path = ws / "big.py"
        path.write_text(_text(0))
        turn = [0]
        cp = CheckpointStore().session("bench-session", ws)
        recorder = Recorder(cp, lambda: turn[0])
        ctx = ToolContext(workspace=ws)
        real = str(path.resolve())
        cost: list[float] = []
        own: list[float] = []
        for i in range(1, edits + 1):
            turn[0] = i
            t0 = time.perf_counter()
            recorder.before_write(real)
            t1 = time.perf_counter()
            edit_file(ctx, "big.py", f"MARKER = {i - 1}\n", f"MARKER = {i}\n")
            t2 = time.perf_counter()
            recorder.after_write(real, path.read_bytes())
            t3 = time.perf_counter()
            # The file's bytes are read again for after_write here; the tool passes the bytes it
            # wrote, so that read is taken out of the figure.
            t4 = time.perf_counter()
            path.read_bytes()
            t5 = time.perf_counter()
            cost.append((t1 - t0) + (t3 - t2) - (t5 - t4))
            own.append(t2 - t1)
        blobs = len(list(Path(cp.blobs).iterdir()))
    return cost, own, blobs


def figures(runs: int = 5) -> list[Figure]:
    cost, own, blobs = measure()
    ms = median(cost) * 1000
    return [
        at_most(
            "checkpoint cost per edit (100 KB file)",
            ms,
            LIMIT_MS,
            "ms",
            f"median of {len(cost)} edits, each in a new turn (bytes before and after kept); the edit "
            f"itself {median(own) * 1000:.2f} ms; {blobs} blobs for {len(cost)} versions",
        )
    ]


if __name__ == "__main__":
    for f in figures():
        print(f.line())
