"""What the streaming figure's two apps share: the answer they receive (its text, its chunking, its
pace), the probe that times what reaches the screen, and the typing beside it.

The real App (fig_streaming) and the reference app (stream_reference) are measured with this one
code, so that the ratio of their CPU compares the apps and nothing else: the same Markdown text
cut into the same tokens, served by the fake Messages API over the same SSE wire, handed on at
the same pace, with the same keystrokes typed into a prompt while it streams, and the same clock
(process CPU from the first token to the first frame that shows the answer's last line).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.fakeapi import Reply, text

MODEL = "claude-sonnet-5-5"
TOKENS = 20_000
CHUNK = 4  # characters per streamed token (text_delta)
RATE = 2_000.0  # tokens per second
SIZE = (140, 40)


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each live thread of this process, by name (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for t in threading.enumerate():
        try:
            fields = Path(f"/proc/self/task/{t.native_id}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[f"{t.name}:{t.native_id}"] = (int(fields[11]) + int(fields[12])) / tick
    return out


def log(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


# -- the answer -------------------------------------------------------------------------------------


def final_line(turn: int) -> str:
    return f"That is all for answer {turn}: done."


def answer_text(turn: int, tokens: int = TOKENS) -> str:
    """``tokens`` × CHUNK characters of Markdown that reads like a long coding answer, ending with
    :func:`final_line` (so the last token completes it)."""
    end = "\n\n" + final_line(turn)
    target = tokens * CHUNK
    parts: list[str] = []
    size, i = 0, 0
    while size < target - len(end) - 1_500:
        i += 1
        code = "".join(
            f"    value_{j} = compute(step={i}, index={j})  # keep {j * i % 97}\n" for j in range(10)
        )
        section = (
            f"## Step {i}: configure module `mod_{i:03d}`\n\n"
            f"The module `mod_{i:03d}` reads its settings once, at start-up, and keeps them in a frozen "
            f"dataclass. Step {i} moves the parsing into a **single function** so that a test can call "
            f"it without a terminal; nothing else changes, and the old entry point stays as a thin "
            f"wrapper for the callers that still use it.\n\n"
            f"- parse the file with `load_settings()` (it returns defaults for missing keys)\n"
            f"- validate each value: a bad one is *one line* on stderr, not a traceback\n"
            f"- keep the result in `SETTINGS_{i}` and pass it down explicitly\n\n"
            f"```python\ndef step_{i}(config: dict[str, int]) -> int:\n{code}    return value_9\n```\n\n"
        )
        parts.append(section)
        size += len(section)
    body = "".join(parts)
    filler = "Finally, run the tests again and read the diff once more before committing. " * 40
    return body + filler[: target - len(body) - len(end)] + end


def answer_reply(turn: int, tokens: int = TOKENS) -> Reply:
    """The fake API's reply for answer ``turn``: its text in ``tokens`` text deltas of CHUNK
    characters. Both apps are sent this reply."""
    return text(answer_text(turn, tokens), chunk_size=CHUNK)


# -- the pace -----------------------------------------------------------------------------------------


class Paced:
    """Text deltas handed on at ``rate`` a second, counted and timed. The fake writes a reply as
    fast as the socket takes it, so the pace is set here, on the receiving side: each delta waits
    for its due time (a few pass at once when more than 4 ms are due, as a network delivers them).
    ``cpu_first`` is the process CPU when the first delta arrived; ``received``, the stream's
    deltas (checked by :func:`check_received`: both apps must get the same tokens)."""

    def __init__(self, rate: float = RATE) -> None:
        self.rate = rate
        self.on_delta: Callable[[int], None] | None = None
        self.first_yield = 0.0
        self.last_yield = 0.0
        self.cpu_first = 0.0
        self.threads_first: dict[str, float] = {}
        self.deltas = 0
        self.received: list[str] = []
        self._start: float | None = None
        self._n = 0

    def restart(self) -> None:
        """The next delta is the first of a new stream."""
        self._start, self._n, self.deltas, self.received = None, 0, 0, []

    async def due(self, delta: str) -> None:
        """Wait for the next delta's due time; count it."""
        now = time.perf_counter()
        if self._start is None:
            self._start = self.first_yield = now
            self.cpu_first = time.process_time()
            self.threads_first = thread_cpu()
        self._n += 1
        self.received.append(delta)
        ahead = self._start + (self._n - 1) / self.rate - now
        if ahead > 0.004:
            await asyncio.sleep(ahead)
        self.deltas = self._n
        self.last_yield = time.perf_counter()
        if self.on_delta is not None:
            self.on_delta(self._n)


