"""`make bench`, figure 4: the cost of memory extraction stays flat.

* Flat: 100 same-size turns of one conversation, each `pseudoclaude -C ws --continue -p …` run in
  this process with memory on (``app.cli.main``) against the fake Messages API; the memory model
  answers ``[]`` (nothing worth keeping, so the index, which every request carries, stays the
  same). The extraction request of turn 100 against that of turn 1, in bytes (its compact JSON
  body) and tokens (``tests.fakeapi.request_tokens``), beside what a request carrying the whole
  conversation would be at turn 100 (the fixed part plus every turn's transcript).
* Coalescing: ``memory.manager.Manager`` driven directly with the SDK completion
  (``app.memory_model.AnthropicCompletion``) over the fake; every memory-model answer takes 1 s;
  10 turns are submitted while the first one's request is in flight; how many extraction requests
  they take.

    python -m tests.bench fig_extraction --no-readme
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, at_most, private_env
from tests.support.fakeapi import FakeAnthropic, Gate, Recorded, request_tokens, text

MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"
TURNS = 100
QUEUED = 10
SLOW_SECONDS = 1.0  # each memory-model answer while coalescing is measured
FLAT_LIMIT = 1.1
COALESCE_LIMIT = 3
_TRANSCRIPT = re.compile(r"<transcript>\n(.*)\n</transcript>", re.S)


def prompt(turn: int) -> str:
    return f"Question {turn:04d}: how should the build be configured for module {turn % 97:02d}? " + "x" * 200


def answer(turn: int) -> str:
    return f"Answer {turn:04d}: use the default profile for module {turn % 97:02d}. " + "y" * 400


def body_bytes(body: Mapping[str, Any]) -> int:
    """The request's size on the wire, as compact JSON."""
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def transcript(req: Recorded) -> str:
    content = req.body["messages"][0]["content"]
    content = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    found = _TRANSCRIPT.search(content)
    if found is None:
        raise AssertionError("an extraction request without a <transcript>")
    return found.group(1)


def _print_turn(ws: Path, turn: int) -> None:
    from app.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["-C", str(ws), "--continue", "-p", prompt(turn), "--memory", "auto"])
    if code != 0 or out.getvalue() != answer(turn) + "\n" or "applied" not in err.getvalue():
        raise AssertionError(f"turn {turn}: exit {code}, stderr {err.getvalue()[-500:]!r}")


def flat_figures(root: Path, server: FakeAnthropic) -> list[Figure]:
    ws = root / "flat"
    (ws / ".git").mkdir(parents=True)
    server.respond(MEMORY_MODEL, lambda body: True, text("[]"))
    started = time.perf_counter()
    for turn in range(1, TURNS + 1):
        server.script(MODEL, text(answer(turn)))
        _print_turn(ws, turn)
        if turn % 25 == 0:
            print(f"  … {turn} turns, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    requests = [r for r in server.requests_for(MEMORY_MODEL) if r.outcome.startswith("reply")]
    if len(requests) != TURNS:
        raise AssertionError(f"{len(requests)} extraction requests for {TURNS} turns")
    first, last = requests[0], requests[-1]
    if f"Question {TURNS:04d}" not in transcript(last) or "Question 0001" in transcript(last):
        raise AssertionError("the last extraction request does not carry the last turn alone")
    b1, b100 = body_bytes(first.body), body_bytes(last.body)
    t1, t100 = request_tokens(first.body), request_tokens(last.body)
    # A request carrying the whole conversation: turn 100's, with every turn's transcript in it.
    texts = [transcript(r) for r in requests]
    extra = sum(len(t.encode("utf-8")) for t in texts[:-1])
    whole_bytes = b100 + extra
    whole_tokens = t100 + sum(len(json.dumps(t, ensure_ascii=False)) - 2 for t in texts[:-1]) // 4
    total = sum(body_bytes(r.body) for r in requests)
    detail = (
        f"extraction request at turn 1: {b1:,} B / {t1:,} tokens; at turn {TURNS}: {b100:,} B / "
        f"{t100:,} tokens; the whole conversation would be {whole_bytes:,} B / {whole_tokens:,} tokens "
        f"({whole_bytes / b100:.0f}×); {TURNS} turns cost {total:,} B of requests in all"
    )
    return [
        at_most(f"extraction request, turn {TURNS} / turn 1 (bytes)", b100 / b1, FLAT_LIMIT, "×", detail),
        at_most(
            f"extraction request, turn {TURNS} / turn 1 (tokens)",
            t100 / t1,
            FLAT_LIMIT,
            "×",
            f"{t100:,} vs {t1:,} tokens; whole conversation {whole_tokens:,}",
        ),
    ]


async def _coalesce(root: Path, server: FakeAnthropic) -> tuple[int, list[int], float]:
    from app.agent.memory_bridge.completion import AnthropicCompletion
    from memory.jobs.manager import Manager
    from memory.model import Turn, TurnMessage
    from memory.store.stores import MemoryStores

    ws = root / "coalesce"
    (ws / ".git").mkdir(parents=True)
    stores = MemoryStores(ws)
    # A slow memory model: every answer is held SLOW_SECONDS (a gate nobody opens: its timeout does).
    server.reset()
    server.respond(
        MEMORY_MODEL,
        lambda body: True,
        lambda body: text("[]").held(before=Gate("slow", timeout=SLOW_SECONDS)),
    )
    manager = Manager(stores, AnthropicCompletion(MEMORY_MODEL), poll_interval=0.05, session="bench")
    await manager.start()
    started = time.perf_counter()
    try:
        jobs = []
        for turn in range(1, QUEUED + 1):
            messages = [
                TurnMessage(role="user", text=prompt(turn)),
                TurnMessage(role="assistant", text=answer(turn)),
            ]
            job = await manager.submit(Turn(messages=messages))
            assert job is not None
            jobs.append(job.id)
            if turn == 1:
                # The first turn's request is in flight: the other nine queue behind it.
                await server.wait_for_requests_async(1, model=MEMORY_MODEL, timeout=30)
        outcomes = [await manager.wait_for(j, 60) for j in jobs]
        if not all(o.status == "done" for o in outcomes):
            raise AssertionError(f"not every job was applied: {outcomes}")
    finally:
        await manager.close(5)
    requests = server.requests_for(MEMORY_MODEL)
    sizes = [max(1, transcript(r).count("[turn ")) for r in requests]
    return len(requests), sizes, time.perf_counter() - started


def coalesce_figure(root: Path, server: FakeAnthropic) -> Figure:
    count, sizes, seconds = asyncio.run(_coalesce(root, server))
    return at_most(
        f"extraction requests for {QUEUED} turns queued",
        count,
        COALESCE_LIMIT,
        "",
        f"memory model answering in {SLOW_SECONDS:g} s; turns per request: "
        f"{' + '.join(map(str, sizes))}; all applied in {seconds:.1f} s",
    )


def figures(runs: int = 5) -> list[Figure]:
    """Sizes and counts are deterministic: one pass (``runs`` is for the timed figures)."""
    with private_env() as root, FakeAnthropic() as server:
        os.environ.update(server.env())
        figs = [*flat_figures(root, server), coalesce_figure(root, server)]
        if server.errors:
            raise AssertionError(f"the fake failed: {server.errors[0]}")
        return figs
