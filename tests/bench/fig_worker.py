"""`make bench`: the memory worker in its own process — the screen while it applies, and
its deaths.

One headless ``PseudoClaudeApp`` (the real SDK against the fake Messages API, memory on, a user store
of 10,000 notes, ``PSEUDOCLAUDE_MEMORY_WORKER=process``) runs its memory jobs in the real
``pseudoclaude memory worker`` child, wrapped by tests/support/worker_driver.py (``--arm``): the
real command, which logs each store transaction's start and end (CLOCK_MONOTONIC, comparable with
this process's clock) and SIGKILLs itself at the N-th file change of a transaction when armed.

* **busy** (``runs`` jobs): a short turn whose memory job (50 creates) is held at the fake; then a
  4,000-token answer streamed at 2,000 tokens/s (fig_streaming's ``PacedProvider``); the memory
  answer is sent at its 3,000th token, so the child parses and applies while the end streams.
  Keys (stream_script's ``typist`` and ``Probe``) every 60–100 ms, every 20–40 ms from the answer
  sent until the app sees ``JobApplied``; the window counted is the answer sent → the child's
  transaction's end. The apply's own time is the transaction's (from the driver's log).
* **killed** (20 jobs of 50 creates): before each turn the driver is armed with a kill point
  spread over the transaction's file changes (staging, the journal's commit point, the cards
  linked, the index and history written); the child SIGKILLs itself there, the App's supervisor
  says so and starts another, which finishes the job (a replay of the kept answer, or the
  journal's roll-forward). Keys every 20–40 ms from the kill until the app sees the job applied.
  The supervisor pauses after ``MAX_RESTARTS`` deaths a minute: the bench raises that limit above
  its kills (its own restart policy) rather than space the kills a minute apart.
  Counted at the end: each job's cards (50, not fewer, not more), its batches in the history
  (exactly one), jobs left in the spool, memory-model requests (one per job: the answer is kept
  through a kill), the deaths the App said.

    .venv/bin/python -m tests.bench --no-readme fig_worker
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, at_most, median, private_env
from tests.bench.fig_streaming import (
    MEMORY_MODEL,
    SEED_NOTES,
    MemoryScript,
    PacedProvider,
    creates,
    p95,
    seed_store,
)
from tests.bench.stream_script import CHUNK, MODEL, SIZE, Probe, answer_text, final_line, sleep_until, typist
from tests.support.fakeapi import FakeAnthropic, text

ROOT = Path(__file__).resolve().parents[2]
KILLS = 20
STREAM_TOKENS = 4_000
RELEASE_AT = 3_000  # the memory answer is sent 0.5 s before the stream's end
TX_CHANGES = 268  # file changes of a 50-create transaction (staging, journal, links, index, history)
ECHO_MS = 50.0
CHILD_START_S = 60.0  # a child imports the SDK before its first request: seconds on a busy machine
JOB_S = 90.0


def log(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


@dataclass
class Job:
    """One measured memory job."""

    turn: int
    job_id: str = ""
    window: tuple[float, float] = (0.0, 0.0)
    echoes: list[tuple[float, float]] = field(default_factory=list)
    apply_ms: float = float("nan")  # the child's transaction (busy)
    seen_ms: float = float("nan")  # busy: answer sent → JobApplied in the app; killed: kill → JobApplied
    last_token_ms: float = float("nan")
    last_in_window: bool = False
    kill_at: int = -1
    streamed: bool = False  # busy: an answer streamed meanwhile
    killed: bool = False
    restart_ms: float = float("nan")  # the kill → the next child started

    def in_window(self) -> list[float]:
        a, b = self.window
        return [ms for sent, ms in self.echoes if a <= sent <= b]


class Script(MemoryScript):
    """fig_streaming's memory replies, counting the requests as they arrive (a held reply is
    recorded by the fake only once it is sent)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = 0

    def reply(self, body: Any) -> Any:
        self.arrived += 1
        return super().reply(body)


def p95_of(ms: list[float]) -> float:
    from tests.bench.fig_streaming import Turn

    return p95(Turn("", echoes=[(0.0, m) for m in ms]))