# -- what the screen shows ------------------------------------------------------------------------------


class Probe:
    """Hooks on an App with a ``prompt`` (a TextArea): every frame (``App._display``) settles the
    keystrokes whose edit the prompt has applied, and looks for the answer's last line once the
    stream has handed on the last delta."""

    def __init__(self, app: Any, stream: Paced) -> None:
        self.app = app
        self.stream = stream
        self.frames = 0
        self.frame_waiters: list[asyncio.Future[float]] = []
        self.sent: list[float] = []  # send time of each keystroke of the current turn
        self.applied = 0  # prompt edits applied
        self.echoed = 0
        self.echo: list[tuple[float, float]] = []
        self.want_line: str | None = None  # look for this line once ``want_after`` deltas were yielded
        self.want_after = 0
        self.seen_at = 0.0
        self.seen_cpu = 0.0
        self.threads_end: dict[str, float] = {}
        display = app._display
        edit = app.prompt.edit

        def on_display(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is not None:
                self._frame(time.perf_counter())

        def on_edit(e: Any) -> Any:
            result = edit(e)
            self.applied += 1
            return result

        app._display = on_display
        app.prompt.edit = on_edit

    def _frame(self, now: float) -> None:
        self.frames += 1
        while self.echoed < min(self.applied, len(self.sent)):
            t = self.sent[self.echoed]
            self.echo.append((t, 1000 * (now - t)))
            self.echoed += 1
        if (
            self.want_line is not None
            and self.stream.deltas >= self.want_after
            and self._shows(self.want_line)
        ):
            self.seen_at, self.seen_cpu = now, time.process_time()
            self.threads_end = thread_cpu()
            self.want_line = None
        waiters, self.frame_waiters = self.frame_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(now)

    def _shows(self, line: str) -> bool:
        # Only checked once the last token was handed on: a few frames at most.
        return any(line in strip.text for strip in self.app.screen._compositor.render_strips())

    def watch_for(self, line: str, after: int) -> None:
        """Time the first frame showing ``line`` once ``after`` deltas were handed on."""
        self.want_line, self.want_after, self.seen_at = line, after, 0.0

    def next_frame(self) -> asyncio.Future[float]:
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.frame_waiters.append(fut)
        return fut

    def reset_keys(self) -> None:
        self.sent, self.echo, self.applied, self.echoed = [], [], 0, 0


def check_received(received: list[str], turn: int, tokens: int) -> None:
    """Raise unless ``received`` is answer ``turn`` whole, in ``tokens`` deltas."""
    if len(received) != tokens or "".join(received) != answer_text(turn, tokens):
        raise RuntimeError(f"{len(received)} deltas received, not answer {turn} in {tokens} tokens")


def cpu_per_1k_ms(stream: Paced, probe: Probe, tokens: int) -> float:
    """Process CPU from the first delta to the first frame showing the last line, per 1,000 tokens."""
    return 1000 * (probe.seen_cpu - stream.cpu_first) / (tokens / 1000)


async def sleep_until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.02)


async def typist(app: Any, probe: Probe, stop: Callable[[], bool], fast: Callable[[], bool]) -> None:
    """Type a letter, then a backspace, … until ``stop()``; always ends on a backspace. Keys are
    sent the way Pilot and a terminal driver send them (``driver.send_message(events.Key)``)."""
    from textual import events

    rng = random.Random(7)
    driver = app._driver
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while True:
        letter = i % 2 == 0
        if letter and stop():
            return
        char = letters[(i // 2) % 26]
        probe.sent.append(time.perf_counter())
        driver.send_message(events.Key(char, char) if letter else events.Key("backspace", None))
        i += 1
        await asyncio.sleep(rng.uniform(0.02, 0.04) if fast() else rng.uniform(0.06, 0.1))
