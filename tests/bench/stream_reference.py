"""The reference the streaming CPU figure is divided by: a minimal Textual app receiving the same
stream, measured the same way, in the same run.

Process CPU per 1,000 streamed tokens moves with the machine (one commit measured 105 ms one day
and 149–234 ms another): an absolute target flips with the load. So each stream of the real App is
paired with a stream of this app, run just before it, and the figure is the median of the pairs'
ratios: a load that slows both cancels out, and a change to the App shows as a change of ratio.

The reference app is the least an app must do to show a fast stream while someone types: the
SDK's own stream (``AsyncAnthropic().messages.create(stream=True)``; none of the App's code), what
arrived written every 0.12 s to a stock ``Log`` that follows its end (plain text: Textual's
``Markdown`` widget needs seconds of CPU to draw this answer once), and a ``TextArea`` prompt that
receives the same keystrokes as the App's. It gets the same reply (stream_script: the same
Markdown text in the same 4-character tokens) from its own fake Messages API over the same SSE
wire, handed on at the same pace; its CPU is counted by the same probe, from the first token to
the first frame that shows the answer's last line, after a short unmeasured warm-up stream (the
SDK's lazy imports). It runs in a child process (``python -m tests.bench.stream_reference``), so
that its CPU is its own: the App, idle meanwhile, is not counted in it, nor it in the App's.

    .venv/bin/python -m tests.bench.stream_reference --turn 1   # one run, one JSON line
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Log, TextArea

from tests.bench.stream_script import (
    MODEL,
    RATE,
    SIZE,
    TOKENS,
    Paced,
    Probe,
    answer_reply,
    check_received,
    cpu_per_1k_ms,
    final_line,
    sleep_until,
    typist,
)
from tests.support.fakeapi import FakeAnthropic

ROOT = Path(__file__).resolve().parents[2]
WARM_UP_TOKENS = 500
# A stream of 2,000 tokens a second is written in batches, as any chat must write it: a write per
# token cost this app 200–420 ms of CPU per 1,000 tokens, swinging with the machine's load (a
# loaded loop takes several tokens per turn, and their writes share a frame); batched, the cost
# per token is the SDK's and the loop's, and the drawing is per write. 0.12 s is the App's own
# interval between writes.
FLUSH_S = 0.12


class ReferenceApp(App[None]):
    """The answer as plain text in a ``Log`` that follows its end, above a prompt: nothing else."""

    CSS = """
    #answer { height: 1fr; }
    #prompt { height: 3; }
    """

    def compose(self) -> ComposeResult:
        yield Log(id="answer", auto_scroll=True)
        yield TextArea(id="prompt")

    def on_mount(self) -> None:
        self.prompt.focus()

    @property
    def prompt(self) -> TextArea:
        return self.query_one("#prompt", TextArea)


@dataclass
class ReferenceRun:
    """What one stream of the reference app measured."""

    turn: int
    tokens: int
    cpu_per_1k_ms: float = float("nan")
    last_token_ms: float = float("nan")
    rate: float = 0.0  # tokens per second handed on
    received: list[str] = field(default_factory=list)  # the deltas, in order


async def receive(app: ReferenceApp, pace: Paced, turn: int) -> None:
    """Stream the answer through the SDK, each text delta at its due time; what arrived is written
    to the Log every FLUSH_S seconds, and the rest when the stream ends."""
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(max_retries=0)
    answer = app.query_one("#answer", Log)
    try:
        events = await client.messages.create(
            model=MODEL,
            max_tokens=32_000,
            messages=[{"role": "user", "content": f"turn {turn}: explain the whole change"}],
            stream=True,
        )
        pending: list[str] = []

        def flush() -> None:
            if pending:
                answer.write("".join(pending))
                pending.clear()

        timer = app.set_interval(FLUSH_S, flush)
        async for ev in events:
            if ev.type == "content_block_delta" and ev.delta.type == "text_delta":
                await pace.due(ev.delta.text)
                pending.append(ev.delta.text)
        timer.stop()
        flush()  # the stream's end: the rest at once
    finally:
        await client.close()


def failed(task: asyncio.Future[None]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


async def run_reference(turn: int, tokens: int = TOKENS, rate: float = RATE) -> ReferenceRun:
    """One stream of answer ``turn`` into the reference app, against a fake of its own."""
    result = ReferenceRun(turn, tokens)
    saved = dict(os.environ)
    with FakeAnthropic() as server:
        os.environ.update(server.env())
        try:
            server.script(MODEL, answer_reply(0, WARM_UP_TOKENS), answer_reply(turn, tokens))
            app = ReferenceApp()
            pace = Paced(rate)
            async with app.run_test(size=SIZE) as pilot:
                # What is done once per process (the SDK's imports and lazily built event types,
                # the first frames) is done before the measured stream, unmeasured.
                await receive(app, Paced(float("inf")), 0)
                app.query_one("#answer", Log).clear()
                await pilot.pause()
                probe = Probe(app, pace)
                probe.watch_for(final_line(turn), tokens)
                feed = asyncio.ensure_future(receive(app, pace, turn))
                await sleep_until(lambda: pace.deltas > 0 or feed.done(), 30, "the first token")
                probe.reset_keys()  # as in the App: keys are typed once the answer streams
                keys = asyncio.ensure_future(typist(app, probe, lambda: probe.seen_at > 0, lambda: False))
                try:
                    await sleep_until(
                        lambda: probe.seen_at > 0 or failed(feed), 60, "the last token on screen"
                    )
                    await feed  # raises what failed the stream, if anything did
                    await keys
                finally:
                    keys.cancel()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    result.received = pace.received
    result.cpu_per_1k_ms = cpu_per_1k_ms(pace, probe, tokens)
    result.last_token_ms = 1000 * (probe.seen_at - pace.last_yield)
    result.rate = tokens / max(pace.last_yield - pace.first_yield, 1e-9)
    return result


async def reference_in_child(turn: int, tokens: int = TOKENS) -> tuple[ReferenceRun, Measured]:
    """One reference run in a child process (which checks it received answer ``turn`` whole),
    with the span of this process's clock it took (child start to exit)."""
    start = time.perf_counter()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.bench.stream_reference",
        "--turn",
        str(turn),
        "--tokens",
        str(tokens),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await child.communicate()
    end = time.perf_counter()
    if child.returncode != 0:
        raise RuntimeError(f"the reference app exited with {child.returncode}")
    data: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    run = ReferenceRun(**data)
    return run, Measured(run.cpu_per_1k_ms, start, end)