class DriverLog:
    """The driver's lines (``apply PID START END``, ``kill PID T AT``), read again on each look."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self, word: str) -> list[list[str]]:
        try:
            raw = self.path.read_text()
        except FileNotFoundError:
            return []
        return [p[1:] for p in (ln.split() for ln in raw.splitlines()) if p and p[0] == word]

    def applies_after(self, t: float) -> list[tuple[float, float]]:
        return [(float(s), float(e)) for _, s, e in self.lines("apply") if float(s) >= t]

    def kills(self) -> list[tuple[int, float]]:
        return [(int(pid), float(t)) for pid, t, _ in self.lines("kill")]


class Bench:
    """The App, its probe and the fake; what the app's manager said of each job."""

    def __init__(
        self,
        app: Any,
        server: FakeAnthropic,
        memory: Script,
        provider: PacedProvider,
        ws: Path,
        driver: DriverLog,
        arm: Path,
    ) -> None:
        from memory.events import JobApplied, JobFailed, JobQueued

        self.app, self.server, self.memory, self.provider, self.ws = app, server, memory, provider, ws
        self.driver, self.arm = driver, arm
        self.probe = Probe(app, provider)
        self.queued: list[str] = []
        self.applied: dict[str, float] = {}
        self.failed: list[str] = []
        self.turn = 0
        self.requests = 0  # memory-model requests expected

        def on_event(ev: Any) -> None:
            if isinstance(ev, JobQueued):
                self.queued.append(ev.job_id)
            elif isinstance(ev, JobApplied):
                self.applied.setdefault(ev.job_id, time.perf_counter())
            elif isinstance(ev, JobFailed):
                self.failed.append(f"{ev.job_id}: {ev.reason}")

        app.bridge.runtime.manager.subscribe(on_event)

    @property
    def child(self) -> Any:
        return self.app.bridge.runtime.child

    def done(self, job_id: str) -> bool:
        if self.failed:
            raise RuntimeError(f"memory jobs failed: {self.failed}")
        return job_id in self.applied

    async def submit(
        self, body: str, ops: list[dict[str, Any]] | None, *, held: bool = False, chunk: int | None = None
    ) -> tuple[int, threading.Event]:
        """Send a turn answered with ``body``; its memory job answers ``ops`` (held: when released)."""
        self.turn += 1
        go = self.memory.push(ops or [], held=held)
        self.requests += 1
        self.server.script(MODEL, text(body, chunk_size=chunk) if chunk else text(body))
        app = self.app
        await sleep_until(lambda: app.prompt.disabled_reason is None, 60, "the prompt to be free")
        app.prompt.text = f"turn {self.turn}: what should I remember?"
        app.prompt.move_cursor(app.prompt.document.end)
        app.prompt.focus()
        assert app.prompt.submit()
        return self.turn, go

    async def job_of_turn(self, queued_before: int) -> str:
        await sleep_until(lambda: len(self.queued) > queued_before, 60, "the turn's job to be spooled")
        return self.queued[queued_before]

    async def keys_until(
        self, stop: Callable[[], bool], fast: Callable[[], bool]
    ) -> list[tuple[float, float]]:
        """Type (stream_script's typist) until ``stop()``; the echoes, once all are on screen."""
        probe = self.probe
        probe.reset_keys()
        keys = asyncio.ensure_future(typist(self.app, probe, stop, fast))
        await sleep_until(keys.done, JOB_S, "the typing to end")
        await keys
        await sleep_until(lambda: probe.echoed >= len(probe.sent), 10, "the last keystrokes' echo")
        return list(probe.echo)


# -- busy: the echo while the child applies -------------------------------------------------------------


