"""`make bench`, figure 1: answer latency does not depend on memory.

Three figures, each the median (the app's: a trimmed mean) over runs of a variant with the memory
model taking 4 s to answer every extraction request (its reply held at the fake by a gate that
opens after 4 s) against the same variant with memory off, measured side by side (A B A B …)
against the fake Messages API:

* app: the headless App (``PseudoClaudeApp.run_test``), from Enter to the answer's last word on
  the screen (what the compositor draws). Several turns per app, 0.3 s apart (reading, typing),
  so the memory job of turn n has its request in flight while turn n+1 streams. The memory
  worker is the app's default, a child process (``pseudoclaude memory worker``), pointed at the
  fake through the environment it inherits (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY,
  PSEUDOCLAUDE_HOME). With memory on, the measured turns start once the worker has sent the
  warm-up turn's extraction request: the child's start-up (importing the SDK, a second or more
  of CPU) is once per app, not per turn, and is not what this figure measures.
  The same figure again with a neighbour: another process keeps one of the two cores busy while
  each app runs (a build or a test run beside the app), so the App, the fake and the memory
  worker share the other one.
* print mode: ``pseudoclaude -C ws --continue -p … --memory-wait 0`` run in this process
  (``app.cli.main``, the SDK already imported), from the call to the answer's last byte written
  to stdout — not the end of the process, which waits for memory after the answer by design.
  ``--memory-wait 0`` ends each run right after its answer; the job it leaves is applied before
  the next run (untimed, ``memory flush``), as a run that waited for it would have.

    python -m tests.bench fig_latency --no-readme
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, at_most, median, private_env, trimmed_mean
from tests.support.fakeapi import FakeAnthropic, Gate, Reply, text

MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"
MEMORY_SECONDS = 4.0  # how long the slow memory model takes to answer each request
TURNS_PER_APP = 6  # measured turns per app run (after one unmeasured warm-up turn)
THINK_SECONDS = 0.3  # between a turn's end and the next Enter, in the app
PRINT_PAIRS = 8  # print-mode runs of each variant per ``runs`` (they are short)
# Apps of each variant in the app figure. One app's turns share its start-up and its screen's
# frame phase: app medians of one variant spread over 42-56 ms while memory costs 0-3 ms, so five
# apps gave anything from 0.85x to 1.24x for the same code; twelve give it within about 3 %.
APP_RUNS = 12
SIZE = (120, 40)
LIMIT = 1.05


def answer(turn: int) -> str:
    """A same-size answer of 60 words ending with a marker unique to the turn (its last token)."""
    body = " ".join(f"word{(turn * 7 + i) % 1000:03d}" for i in range(59))
    return f"{body} END{turn:04d}"


def marker(turn: int) -> str:
    return f"END{turn:04d}"


class SlowMemory:
    """Answers every memory-model request ``[]`` after MEMORY_SECONDS (a fresh gate nobody
    releases: its timeout opens it); at once while ``slow`` is off (the untimed clean-ups)."""

    def __init__(self, server: FakeAnthropic) -> None:
        self.slow = True
        server.respond(MEMORY_MODEL, lambda body: True, self.reply)

    def reply(self, body: Any) -> Reply:
        return text("[]").held(before=Gate("memory", timeout=MEMORY_SECONDS)) if self.slow else text("[]")


def workspace(root: Path, name: str) -> Path:
    ws = root / name
    (ws / ".git").mkdir(parents=True)
    (ws / "README.md").write_text("# demo\n")
    return ws


# -- the app ---------------------------------------------------------------------------------------


def _arrived(app: Any, needle: str) -> bool:
    """The word reached the App (the last answer block received it): cheap, polled first."""
    blocks = app.chat.blocks
    return bool(blocks) and needle in str(getattr(blocks[-1], "text", ""))


def _on_screen(app: Any, needle: str) -> bool:
    return any(needle in strip.text for strip in app.screen._compositor.render_strips())


def _asked_about(server: FakeAnthropic, since: int, needle: str) -> bool:
    """A memory-model request after the first ``since`` carries ``needle`` (a turn's words)."""
    return any(needle in json.dumps(r.body) for r in server.requests_for(MEMORY_MODEL)[since:])


async def _poll(what: str, predicate: Any, deadline: float) -> None:
    # Not Pilot.pause (which waits for idle in 20 ms steps): a 2 ms resolution.
    while not predicate():
        if time.perf_counter() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


async def _app_run(server: FakeAnthropic, ws: Path, memory: str, first_turn: int) -> list[float]:
    """One app on ``ws`` with memory ``memory``: a warm-up turn, then TURNS_PER_APP measured
    turns; the seconds from Enter to each answer's last word on the screen."""
    from textual import events

    from app.agent.config.settings import load_settings
    from tests.tui.conftest import build_app, wait_ready, wait_until

    app = build_app(load_settings({"memory_mode": memory}), ws.resolve())
    seconds: list[float] = []
    asked = len(server.requests_for(MEMORY_MODEL))
    # The frame that shows the last word is timed as it is written (App._display), not when a
    # poll notices it: work the loop does right after that frame (the turn's memory job) would
    # otherwise count as latency although the person already sees the word.
    painted: dict[str, float] = {}
    wanted: list[str] = []
    display = app._display

    def timed_display(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        now = time.perf_counter()
        if wanted and _arrived(app, wanted[0]) and _on_screen(app, wanted[0]):
            painted[wanted.pop()] = now

    app._display = timed_display  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        for k in range(TURNS_PER_APP + 1):
            turn = first_turn + k
            server.script(MODEL, text(answer(turn)))
            await wait_until(pilot, lambda: app.prompt.disabled_reason is None, 20, "the prompt to be free")
            # A person reads the answer and types the next prompt: the job of the turn before has
            # started (its request is in flight, held) by the time Enter is pressed.
            await asyncio.sleep(THINK_SECONDS)
            app.prompt.focus()
            app.prompt.text = f"question {turn}"
            app.prompt.move_cursor(app.prompt.document.end)
            t0 = time.perf_counter()
            # Enter as the terminal driver delivers it (Pilot.press would also wait for the screen).
            app._driver.send_message(events.Key("enter", "\r"))
            end = marker(turn)
            wanted[:] = [end]  # looked for in each frame only once it has arrived (not free)
            await _poll(f"turn {turn}: the last word on screen", lambda end=end: end in painted, t0 + 20)
            if k:
                seconds.append(painted[end] - t0)
            elif memory != "off":  # the worker is up: it asked about the warm-up turn
                await _poll(
                    "the memory worker's request about the warm-up turn",
                    lambda end=end: _asked_about(server, asked, end),
                    time.perf_counter() + 60,
                )
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, 20, "the last turn to end")
        await app.bridge.close(0.0)
    return seconds


@contextlib.contextmanager
def neighbour(busy: bool) -> Iterator[None]:
    """A process that keeps one core busy for the block's length (another program on a 2-core
    machine: a build, a test run), when ``busy``."""
    if not busy:
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        hog.kill()
        hog.wait(10)


def app_figure(root: Path, server: FakeAnthropic, runs: int, *, busy: bool = False) -> Figure:
    tag = "-busy" if busy else ""
    slow_ws, off_ws = workspace(root, f"app-slow{tag}"), workspace(root, f"app-off{tag}")
    turns: dict[str, list[float]] = {"auto": [], "off": []}
    turn = 0
    for r in range(runs):
        for memory, ws in (("auto", slow_ws), ("off", off_ws)):
            # Untimed: the earlier apps' garbage goes now, not in a collection during a turn.
            gc.collect()
            with neighbour(busy):
                seconds = asyncio.run(_app_run(server, ws, memory, turn))
            turn += TURNS_PER_APP + 1
            turns[memory] += seconds
            print(
                f"  app run {r + 1} memory {memory}: {', '.join(f'{1000 * s:.0f}' for s in seconds)} ms",
                file=sys.stderr,
                flush=True,
            )
    # Turns end on the screen's frames: the median of a variant jumps by a frame on a few turns.
    slow, off = trimmed_mean(turns["auto"]), trimmed_mean(turns["off"])
    extractions = len(server.requests_for(MEMORY_MODEL))
    name = "answer latency, app: memory slow / off" + (", a neighbour using a core" if busy else "")
    busy_note = "; another process keeps one of the 2 cores busy all along" if busy else ""
    return at_most(
        name,
        slow / off,
        LIMIT,
        "×",
        f"Enter to the answer's last word on screen, 10 % trimmed means of {runs} apps × "
        f"{TURNS_PER_APP} turns "
        f"({THINK_SECONDS:g} s apart): {1000 * slow:.0f} ms vs {1000 * off:.0f} ms; {extractions} "
        f"extraction requests, each answered after {MEMORY_SECONDS:g} s{busy_note}",
    )


# -- print mode ------------------------------------------------------------------------------------


class _Stdout(io.StringIO):
    """stdout that notes when ``needle`` was first written (the answer's last byte)."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle = needle
        self.at: float | None = None

    def write(self, s: str) -> int:
        n = super().write(s)
        if self.at is None and self.needle in self.getvalue()[-len(self.needle) - len(s) :]:
            self.at = time.perf_counter()
        return n


def _print_run(ws: Path, memory: str, turn: int) -> float:
    from app.cli.main import main

    out, err = _Stdout(marker(turn)), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            ["-C", str(ws), "--continue", "-p", f"question {turn}", "--memory", memory, "--memory-wait", "0"]
        )
    if code != 0 or out.at is None or out.getvalue() != answer(turn) + "\n":
        raise AssertionError(
            f"print mode, turn {turn}: exit {code}, stdout {out.getvalue()!r}, "
            f"stderr {err.getvalue()[-500:]!r}"
        )
    return out.at - t0


def _flush(ws: Path, memory: SlowMemory) -> None:
    """`pseudoclaude memory flush` with a prompt memory model: the job the run left is applied."""
    from app.cli.main import main

    memory.slow = False
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(["-C", str(ws), "memory", "flush"])
    finally:
        memory.slow = True
    if code != 0:
        raise AssertionError(f"memory flush in {ws} failed: exit {code}")


def print_figure(root: Path, server: FakeAnthropic, memory: SlowMemory, runs: int) -> Figure:
    slow_ws, off_ws = workspace(root, "print-slow"), workspace(root, "print-off")
    before = len(server.requests_for(MEMORY_MODEL))
    seconds: dict[str, list[float]] = {"auto": [], "off": []}
    turn = 10_000
    # One unmeasured run of each first: the sessions exist before anything is timed.
    for r in range(-1, PRINT_PAIRS * runs):
        for mode, ws in (("auto", slow_ws), ("off", off_ws)):
            turn += 1
            server.script(MODEL, text(answer(turn)))
            s = _print_run(ws, mode, turn)
            if r >= 0:
                seconds[mode].append(s)
            if mode == "auto":
                # Untimed: the job this run left (--memory-wait 0) is applied, as a run that waits
                # for it would have; else every later run would start with more jobs spooled.
                _flush(ws, memory)
    slow, off = median(seconds["auto"]), median(seconds["off"])
    extractions = len(server.requests_for(MEMORY_MODEL)) - before
    print(
        f"  print mode: slow {', '.join(f'{1000 * s:.0f}' for s in seconds['auto'])} ms; "
        f"off {', '.join(f'{1000 * s:.0f}' for s in seconds['off'])} ms",
        file=sys.stderr,
        flush=True,
    )
    return at_most(
        "answer latency, print mode: memory slow / off",
        slow / off,
        LIMIT,
        "×",
        f"main() to the answer's last byte on stdout (in-process, SDK imported), medians of "
        f"{PRINT_PAIRS * runs} runs: {1000 * slow:.0f} ms vs {1000 * off:.0f} ms; memory model "
        f"answering in {MEMORY_SECONDS:g} s (asked {extractions} times, never before an answer was out)",
    )


def figures(runs: int = 5) -> list[Figure]:
    # The app's default worker, said outright (print mode keeps its in-process worker).
    with private_env(PSEUDOCLAUDE_MEMORY_WORKER="process") as root, FakeAnthropic() as server:
        os.environ.update(server.env())
        memory = SlowMemory(server)
        # The SDK and the App are imported once, before anything is timed.
        import anthropic  # noqa: F401

        import app.tui.app  # noqa: F401

        apps = max(runs, APP_RUNS)
        figs = [
            app_figure(root, server, apps),
            app_figure(root, server, apps, busy=True),
            print_figure(root, server, memory, runs),
        ]
        if server.errors:
            raise AssertionError(f"the fake failed: {server.errors[0]}")
        return figs