# -- pairs and their ratio ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """One stream's CPU per 1,000 tokens, and the span (``time.perf_counter``) it ran in."""

    cpu_per_1k_ms: float
    start: float
    end: float


@dataclass(frozen=True)
class Pair:
    """A stream of the real App and the reference stream run next to it."""

    real_ms: float
    reference_ms: float

    @property
    def ratio(self) -> float:
        return self.real_ms / self.reference_ms


def pair_up(real: Sequence[Measured], reference: Sequence[Measured]) -> list[Pair]:
    """Pair the i-th real stream with the i-th reference stream. They must have run back to back
    (A B A B …: in each pair, one after the other, and each pair after the one before), so that
    both streams of a pair saw the same machine."""
    if len(real) != len(reference) or not real:
        raise ValueError(f"{len(real)} real streams and {len(reference)} reference streams: not pairs")
    previous_end = float("-inf")
    for i, (a, b) in enumerate(zip(real, reference, strict=True)):
        first, second = sorted((a, b), key=lambda m: m.start)
        if first.start < previous_end or second.start < first.end:
            raise ValueError(f"pair {i + 1} did not run back to back after pair {i}")
        previous_end = second.end
    return [Pair(a.cpu_per_1k_ms, b.cpu_per_1k_ms) for a, b in zip(real, reference, strict=True)]


def paired_ratio(pairs: Sequence[Pair]) -> float:
    """The median of the pairs' ratios (not the ratio of the medians: a pair shares its load, two
    medians need not come from the same moment)."""
    return statistics.median(p.ratio for p in pairs) if pairs else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.stream_reference")
    parser.add_argument("--turn", type=int, default=1, help="which answer (its last line names it)")
    parser.add_argument("--tokens", type=int, default=TOKENS)
    parser.add_argument("--rate", type=float, default=RATE, help="tokens per second")
    args = parser.parse_args(argv)
    run = asyncio.run(run_reference(args.turn, args.tokens, args.rate))
    check_received(run.received, args.turn, args.tokens)
    data = dataclasses.asdict(run)
    del data["received"]
    print(json.dumps(data), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