async def busy_job(b: Bench, stream: bool) -> Job:
    """A 50-create job applied by the child while keys are typed (and, ``stream``, an answer streams)."""
    n = len(b.queued)
    turn, go = await b.submit("Noted.", creates(b.turn + 1), held=True)
    job = Job(turn, await b.job_of_turn(n), streamed=stream)
    await sleep_until(lambda: b.memory.arrived >= b.requests, CHILD_START_S, "the memory request, held")
    await sleep_until(lambda: b.app.prompt.disabled_reason is None, 60, "the turn to end")
    probe, provider = b.probe, b.provider
    released: list[float] = []
    if not stream:
        released.append(time.perf_counter())
        go.set()
        job.echoes = await b.keys_until(lambda: b.done(job.job_id), lambda: True)
    else:
        # A streamed turn; its own job has nothing to apply.
        def on_delta(k: int) -> None:
            if k == RELEASE_AT:
                released.append(time.perf_counter())
                go.set()

        n2 = len(b.queued)
        body = answer_text(turn + 1, STREAM_TOKENS)
        provider.on_delta, provider.deltas = on_delta, 0
        probe.want_line, probe.want_after, probe.seen_at = final_line(turn + 1), len(body) // CHUNK, 0.0
        await b.submit(body, [], chunk=CHUNK)
        await sleep_until(lambda: provider.deltas > 0, 30, "the first token")
        job.echoes = await b.keys_until(
            lambda: probe.seen_at > 0 and b.done(job.job_id),
            lambda: bool(released) and not b.done(job.job_id),
        )
        provider.on_delta = None
        job.last_token_ms = 1000 * (probe.seen_at - provider.last_yield)
    start = released[0]
    applies = b.driver.applies_after(start)
    if not applies:
        raise RuntimeError("the child's transaction was not logged")
    job.window = (start, applies[0][1])
    job.apply_ms = 1000 * (applies[0][1] - applies[0][0])
    job.seen_ms = 1000 * (b.applied[job.job_id] - start)
    if stream:
        job.last_in_window = start <= provider.last_yield <= job.window[1]
        await sleep_until(
            lambda: b.done(b.queued[n2]) if len(b.queued) > n2 else False, JOB_S, "the empty job"
        )
    return job


# -- killed: the child dies mid-apply ---------------------------------------------------------------------


async def killed_job(b: Bench, kill_at: int) -> Job:
    tmp = b.arm.with_suffix(".tmp")
    tmp.write_text(f"{kill_at}\n")
    tmp.replace(b.arm)
    kills_before = len(b.driver.kills())
    started_before = b.child.started
    n = len(b.queued)
    turn, _ = await b.submit("Noted.", creates(b.turn + 1))
    job = Job(turn, await b.job_of_turn(n), kill_at=kill_at)
    await sleep_until(lambda: b.app.prompt.disabled_reason is None, 60, "the turn to end")
    restarted: list[float] = []

    def stop() -> bool:
        if not restarted and b.child.started > started_before:
            restarted.append(time.perf_counter())
        return b.done(job.job_id)

    job.echoes = await b.keys_until(stop, lambda: True)
    kills = b.driver.kills()[kills_before:]
    job.killed = bool(kills)
    t0 = kills[0][1] if kills else b.applied[job.job_id]
    job.window = (t0, b.applied[job.job_id])
    job.seen_ms = 1000 * (job.window[1] - t0)
    if restarted and kills:
        job.restart_ms = 1000 * (restarted[0] - t0)
    with contextlib.suppress(FileNotFoundError):
        b.arm.unlink()  # a transaction that never reached its kill point leaves no arming behind
    return job


def kill_points(count: int) -> list[int]:
    """Spread over the transaction's file changes, the first and the last included."""
    return [round(i * (TX_CHANGES - 1) / max(count - 1, 1)) for i in range(count)]


# -- the run -----------------------------------------------------------------------------------------------


def driver_argv(arm: Path, logfile: Path) -> Callable[..., list[str]]:
    import app.agent.runtime as runtime_module

    real = runtime_module.worker_argv

    def argv(*args: Any, **kwargs: Any) -> list[str]:
        full = real(*args, **kwargs)
        rest = full[full.index("app.cli.main") + 1 :]
        return [
            sys.executable,
            "-P",
            "-m",
            "tests.support.worker_driver",
            "--arm",
            str(arm),
            str(logfile),
            "--",
            *rest,
        ]

    return argv


@dataclass
class Result:
    busy: list[Job]
    killed: list[Job]
    deaths: list[str]
    said: list[str]
    cards: dict[int, int]  # turn → its cards in the store
    batches: dict[str, int]  # job id → its batches in the history
    spooled: int
    requests: int
    expected_requests: int
    seed_s: float


