"""A long scripted session against the fake Messages API.

Shared by the 300-turn tests (tests/integration/agent/test_long_sessions.py, tests/tui/
test_app_long_session.py) and `make bench` (tests/bench/bench_compaction.py), so the figure the
benchmark prints is the session the tests hold to their limits.

Each turn the scripted model calls ``bash`` once; the command prints the first 5–60 KiB of a text
file in the workspace (every third turn under 8 KiB, so some results stay whole in the
conversation until a compaction offloads them, and the rest are over ``offload_bytes`` and go to
disk at once), then the model answers. Summary requests — main-model requests without ``tools`` —
are answered by a responder, so the scripted turns are never consumed by them.
"""

from __future__ import annotations

import contextlib
import io
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.fakeapi import FakeAnthropic, Recorded, request_tokens, text, tool_use

MODEL = "claude-sonnet-5-5"
DATA_FILE = "build.log"
# The settings the long-session runs use: a window small enough that 300 turns of this output
# compact many times, and an offload bound most of the outputs pass.
WINDOW = 30_000
OFFLOAD_BYTES = 8_192
COMPACT_AT = 0.8


def output_bytes(turn: int) -> int:
    """How many bytes of the data file turn ``turn`` prints: 5–60 KiB, every third under 8 KiB."""
    if turn % 3 == 0:
        return 5 * 1024 + (turn * 613) % (3 * 1024)
    return 9 * 1024 + (turn * 7919) % (51 * 1024)


def write_data(ws: Path) -> Path:
    """A 64 KiB text file of log lines in the workspace (what every bash call prints from)."""
    lines: list[str] = []
    size, n = 0, 0
    while size < 64 * 1024:
        line = f"line {n:05d}: step {n % 97:02d} compiled src/module_{n * 31 % 1000:03d}.c in {n % 13} ms\n"
        lines.append(line)
        size += len(line)
        n += 1
    path = ws / DATA_FILE
    path.write_text("".join(lines))
    return path


def command(turn: int) -> str:
    # The last line makes every output unique (offloaded results are stored by content hash).
    return f"head -c {output_bytes(turn)} {DATA_FILE}; echo; echo 'end of turn {turn}'"


def prompt(turn: int) -> str:
    return f"turn {turn}: show me the first {output_bytes(turn) // 1024} KiB of the build log"


def answer(turn: int) -> str:
    return f"Turn {turn} answer: the log slice ends with 'end of turn {turn}'."


def script_turn(server: FakeAnthropic, turn: int) -> None:
    """One turn's two main-model replies: the bash call, then the answer."""
    server.script(
        MODEL,
        tool_use("bash", {"command": command(turn)}, id=f"toolu_{turn:04d}"),
        text(answer(turn)),
    )


def is_summary(body: Mapping[str, Any]) -> bool:
    """A summary request: the main model, asked without tools (``request_summary`` in
    app/agent/conversation/compaction.py)."""
    return "tools" not in body


def answer_summaries(server: FakeAnthropic) -> None:
    """Answer every summary request with a short summary naming how much it covered."""

    def reply(body: Mapping[str, Any]) -> Any:
        asked = str(body.get("messages", [{}])[-1].get("content", ""))
        turns = asked.count("TOOL CALL bash")
        return text(
            f"## Summary\nThe user asked for slices of the build log; {turns} bash call(s) here. "
            "Nothing is open."
        )

    server.respond(MODEL, is_summary, reply)


def print_turn(ws: Path, turn: int) -> tuple[int, str, str]:
    """One `pseudoclaude -C ws --continue -p … --allow-tools bash --memory off`, in this process.

    The settings come from the environment (PSEUDOCLAUDE_CONTEXT_WINDOW, …) set by the caller."""
    from app.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            ["-C", str(ws), "--continue", "-p", prompt(turn), "--allow-tools", "bash", "--memory", "off"]
        )
    return code, out.getvalue(), err.getvalue()


@dataclass
class Stats:
    """What the fake saw of a long session."""

    turns: int
    window: int
    threshold: int
    main_sizes: list[int] = field(default_factory=list)  # request_tokens of each main request
    summary_sizes: list[int] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # outcomes of requests the fake did not answer
    offloaded: int = 0  # tool results kept on disk (files under sessions/<id>/results/)
    seconds: float = 0.0

    @property
    def max_main(self) -> int:
        return max(self.main_sizes, default=0)

    @property
    def p50_main(self) -> int:
        return int(statistics.median(self.main_sizes)) if self.main_sizes else 0

    def pct(self, tokens: int) -> str:
        return f"{100 * tokens / self.window:.1f}%"


def measure(
    server: FakeAnthropic, home: Path, turns: int, window: int = WINDOW, compact_at: float = COMPACT_AT
) -> Stats:
    """Sort the fake's recorded requests into main and summary requests, with their sizes."""
    stats = Stats(turns=turns, window=window, threshold=int(window * compact_at))
    requests: list[Recorded] = server.requests_for(MODEL)
    for r in requests:
        if not r.outcome.startswith("reply"):
            stats.refused.append(r.outcome)
            continue
        size = request_tokens(r.body)
        (stats.summary_sizes if is_summary(r.body) else stats.main_sizes).append(size)
    stats.offloaded = sum(1 for _ in (home / "sessions").glob("*/results/*.txt"))
    return stats
