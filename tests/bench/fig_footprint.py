"""`make bench`, figure 7: the app's resident memory after 500 streamed turns against
after 10 — old chat blocks pruned, nothing accumulating, compaction included.

The headless app (``PseudoClaudeApp.run_test``, 100×30, so the memory panel is shown) runs 500
turns in this process, with memory on (``--memory auto``: every turn's extraction job goes
through the spool, the worker and the panel; the memory model answers "no changes"). Each
answer is about 1 KB streamed in 10 chunks; the context window is 30,000 tokens, so the
conversation is compacted every few dozen turns (the summaries are answered too).

The fake Messages API runs in a child process (``python -m tests.bench.fig_footprint --serve``):
it records every request body, and those records must not count as the app's memory.

Resident memory is VmRSS from /proc/self/status after ``gc.collect()``; each point is the median
of five samples (turns 6–10 and 496–500).

    python -m tests.bench fig_footprint --no-readme
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, at_most, median, private_env

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"
TURNS = 500
WINDOW = 30_000
EARLY = range(6, 11)  # turns whose samples make the "after 10 turns" point
LATE = range(TURNS - 4, TURNS + 1)
TURN_TIMEOUT = 30.0
_TURN_RE = re.compile(r"turn (\d+): ")


def _log(msg: str) -> None:
    print(f"  fig_footprint: {msg}", file=sys.stderr, flush=True)


def rss_mb() -> float:
    """This process's resident memory (VmRSS) in MiB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def prompt(turn: int) -> str:
    return f"turn {turn}: " + "explain how this part of the build works, step by step. " * 8


def answer(turn: int) -> str:
    words = " ".join(f"step{i}" for i in range(140))
    return f"Turn {turn} answer. The build runs these steps: {words}."


# -- the fake API's process ----------------------------------------------------------------------


def _serve() -> None:
    """Run the fake API until stdin closes; print its base URL first and its counts last."""
    from tests.support.fakeapi import FakeAnthropic, text

    counts = {"answers": 0, "summaries": 0, "extractions": 0}

    def main_reply(body: Any) -> Any:
        if "tools" not in body:  # a summary request (app/agent/turn/runner.py asks without tools)
            counts["summaries"] += 1
            return text("## Summary\nThe user asked how the build works, turn after turn. Nothing is open.")
        counts["answers"] += 1
        last = body["messages"][-1]["content"]
        said = last if isinstance(last, str) else " ".join(str(b.get("text", "")) for b in last)
        found = _TURN_RE.findall(said)
        reply = answer(int(found[-1]) if found else 0)
        return text(reply, chunk_size=len(reply) // 10 + 1)

    def memory_reply(body: Any) -> Any:
        counts["extractions"] += 1
        return text("[]")

    with FakeAnthropic(context_window=WINDOW) as server:
        server.respond(MODEL, lambda body: True, main_reply)
        server.respond(MEMORY_MODEL, lambda body: True, memory_reply)
        print(server.base_url, flush=True)
        # A line on stdin after each turn: drop the recorded requests (this process only serves;
        # FakeAnthropic.reset would also drop the responders while a request may be arriving).
        while sys.stdin.readline() != "":
            with server._lock:
                server._requests.clear()
        print(json.dumps({**counts, "errors": len(server.errors)}), flush=True)


class _Server:
    """The child process serving the fake API."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.fig_footprint", "--serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            self.proc.kill()
            raise RuntimeError(f"the fake API did not start: {self.base_url!r}")

    def env(self) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": "test",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def forget(self) -> None:
        """Have the server drop its recorded requests (one line on its stdin)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def close(self) -> dict[str, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            out = self.proc.stdout.read()
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return json.loads(out.strip().splitlines()[-1]) if out.strip() else {}


# -- the app ---------------------------------------------------------------------------------------


async def _session(ws: Path, server: _Server) -> tuple[dict[int, float], dict[int, int]]:
    """Run the turns; RSS (MiB, after gc) at the sampled turns, and how many rendered lines
    (Textual ``Strip`` objects) are alive after turns 10 and 500."""
    from textual.strip import Strip

    from app.agent.config.settings import load_settings
    from tests.tui.conftest import build_app, wait_ready
    from widgets.chat.answer_block import AnswerBlock

    samples: dict[int, float] = {}
    strips: dict[int, int] = {}
    app = build_app(load_settings({"memory_mode": "auto", "context_window": WINDOW}), ws)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_ready(pilot)
            loop = asyncio.get_running_loop()

            async def until(predicate: Any, what: str) -> None:
                # Polled with sleeps, not pilot.pause(): Pilot waits on every widget's queue, and
                # a block pruned meanwhile never answers it.
                deadline = loop.time() + TURN_TIMEOUT
                while not predicate():
                    if not app.is_running:
                        # A handler let an exception (a CancelledError) end the app's message loop.
                        raise RuntimeError(f"the app stopped running while waiting for {what}")
                    if loop.time() > deadline:
                        raise RuntimeError(f"timed out after {TURN_TIMEOUT:g} s waiting for {what}")
                    await asyncio.sleep(0.005)

            for turn in range(1, TURNS + 1):
                await until(lambda: app.prompt.disabled_reason is None, f"the prompt before turn {turn}")
                app.prompt.text = prompt(turn)
                if not app.prompt.submit():
                    raise RuntimeError(f"turn {turn}: the prompt did not send")
                want = answer(turn)

                def answered(want: str = want) -> bool:
                    if app.prompt.disabled_reason is not None:
                        return False  # the turn is still running
                    return any(isinstance(b, AnswerBlock) and b.text == want for b in app.chat.blocks[-3:])

                await until(answered, f"turn {turn}'s answer and its end")
                server.forget()
                if turn in EARLY or turn in LATE or turn % 100 == 0:
                    gc.collect()
                    samples[turn] = rss_mb()
                if turn in (EARLY[-1], TURNS):
                    strips[turn] = sum(1 for o in gc.get_objects() if isinstance(o, Strip))
                if turn % 100 == 0:
                    _log(f"{turn} turns, {samples[turn]:.0f} MiB, {len(app.chat.blocks)} blocks in the chat")
    finally:
        await app.bridge.close(0.0)
    return samples, strips


def figures(runs: int = 5) -> list[Figure]:
    """Resident memory after 500 turns against after 10 (one session; ``runs`` samples around each point)."""
    with private_env() as root:
        ws = root / "ws"
        (ws / ".git").mkdir(parents=True)
        server = _Server()
        try:
            os.environ.update(server.env())
            started = time.perf_counter()
            samples, strips = asyncio.run(_session(ws.resolve(), server))
            seconds = time.perf_counter() - started
        finally:
            counts = server.close()
    early = median([samples[t] for t in EARLY])
    late = median([samples[t] for t in LATE])
    path = ", ".join(f"{samples[t]:.0f}" for t in sorted(samples) if t % 100 == 0)
    if not counts.get("summaries"):
        raise RuntimeError(f"the session never compacted: {counts}")
    return [
        at_most(
            "memory footprint: RSS after 500 turns / after 10",
            late / early,
            1.5,
            "×",
            f"headless app, memory on, window {WINDOW:,} tokens: {late:.0f} MiB vs {early:.0f} MiB "
            f"(medians of 5 samples after gc; every 100 turns: {path} MiB); "
            f"{counts.get('summaries')} summary and {counts.get('extractions')} extraction requests; "
            f"Textual Strips alive {strips[EARLY[-1]]:,} → {strips[TURNS]:,}; {seconds:.0f} s",
        ),
    ]


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