async def session(runs: int) -> Result:
    import app.agent.memory_bridge.worker_process as worker_process
    import app.agent.runtime as runtime_module
    from app.agent.config.settings import load_settings
    from app.agent.model.provider import AnthropicProvider
    from tests.tui.conftest import build_app, chat_texts

    extra = {
        "PSEUDOCLAUDE_MEMORY_WORKER": "process",
        "PSEUDOCLAUDE_CONSOLIDATE_AFTER": "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    saved_argv, saved_max = runtime_module.worker_argv, worker_process.MAX_RESTARTS
    with private_env(**extra) as root, FakeAnthropic() as server:
        os.environ.update(server.env())
        ws = root / "repo"
        (ws / ".git").mkdir(parents=True)
        ws = ws.resolve()
        t = time.perf_counter()
        seed_store(ws, SEED_NOTES)
        seed_s = time.perf_counter() - t
        log(f"seeded {SEED_NOTES:,} notes in {seed_s:.1f} s")
        arm, logfile = root / "arm", root / "driver.log"
        runtime_module.worker_argv = driver_argv(arm, logfile)
        worker_process.MAX_RESTARTS = KILLS + 1  # the bench's restart policy: never paused by its kills
        try:
            memory = Script()
            server.respond(MEMORY_MODEL, lambda body: True, memory.reply)
            provider = PacedProvider(AnthropicProvider())
            app = build_app(
                load_settings({"memory_mode": "auto"}), ws, provider=provider, watch_debounce_ms=300
            )
            async with app.run_test(size=SIZE):
                await sleep_until(
                    lambda: app.state.phase.opened and app.prompt.disabled_reason is None, 60, "the app"
                )
                b = Bench(app, server, memory, provider, ws, DriverLog(logfile), arm)
                await sleep_until(
                    lambda: b.child is not None and b.child.pid is not None, CHILD_START_S, "the worker child"
                )
                result = await measure(b, runs)
                result.seed_s = seed_s
                result.said = [s for s in chat_texts(app) if "memory worker stopped" in s]
                if b.child.pid is not None:
                    _track.append(b.child.pid)
            await asyncio.to_thread(_reap)
        finally:
            runtime_module.worker_argv, worker_process.MAX_RESTARTS = saved_argv, saved_max
    return result


_track: list[int] = []


def _reap() -> None:
    """The last child drains and exits by itself once the app closed its stdin; never left running."""
    import signal

    deadline = time.monotonic() + 30
    for pid in _track:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    _track.clear()


async def measure(b: Bench, runs: int) -> Result:
    from memory.jobs.spool import Spool
    from memory.store.stores import MemoryStores

    busy: list[Job] = []
    for r in range(2 * runs):
        # Side by side: the apply alone, then the apply while an answer streams, and so on.
        job = await busy_job(b, stream=r % 2 == 1)
        busy.append(job)
        keys = job.in_window()
        log(
            f"busy {r + 1}{' (streaming)' if job.streamed else ''}: echo p95 {p95_of(keys):.0f} ms "
            f"over {len(keys)} keys; "
            f"apply {job.apply_ms:.0f} ms, answer sent → app saw it {job.seen_ms:.0f} ms; "
            f"last token {job.last_token_ms:.0f} ms{' (in the window)' if job.last_in_window else ''}"
        )
    killed: list[Job] = []
    for k, point in enumerate(kill_points(KILLS)):
        job = await killed_job(b, point)
        killed.append(job)
        said = b.child.deaths[-1] if b.child.deaths else "(nothing said)"
        log(
            f"kill {k + 1} at change {point}: {'killed' if job.killed else 'NOT killed'}; next child after "
            f"{job.restart_ms:.0f} ms, job applied {job.seen_ms:.0f} ms after the kill; echo p95 "
            f"{p95_of(job.in_window()):.0f} ms over {len(job.in_window())} keys; said: {said}"
        )
    stores = MemoryStores(b.ws)
    folder = stores.user.dir
    cards = {j.turn: sum(1 for _ in folder.glob(f"*_fact-{j.turn}-*.md")) for j in busy + killed}
    history = stores.history()
    batches = {j.job_id: sum(1 for e in history if j.job_id in e.jobs) for j in busy + killed}
    spooled = len(Spool(stores.paths).list(b.ws, include_orphans=False))
    return Result(
        busy,
        killed,
        list(b.child.deaths),
        [],
        cards,
        batches,
        spooled,
        len(b.server.requests_for(MEMORY_MODEL)),
        b.requests,
        0.0,
    )


def figures(runs: int = 2) -> list[Figure]:
    """The worker process's figures."""
    runs = int(os.environ.get("PSEUDOCLAUDE_BENCH_ROUNDS", runs))
    started = time.perf_counter()
    res = asyncio.run(session(runs))
    log(f"{len(res.busy)} busy jobs, {len(res.killed)} killed jobs in {time.perf_counter() - started:.0f} s")
    return [busy_figure(res), lost_figure(res), restart_figure(res)]


def busy_figure(res: Result) -> Figure:
    alone = [j for j in res.busy if not j.streamed]
    streamed = [j for j in res.busy if j.streamed]
    per = [p95_of(j.in_window()) for j in alone]
    per_s = [p95_of(j.in_window()) for j in streamed]
    pooled = [ms for j in alone for ms in j.in_window()]

    def ms(values: list[float]) -> str:
        return ", ".join(f"{v:.0f}" for v in values)

    return at_most(
        "worker busy: keystroke echo p95 during a 50-op apply on 10,000 notes",
        median(per),
        ECHO_MS,
        "ms",
        f"the apply in the worker child; median of {len(alone)} jobs' p95 (ms: {ms(per)}); "
        f"{len(pooled)} keys (every 20–40 ms) from the answer sent to the child's commit, all pooled: "
        f"p95 {p95_of(pooled):.0f} ms; "
        f"the child's transaction {median([j.apply_ms for j in alone]):.0f} ms median, answer sent → the "
        f"app's JobApplied {median([j.seen_ms for j in alone]):.0f} ms (its 0.5 s spool poll included). "
        f"Side by side, with a {STREAM_TOKENS:,}-token answer streamed meanwhile at 2,000 tokens/s: echo p95 "
        f"{median(per_s):.0f} ms (ms: {ms(per_s)}; {sum(len(j.in_window()) for j in streamed)} keys), last "
        f"token on screen {median([j.last_token_ms for j in streamed]):.0f} ms after it arrived "
        f"({sum(j.last_in_window for j in streamed)} of {len(streamed)} in the window)",
    )


def lost_figure(res: Result) -> Figure:
    jobs = res.killed
    lost = [j for j in jobs if res.cards[j.turn] < 50]
    doubled = [j for j in jobs if res.cards[j.turn] > 50]
    bad_batches = [j for j in res.busy + jobs if res.batches[j.job_id] != 1]
    fired = sum(j.killed for j in jobs)
    value = (
        len(lost) + len(doubled) + len({j.job_id for j in bad_batches} - {j.job_id for j in lost + doubled})
    )
    value += res.spooled
    kinds: dict[str, int] = {}
    for line in res.deaths:
        kinds[line] = kinds.get(line, 0) + 1
    said = "; ".join(f"{n}× “{line}”" for line, n in kinds.items()) or "none"
    ok = value == 0 and fired == KILLS and len(res.deaths) == KILLS and len(res.said) == KILLS
    ok = ok and res.requests == res.expected_requests
    detail = (
        f"{fired} of {len(jobs)} children SIGKILLed inside the job's transaction (at file change "
        f"{', '.join(str(j.kill_at) for j in jobs)} of {TX_CHANGES}; the journal commits at 160); "
        f"{len(lost)} jobs with cards missing, {len(doubled)} with cards twice, {len(bad_batches)} without "
        f"exactly one batch in the history, {res.spooled} left in the spool; {res.requests} memory-model "
        f"requests for {res.expected_requests} jobs; the App said {len(res.said)} deaths in the chat: "
        f"{said}; "
        f"the supervisor's pause after {KILLS + 1} deaths a minute (MAX_RESTARTS raised for the bench from 5)"
    )
    return Figure(
        "worker killed during an apply, 20 times: lost or doubled jobs", float(value), "", "≤ 0", ok, detail
    )


def restart_figure(res: Result) -> Figure:
    jobs = [j for j in res.killed if j.killed]
    per = [p95_of(j.in_window()) for j in jobs]
    pooled = [ms for j in jobs for ms in j.in_window()]
    return at_most(
        "worker restarting: keystroke echo p95",
        median(per),
        ECHO_MS,
        "ms",
        f"median of {len(jobs)} kills' p95 (ms: {', '.join(f'{v:.0f}' for v in per)}); "
        f"{len(pooled)} keys (every 20–40 ms) from each kill until the app saw the job applied by the "
        f"next child, all pooled: p95 "
        f"{p95_of(pooled):.0f} ms; the next child started {median([j.restart_ms for j in jobs]):.0f} ms "
        f"after the kill, the job applied {median([j.seen_ms for j in jobs]):.0f} ms after it (medians)",
    )


if __name__ == "__main__":
    for fig in figures():
        print(fig.line())
