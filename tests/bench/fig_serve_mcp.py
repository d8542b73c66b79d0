"""`make bench`: ``pseudoclaude memory serve-mcp``, the memory served to other agents over MCP.

* serve-mcp start-up: a new ``python -m app.cli.main -C ws memory serve-mcp`` process (a git
  workspace with no memory) timed from the spawn to its answer to ``initialize``, written on its
  stdin at once as a client does, less the same spawn of ``python -c "import mcp.server.lowlevel,
  mcp.server.stdio; print()"`` up to its line: the interpreter and the MCP SDK's own import, which
  the server cannot do without. What is left is the command's own start-up, target ≤ 0.5 s. The
  whole time and the SDK's share (less ``python -c "print()"`` the same way) are in the detail.
  Both are timed to their first output, never to their exit (an interpreter's teardown of the
  SDK's objects is no part of a start-up).
* serve-mcp index at 10,000 cards: the first ``memory_index`` call of a new server whose trusted
  project store holds 10,000 cards (tests/bench/bigstore.py), against what ``memory index``
  spends on the cards (its process at 10,000 cards less its process on the empty workspace);
  target ≤ 1.5×. The later calls of the same server are reported beside it.

The messages are written and read as JSON lines on the process's pipes (no client library in
the timing). The variants alternate, medians of ``runs``; our modules are byte-compiled first, as
an installed package is (see fig_startup).

    python -m tests.bench fig_serve_mcp --no-readme
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from tests.bench.bigstore import make_big_store
from tests.bench.common import Figure, at_most, median, private_env
from tests.bench.fig_startup import byte_compile

ROOT = Path(__file__).resolve().parents[2]
CARDS = 10_000
LATER_CALLS = 4
START_UP_TARGET_S = 0.5
INDEX_TARGET = 1.5
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"},
}
SDK_IMPORT = "import mcp.server.lowlevel, mcp.server.stdio; print(flush=True)"
BARE = "print(flush=True)"


def _log(msg: str) -> None:
    print(f"  fig_serve_mcp: {msg}", file=sys.stderr, flush=True)


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    stdin.flush()


def _answer(stdout: IO[bytes], want: int) -> dict[str, Any]:
    """The response to request ``want`` (notifications the server sends first are skipped)."""
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the server ended before answering request {want}")
        message = json.loads(line)
        if message.get("id") == want:
            if "result" not in message:
                raise RuntimeError(f"request {want} failed: {message.get('error')}")
            return dict(message["result"])


class _Server:
    """One ``memory serve-mcp`` process, timed from its spawn to its answer to initialize."""

    def __init__(self, ws: Path) -> None:
        cmd = [sys.executable, "-m", "app.cli.main", "-C", str(ws), "memory", "serve-mcp"]
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=dict(os.environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        _send(self.stdin, {"id": 1, "method": "initialize", "params": INITIALIZE})
        _answer(self.stdout, 1)
        self.start_up = time.perf_counter() - started
        _send(self.stdin, {"method": "notifications/initialized"})
        self.next_id = 2

    def index_call(self) -> tuple[float, str]:
        """Seconds of one ``memory_index`` call, and its text."""
        rid, self.next_id = self.next_id, self.next_id + 1
        t = time.perf_counter()
        _send(
            self.stdin,
            {"id": rid, "method": "tools/call", "params": {"name": "memory_index", "arguments": {}}},
        )
        result = _answer(self.stdout, rid)
        return time.perf_counter() - t, str(result["content"][0]["text"])

    def close(self) -> None:
        self.stdin.close()  # the end of its input ends the server
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _first_line(code: str) -> float:
    """Seconds from the spawn of ``python -c code`` to its first line of output."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    seconds = time.perf_counter() - t
    proc.wait(timeout=60)
    if line != b"\n":
        raise RuntimeError(f"python -c {code!r} printed {line!r}")
    return seconds


def _process(*args: str) -> float:
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=dict(os.environ), capture_output=True, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.decode()[-300:]}")
    return time.perf_counter() - t


def figures(runs: int = 5) -> list[Figure]:
    from tests.support.memtools import trust_workspace

    byte_compile()
    times: dict[str, list[float]] = {
        k: [] for k in ("serve", "bare", "sdk", "first", "later", "cli_big", "cli_empty")
    }
    with private_env() as root:
        empty = root / "empty"
        (empty / ".git").mkdir(parents=True)
        big = root / "big"
        make_big_store(big, CARDS)
        trust_workspace(big)
        # Once before timing: the card cache under the home is built as any first use builds it.
        _process("-m", "app.cli.main", "-C", str(big), "memory", "index")
        for run in range(runs):
            server = _Server(empty)
            server.close()
            times["serve"].append(server.start_up)
            times["bare"].append(_first_line(BARE))
            times["sdk"].append(_first_line(SDK_IMPORT))
            server = _Server(big)
            try:
                first, text = server.index_call()
                if "## Project Memory" not in text:
                    raise RuntimeError(f"the served index holds no project card: {text[:200]!r}")
                times["first"].append(first)
                times["later"].extend(server.index_call()[0] for _ in range(LATER_CALLS))
            finally:
                server.close()
            times["cli_big"].append(_process("-m", "app.cli.main", "-C", str(big), "memory", "index"))
            times["cli_empty"].append(_process("-m", "app.cli.main", "-C", str(empty), "memory", "index"))
            _log(f"run {run + 1}/{runs}: start-up {server.start_up:.3f} s, first index {first:.3f} s")
    m = {k: median(v) for k, v in times.items()}
    sdk = m["sdk"] - m["bare"]
    own = m["serve"] - m["sdk"]
    cards = max(m["cli_big"] - m["cli_empty"], 1e-3)
    return [
        at_most(
            "serve-mcp start-up",
            own,
            START_UP_TARGET_S,
            "s",
            f"spawn to the answer to initialize {m['serve']:.3f} s, less the interpreter "
            f"({m['bare']:.3f} s) and "
            f"the MCP SDK's own import ({sdk:.3f} s); medians of {runs}",
        ),
        at_most(
            f"serve-mcp index at {CARDS:,} cards / memory index",
            m["first"] / cards,
            INDEX_TARGET,
            "×",
            f"a new server's first memory_index call {m['first']:.3f} s "
            f"(later calls {m['later']:.3f} s) against `memory index`'s work on the cards {cards:.3f} s "
            f"({m['cli_big']:.3f} s less {m['cli_empty']:.3f} s "
            f"on an empty workspace); medians of {runs}",
        ),
    ]
