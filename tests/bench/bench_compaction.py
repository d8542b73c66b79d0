"""`make bench`: how big requests get over a long session with large tool outputs.

Runs the scripted session of tests/bench/longsession.py — by default 300 turns of
`pseudoclaude --continue -p … --allow-tools bash --memory off`, in this process, each turn one
bash call printing 5–60 KiB — against the fake Messages API with a small window (30,000 tokens;
the fake refuses a longer request like the real API), then prints what the fake saw.

    python -m tests.bench.bench_compaction [--turns N] [--window TOKENS] [--offload-bytes N]

Everything runs in a temporary HOME and PSEUDOCLAUDE_HOME, removed at the end. Exit status 1
when a turn failed, a request was refused or a request passed the compaction threshold.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from tests.bench import longsession as ls
from tests.bench.common import Figure, at_most, median, private_env
from tests.support.fakeapi import FakeAnthropic


def run(turns: int, window: int, offload_bytes: int) -> tuple[ls.Stats, list[str]]:
    """Run the session; its stats and the failures met (empty when every turn completed)."""
    failures: list[str] = []
    turn_seconds.clear()
    # A private home, and no configuration of the person running the benchmark.
    with private_env(
        PSEUDOCLAUDE_CONTEXT_WINDOW=str(window), PSEUDOCLAUDE_OFFLOAD_BYTES=str(offload_bytes)
    ) as root:
        home = root / "home" / ".PseudoClaude"
        ws = root / "repo"
        (ws / ".git").mkdir(parents=True)
        ls.write_data(ws)
        with FakeAnthropic(context_window=window) as server:
            os.environ.update(server.env())
            ls.answer_summaries(server)
            started = time.perf_counter()
            for turn in range(1, turns + 1):
                ls.script_turn(server, turn)
                t0 = time.perf_counter()
                code, out, err = ls.print_turn(ws, turn)
                turn_seconds.append(time.perf_counter() - t0)
                if code != 0 or out != ls.answer(turn) + "\n":
                    failures.append(f"turn {turn}: exit {code}: {err.strip().splitlines()[-1:]}")
                    break
                if turn % 50 == 0:
                    print(f"  … {turn} turns", file=sys.stderr, flush=True)
            elapsed = time.perf_counter() - started
            stats = ls.measure(server, home, turn, window)
            stats.seconds = elapsed
    return stats, failures


turn_seconds: list[float] = []  # wall time of each turn of the last run (a new process's work, in-process)


def figures(runs: int = 5) -> list[Figure]:
    """The 300-turn session's peak request, summary requests, and the time of a
    turn near turn 300 against one near turn 10."""
    stats, failures = run(300, ls.WINDOW, ls.OFFLOAD_BYTES)
    early = median(turn_seconds[5:15])
    late = median(turn_seconds[-10:])
    peak = 100 * stats.max_main / stats.window
    limit = 100 * stats.threshold / stats.window
    done = f"{stats.turns} turns, {len(stats.main_sizes)} main requests, {len(stats.refused)} refused"
    return [
        at_most(
            "long session: peak request (% of the window)",
            peak,
            limit,
            "%",
            f"{done}; threshold {limit:.0f} %; failures: {len(failures)}",
        ),
        Figure(
            "long session: summary requests",
            len(stats.summary_sizes),
            "",
            "reported",
            not failures,
            f"{stats.offloaded} tool results kept on disk",
        ),
        at_most(
            "long session: time per turn, turn 300 / turn 10",
            late / early,
            1.5,
            "×",
            f"medians of 10 turns: {1000 * late:.0f} ms vs {1000 * early:.0f} ms",
        ),
    ]


def table(stats: ls.Stats, offload_bytes: int) -> str:
    rows = [
        ("turns", f"{stats.turns}"),
        ("main requests", f"{len(stats.main_sizes)}"),
        ("summary requests", f"{len(stats.summary_sizes)}"),
        ("offloaded results", f"{stats.offloaded} (over {offload_bytes:,} bytes, or moved at a compaction)"),
        ("max request", f"{stats.max_main:,} tokens = {stats.pct(stats.max_main)} of the window"),
        ("p50 request", f"{stats.p50_main:,} tokens = {stats.pct(stats.p50_main)} of the window"),
        ("threshold", f"{stats.threshold:,} tokens = {stats.pct(stats.threshold)} of the window"),
        ("window", f"{stats.window:,} tokens"),
        ("refused requests", f"{len(stats.refused)}"),
        ("time", f"{stats.seconds:.1f} s ({1000 * stats.seconds / max(stats.turns, 1):.0f} ms a turn)"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_compaction", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--turns", type=_positive, default=300)
    parser.add_argument("--window", type=_positive, default=ls.WINDOW, help="context window in tokens")
    parser.add_argument("--offload-bytes", type=_positive, default=ls.OFFLOAD_BYTES)
    args = parser.parse_args(argv)
    print(
        f"compaction benchmark: {args.turns} turns, window {args.window:,} tokens, "
        f"offload over {args.offload_bytes:,} bytes",
        file=sys.stderr,
        flush=True,
    )
    stats, failures = run(args.turns, args.window, args.offload_bytes)
    print(table(stats, args.offload_bytes))
    problems = list(failures)
    if stats.refused:
        problems.append(f"{len(stats.refused)} request(s) refused, the first: {stats.refused[0]}")
    if stats.max_main > stats.threshold:
        problems.append(f"a request of {stats.max_main:,} tokens passed the threshold ({stats.threshold:,})")
    for p in problems:
        print(f"FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
