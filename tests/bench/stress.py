"""`make bench` stress runs: reliability of memory under load.

Three runs against the fake Messages API, each reported as a Figure whose value is the number of
problems found (target 0):

1. ``run_app_processes``: 3 processes on one workspace (each a small driver that builds the
   ``Runtime`` the app and print mode stand on and runs print-mode-like turns, memory ``auto``),
   started together; the elected worker types fastest and quits as soon as its own jobs are
   done (cutting off any job of the others it is running), so another process takes its place.
   Every turn asks the memory model to remember a uniquely marked fact, so every turn's job must
   end as exactly one card, one created op in the history and one job id in it; the stores,
   their ``MEMORY.md`` and the spool must be consistent at the end.
2. ``run_sigkill``: ``pseudoclaude --continue -p …`` turns (``app.cli.main`` called again and
   again in a driver process, so the 1 s SDK import is paid once per process, not per turn),
   SIGKILLed at random points: during the answer's streaming (the fake holds the stream at a
   random event), during extraction (the fake holds the memory model's answer), during apply
   (the driver kills itself at a random file change of a store transaction) and at any moment
   (a random delay after a turn starts). The next start goes on with the next turn. At the end:
   no corrupt store, job file or history entry, and every job that was spooled is applied
   exactly once.
3. ``run_flaky`` / ``flaky_session``: in this process, turns against a memory model that fails
   30 % of the time (HTTP 500, prose without JSON, truncated JSON text, a stream cut before its
   end, a hang past the manager's ``request_timeout``). No turn fails; every turn's fact ends as
   one card or in a job that is visibly failed (state ``failed``, a reason, a ``JobFailed``
   event); none vanishes.

The fast versions of the three (fewer turns) are in tests/reliability/test_stress.py (`make test`).
A driver is this module run as a script: ``python -m tests.bench.stress app|print …``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, at_most, private_env
from tests.support.fakeapi import FakeAnthropic, Gate, Reply, http_error, text, truncated

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"
# A turn's marker. Card titles ("Fact a-007") never contain it, so the index lines an extraction
# request carries never look like a turn to remember.
MARK_RE = re.compile(r"MARK-([a-z0-9]+-\d+)")
TRANSCRIPT_RE = re.compile(r"<transcript>(.*)</transcript>", re.S)


def log(msg: str) -> None:
    print(f"  stress: {msg}", file=sys.stderr, flush=True)


# -- the scripted conversation ---------------------------------------------------------------------


def tag(who: str, turn: int) -> str:
    return f"{who}-{turn:03d}"


def prompt(t: str) -> str:
    return f"Please remember MARK-{t}: step {t} of the build runs `make step-{t}`."


def answer(t: str) -> str:
    return f"Noted: step {t.replace('-', ' ')} runs its own make target, and I will keep it in mind."


def title(t: str) -> str:
    return f"Fact {t}"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return ""


def main_tags(body: Mapping[str, Any]) -> list[str]:
    """The markers of a main-model request's last user message (the turn being answered)."""
    messages = body.get("messages") or [{}]
    return MARK_RE.findall(_text_of(messages[-1].get("content")))


def memory_tags(body: Mapping[str, Any]) -> list[str]:
    """The markers of the turns an extraction request carries (its transcript only)."""
    prompt_text = _text_of((body.get("messages") or [{}])[0].get("content"))
    found = TRANSCRIPT_RE.search(prompt_text)
    return list(dict.fromkeys(MARK_RE.findall(found.group(1) if found else "")))


def ops_json(tags: list[str]) -> str:
    return json.dumps(
        [
            {
                "action": "create",
                "level": "project",
                "type": "project_knowledge",
                "title": title(t),
                "summary": f"what build step {t} runs",
                "content": f"Build step {t} runs `make step-{t}`.",
            }
            for t in tags
        ]
    )


def main_reply(body: Mapping[str, Any]) -> Reply:
    tags = main_tags(body)
    return text(answer(tags[-1]) if tags else "I have nothing to say to that.")


def memory_reply(body: Mapping[str, Any]) -> Reply:
    return text(ops_json(memory_tags(body)))


def answer_everything(server: FakeAnthropic) -> None:
    """Main model: the turn's answer; memory model: one create per marked turn."""
    server.respond(MODEL, lambda _b: True, main_reply)
    server.respond(MEMORY_MODEL, lambda _b: True, memory_reply)


@contextlib.contextmanager
def environ(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set, restored on exit."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def new_workspace(root: Path) -> Path:
    ws = root / "repo"
    (ws / ".git").mkdir(parents=True, exist_ok=True)
    return Path(os.path.realpath(ws))


def child_env(server: FakeAnthropic) -> dict[str, str]:
    return {**os.environ, **server.env(), "PYTHONPATH": str(ROOT), "PSEUDOCLAUDE_RETRY_DELAY": "0.01"}


# -- what the stores hold at the end -----------------------------------------------------------------


@dataclass
class Audit:
    """The stores, spool and history of one workspace after a run, and what is wrong with them."""

    cards: Counter[str] = field(default_factory=Counter)  # turn tag -> cards with its title
    created: Counter[str] = field(default_factory=Counter)  # turn tag -> created ops in the history
    history_jobs: Counter[str] = field(default_factory=Counter)  # job id -> history entries naming it
    spooled: dict[str, dict[str, Any]] = field(default_factory=dict)  # job id -> its JSON
    problems: list[str] = field(default_factory=list)

    def spooled_tags(self, state: str | None = None) -> Counter[str]:
        out: Counter[str] = Counter()
        for job in self.spooled.values():
            if state is None or job.get("state") == state:
                for turn in job.get("turns", []):
                    for m in turn.get("messages", []):
                        if m.get("role") == "user":
                            out.update(set(MARK_RE.findall(str(m.get("text", "")))))
        return out


def spool_jobs(home: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every job file, read as JSON without the spool's side effects; and the unreadable ones."""
    jobs: dict[str, dict[str, Any]] = {}
    bad: list[str] = []
    folder = home / "spool"
    for p in sorted(folder.glob("*.json")) if folder.exists() else []:
        try:
            jobs[p.stem] = json.loads(p.read_bytes())
        except ValueError as e:
            bad.append(f"spool: {p.name} is not JSON: {e}")
    return jobs, bad


def audit(ws: Path, home: Path) -> Audit:
    """Read everything back with the app's own code; list every inconsistency."""
    from memory.constants import INDEX_FILE, Level
    from memory.jobs.doctor import diagnose
    from memory.jobs.pipeline import EXCERPT_SEP, TOOK_OVER
    from memory.store.stores import MemoryStores

    a = Audit()
    stores = MemoryStores(ws, home)
    a.problems += [f"doctor: {f.message}" for f in diagnose(stores).findings]
    for level in (Level.PROJECT, Level.USER):
        store = stores.store(level)
        notes = store.notes() if store.dir.exists() else []
        lines = (store.dir / INDEX_FILE).read_text().splitlines() if (store.dir / INDEX_FILE).exists() else []
        if len(lines) != len(notes):
            a.problems.append(f"{level} {INDEX_FILE}: {len(lines)} lines for {len(notes)} notes")
        for note in notes:
            if note.broken:
                a.problems.append(f"{level} note {note.filename}: {note.broken}")
            found = re.fullmatch(r"Fact ([a-z0-9]+-\d+)", note.meta.title or "")
            if found is None:
                a.problems.append(
                    f"{level} note {note.filename}: a card no turn asked for ({note.meta.title!r})"
                )
            else:
                a.cards[found.group(1)] += 1
    hdir = stores.paths.history_dir
    files = [p for p in hdir.glob("*.json") if not p.name.startswith(".")] if hdir.exists() else []
    entries = stores.history()
    if len(entries) != len(files):
        a.problems.append(f"history: {len(files) - len(entries)} unreadable entr(ies)")
    for e in entries:
        names = set(e.jobs)
        head = e.label.split(EXCERPT_SEP, 1)[0]  # the label ends with the turn's excerpt
        if TOOK_OVER in head:
            names |= set(head.split(TOOK_OVER, 1)[1].split())
        a.history_jobs.update(names)
        for op in e.applied:
            found = re.fullmatch(r"Fact ([a-z0-9]+-\d+)", op.title or "")
            if op.action.value == "create" and found:
                a.created[found.group(1)] += 1
    a.spooled, bad = spool_jobs(home)
    a.problems += bad
    for folder in (stores.project.dir, stores.user.dir, stores.paths.journal_dir, stores.paths.history_dir):
        if folder.exists():
            a.problems += [
                f"leftover {p}"
                for p in folder.rglob("*")
                if p.name.startswith(".pc-") or (folder == stores.paths.journal_dir and p.is_file())
            ]
    return a


def exactly_once(a: Audit, expected: set[str]) -> list[str]:
    """Each expected turn: one card and one created op; no turn more than once."""
    out: list[str] = []
    for t in sorted(expected | set(a.cards) | set(a.created)):
        if t in expected and a.cards[t] == 0:
            out.append(f"turn {t}: its job was lost (no card)")
        if a.cards[t] > 1:
            out.append(f"turn {t}: {a.cards[t]} cards (applied more than once)")
        if a.created[t] != a.cards[t]:
            out.append(f"turn {t}: {a.created[t]} created op(s) in the history for {a.cards[t]} card(s)")
    return out


# -- 1. three app processes on one workspace ---------------------------------------------------------


async def _app_driver(ws: Path, who: str, turns: int) -> dict[str, Any]:
    """One app-like process: ``turns`` turns on its own session, then wait for every job."""
    import anthropic  # noqa: F401  # the SDK import (≈ 1 s) before the start barrier

    from app.agent.config.settings import load_settings
    from app.agent.runtime import Runtime

    runtime = Runtime(load_settings({"memory_mode": "auto"}), ws)
    await runtime.open_session()
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # the barrier: the three start together
    failures: list[str] = []
    jobs: list[tuple[str, str | None]] = []
    started = time.perf_counter()
    # The elected worker types fastest, so it is done, drains and quits while the others still
    # submit: one of them must take the worker's place for their last jobs.
    first_worker = worker = runtime.manager.is_worker
    think = 0.0 if first_worker else THINK_SECONDS
    for turn in range(turns):
        t = tag(who, turn)
        stop = await runtime.runner.run(prompt(t))
        if stop.status != "completed" or stop.text != answer(t) or not stop.job_id:
            failures.append(f"turn {t}: {stop.status} {stop.message!r} job={stop.job_id}")
        jobs.append((t, stop.job_id))
        worker = worker or runtime.manager.is_worker
        await asyncio.sleep(think)
    turns_s = time.perf_counter() - started
    statuses: dict[str, str] = {}
    for t, job_id in jobs:
        if job_id:
            outcome = await runtime.manager.wait_for(job_id, 180)
            statuses[job_id] = outcome.status
            if outcome.status != "done":
                failures.append(f"turn {t}: job {job_id} {outcome.status} {outcome.reason}")
    worker = worker or runtime.manager.is_worker
    # The first worker quits at once (a job of another process it is running is cut off and
    # stays spooled); the others drain what is left.
    await runtime.close(0 if first_worker else 30)
    return {
        "who": who,
        "jobs": dict(jobs),
        "statuses": statuses,
        "failures": failures,
        "turns_s": turns_s,
        "total_s": time.perf_counter() - started,
        "worker": worker,
        "first_worker": first_worker,
    }


THINK_SECONDS = 0.05  # between the turns of a process that is not the worker at the start


@dataclass
class Result:
    problems: list[str]
    detail: str
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)  # what the run went through (kills, faults …)


def run_app_processes(root: Path, processes: int = 3, turns: int = 100) -> Result:
    """Stress 1. Needs HOME/PSEUDOCLAUDE_HOME set (private_env, or the tests' fixture)."""
    ws = new_workspace(root)
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    started = time.perf_counter()
    problems: list[str] = []
    with FakeAnthropic() as server:
        answer_everything(server)
        names = [chr(ord("a") + i) for i in range(processes)]
        procs = []
        for who in names:
            # stderr to a file: a full pipe would block a process the others wait for.
            with (root / f"app-{who}.err").open("w") as err_file:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "tests.bench.stress", "app", str(ws), who, str(turns)],
                        cwd=ROOT,
                        env=child_env(server),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=err_file,
                        text=True,
                    )
                )
        outputs: list[dict[str, Any]] = []
        try:
            for p in procs:
                assert p.stdout is not None and p.stdin is not None
                line = p.stdout.readline()
                if line.strip() != "ready":
                    raise RuntimeError(f"an app driver did not start: {line}")
            for p in procs:
                assert p.stdin is not None
                p.stdin.write("go\n")
                p.stdin.flush()
            for who, p in zip(names, procs, strict=True):
                out, _ = p.communicate(timeout=600)
                err = (root / f"app-{who}.err").read_text(errors="replace")
                last = out.strip().splitlines()[-1:] or [""]
                try:
                    outputs.append(json.loads(last[0]))
                except ValueError:
                    problems.append(f"process {who}: exit {p.returncode}, no result: {err.strip()[-500:]}")
                    continue
                if p.returncode != 0:
                    problems.append(f"process {who}: exit {p.returncode}: {err.strip()[-500:]}")
                elif err.strip():  # nothing is expected there: a log line is a warning or an error
                    problems += [
                        f"process {who} logged: {line[:300]}" for line in err.strip().splitlines()[:40]
                    ]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        unanswered = [r.outcome for r in server.requests if not r.outcome.startswith("reply")]
        problems += [f"fake API: {o}" for o in unanswered] + [
            f"fake API error: {e[-300:]}" for e in server.errors
        ]
        extractions = len(server.requests_for(MEMORY_MODEL))
    for o in outputs:
        problems += [f"process {o['who']}: {f}" for f in o["failures"]]
    a = audit(ws, home)
    problems += a.problems
    expected = {tag(who, i) for who in names for i in range(turns)}
    problems += exactly_once(a, expected)
    job_ids = [j for o in outputs for j in o["jobs"].values() if j]
    for j in job_ids:
        if a.history_jobs[j] != 1:
            problems.append(f"job {j}: named by {a.history_jobs[j]} history entries (not exactly once)")
    if a.spooled:
        problems.append(f"{len(a.spooled)} job(s) left in the spool")
    seconds = time.perf_counter() - started
    workers = sum(1 for o in outputs if o["worker"])
    if sum(1 for o in outputs if o["first_worker"]) != 1:
        problems.append("not exactly one worker elected at the start")
    turn_s = max((o["turns_s"] for o in outputs), default=0.0)
    detail = (
        f"{processes} processes × {turns} turns in {turn_s:.0f} s; {sum(a.cards.values())} cards, "
        f"{len(job_ids)} jobs in {extractions} extraction requests; {workers} processes were the worker"
    )
    return Result(
        problems, detail, seconds, {"cards": sum(a.cards.values()), "jobs": len(job_ids), "workers": workers}
    )


# -- 2. SIGKILL of print mode at random points ---------------------------------------------------------

MUTATING = frozenset({"mkdir", "create", "write", "fsync", "replace", "link", "unlink", "fsync_dir"})
APPLY_OPS = 25  # file changes of a one-create transaction (stage, journal, commit, history, spool)
PHASES = ("streaming", "extraction", "apply", "any moment")


def _print_driver(ws: Path, first: int, last: int, kill_turn: int, kill_at: int) -> int:
    """Print-mode turns ``first..last`` (``pseudoclaude --continue -p``, in this process); SIGKILL
    itself at the ``kill_at``-th file change inside a store transaction during turn ``kill_turn``."""
    import anthropic  # noqa: F401  # paid once, before the first turn

    from app.cli.main import main
    from memory.store.fs import DEFAULT_FS
    from memory.store.stores import MemoryStores

    state = {"turn": -1, "inside": 0, "n": 0}
    apply = MemoryStores.apply

    def counted_apply(self: MemoryStores, *args: Any, **kwargs: Any) -> Any:
        state["inside"] += 1
        try:
            return apply(self, *args, **kwargs)
        finally:
            state["inside"] -= 1

    def hook(op: str, path: str) -> None:
        if state["inside"] and state["turn"] == kill_turn and op in MUTATING:
            if state["n"] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            state["n"] += 1

    MemoryStores.apply = counted_apply  # type: ignore[method-assign]
    DEFAULT_FS.hook = hook
    real_out = sys.stdout
    print("ready", file=real_out, flush=True)
    for turn in range(first, last + 1):
        t = tag("p", turn)
        state["turn"] = turn
        print(f"start {turn}", file=real_out, flush=True)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["-C", str(ws), "--continue", "-p", prompt(t), "--memory-wait", "60"])
        # A diagnostic ("pseudoclaude: …") or a failed job is a problem; memory notes are not.
        said = re.search(r"failed|^pseudoclaude:", err.getvalue(), re.M)
        ok = code == 0 and out.getvalue() == answer(t) + "\n" and not said
        why = "" if ok else " " + json.dumps(err.getvalue().strip()[-400:])
        print(f"done {turn} {code} {'ok' if ok else 'bad'}{why}", file=real_out, flush=True)
    return 0


@dataclass
class KillPlan:
    turn: int
    phase: str
    at: int  # streaming: the SSE event held; apply: the file change killed at; any moment: ms after its start
    gate: Gate | None = None


def _kill_plans(rng: random.Random, turns: int, kills: int) -> list[KillPlan]:
    """``kills`` target turns in 1..turns-3 (the last turns run on a normal start), the phases in
    equal shares and random order, each with its random point."""
    kills = min(kills, max(0, turns - 3))
    targets = sorted(rng.sample(range(1, turns - 2), kills))
    phases = [PHASES[i % len(PHASES)] for i in range(kills)]
    rng.shuffle(phases)
    return [
        KillPlan(
            t,
            ph,
            {
                "streaming": rng.randrange(3, 12),
                "apply": rng.randrange(APPLY_OPS),
                "any moment": rng.randrange(300),
            }.get(ph, 0),
        )
        for t, ph in zip(targets, phases, strict=True)
    ]


def _spooled_marks(home: Path) -> set[str]:
    jobs, _bad = spool_jobs(home)
    return {
        t
        for job in jobs.values()
        for tr in job.get("turns", [])
        for m in tr.get("messages", [])
        if m.get("role") == "user"
        for t in MARK_RE.findall(str(m.get("text", "")))
    }


def run_sigkill(root: Path, turns: int = 200, kills: int = 32, seed: int | None = None) -> Result:
    """Stress 2: ``turns`` print-mode turns, ``kills`` of them SIGKILLed (phases in turn)."""
    seed = random.randrange(1 << 30) if seed is None else seed
    rng = random.Random(seed)
    ws = new_workspace(root)
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    started = time.perf_counter()
    pending = _kill_plans(rng, turns, kills)
    lock = threading.Lock()
    active: list[KillPlan] = []  # the plan whose gate the fake may hold a response at
    problems: list[str] = []
    expected: set[str] = set()  # turns whose job was spooled (so must end applied once)
    killed: Counter[str] = Counter()
    starts = 0

    def holding(tags: list[str], phase: str) -> KillPlan | None:
        """The active plan when this response is the one to hold (its turn and phase; once)."""
        with lock:
            plan = active[0] if active else None
            if plan is None or plan.phase != phase or plan.gate is None or plan.gate.hits:
                return None
            return plan if tag("p", plan.turn) in tags else None

    def main_responder(body: Mapping[str, Any]) -> Reply:
        plan = holding(main_tags(body)[-1:], "streaming")
        reply = main_reply(body)
        return reply.held(after=plan.gate, at=plan.at) if plan is not None else reply

    def memory_responder(body: Mapping[str, Any]) -> Reply:
        plan = holding(memory_tags(body), "extraction")
        reply = memory_reply(body)
        if plan is None:
            return reply
        # Held before anything is sent, or in the middle of the answer's stream.
        return reply.held(before=plan.gate) if plan.turn % 2 else reply.held(after=plan.gate, at=3)

    with FakeAnthropic() as server:
        server.respond(MODEL, lambda _b: True, main_responder)
        server.respond(MEMORY_MODEL, lambda _b: True, memory_responder)
        env = child_env(server)
        turn = 0
        last_killed = False
        # Until every turn ran and every kill happened, and a normal start followed the last kill
        # (a kill pushed past the last turn gets turns of its own).
        while turn < turns or last_killed or pending:
            plan = pending[0] if pending else None
            if plan is not None:
                # An earlier kill that landed late may have passed this plan's turn: it moves on.
                plan.turn = max(plan.turn, turn)
            with lock:
                active[:] = [plan] if plan is not None else []
                if plan is not None and plan.phase in ("streaming", "extraction"):
                    plan.gate = Gate(f"kill {plan.turn}", timeout=120)
            args = (
                [str(plan.turn), str(plan.at)] if plan is not None and plan.phase == "apply" else ["-1", "0"]
            )
            errors = root / f"driver-{starts}.err"  # a file: a full stderr pipe would block the driver
            with errors.open("w") as err_file:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.bench.stress",
                        "print",
                        str(ws),
                        str(turn),
                        str(max(turns - 1, turn, plan.turn + 2 if plan is not None else 0)),
                        *args,
                    ],
                    cwd=ROOT,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err_file,
                    text=True,
                )
            starts += 1
            assert proc.stdout is not None
            current = turn
            missed = sent = False
            try:
                # Read to the end, also after the kill: the lines written before it say which turn it hit.
                for line in proc.stdout:
                    word, *rest = line.split(maxsplit=4)
                    if word == "start":
                        current = int(rest[0])
                        if sent or plan is None or plan.turn != current or plan.phase == "apply":
                            continue  # the apply kill: the driver kills itself
                        if plan.gate is not None:
                            missed = not plan.gate.wait_reached(120)
                            if missed:
                                problems.append(
                                    f"turn {current}: the {plan.phase} kill point was never reached"
                                )
                        else:
                            time.sleep(plan.at / 1000)  # any moment: the turn, its start or the next one
                        proc.send_signal(signal.SIGKILL)
                        sent = True
                    elif word == "done":
                        t = int(rest[0])
                        expected.add(tag("p", t))
                        if rest[2] != "ok":
                            problems.append(
                                f"turn {t}: exit {rest[1]}{(' ' + rest[3]) if len(rest) > 3 else ''}"
                            )
                        turn = t + 1
                        if t % 50 == 49:
                            log(f"sigkill: {t + 1} turns, {sum(killed.values())} kills")
            finally:
                if proc.poll() is None:
                    try:
                        proc.wait(300)
                    except subprocess.TimeoutExpired:
                        problems.append(f"turn {current}: the print driver hung; killed")
                        proc.kill()
                        proc.wait()
                with lock:
                    active.clear()
                if plan is not None and plan.gate is not None:
                    plan.gate.release()
            if plan is not None:
                pending.pop(0)
            last_killed = proc.returncode == -signal.SIGKILL
            if proc.returncode == -signal.SIGKILL:
                ours = plan is not None and not missed and (sent or plan.turn == current)
                killed[plan.phase if ours and plan is not None else "?"] += 1
                # What the kill left spooled must be applied by a later start.
                expected |= _spooled_marks(home)
                turn = current + 1
            elif proc.returncode != 0:
                err = errors.read_text(errors="replace")
                problems.append(
                    f"print driver exit {proc.returncode} at turn {current}: {err.strip()[-500:]}"
                )
                turn = current + 1
            elif plan is not None:
                problems.append(f"turn {plan.turn}: the {plan.phase} kill (at {plan.at}) never happened")
        problems += [f"fake API error: {e[-300:]}" for e in server.errors]
        unscripted = [
            r for r in server.requests if r.outcome == "unscripted" or r.outcome.startswith("invalid")
        ]
        problems += [f"fake API: {r.outcome}" for r in unscripted]
    a = audit(ws, home)
    problems += a.problems
    # A turn killed while streaming never completed: its fact may still be kept (its prompt joins
    # the next turn's), but at most once.
    problems += exactly_once(a, expected)
    if a.spooled:
        problems.append(f"{len(a.spooled)} job(s) left in the spool after a normal last start")
    kill_text = ", ".join(f"{killed[p]} {p}" for p in PHASES) + (
        f", {killed['?']} elsewhere" if killed["?"] else ""
    )
    detail = (
        f"{turns} turns, {sum(killed.values())} SIGKILLs ({kill_text}), {starts} starts; "
        f"{sum(a.cards.values())} cards for {len(expected)} spooled jobs; seed {seed}"
    )
    return Result(problems, detail, time.perf_counter() - started, {**killed, "cards": sum(a.cards.values())})


# -- 3. a memory model failing 30 % of the time -----------------------------------------------------------

FAULTS = ("http 500", "garbage", "truncated json", "cut stream", "hang")


class _Records(logging.Handler):
    """Keeps the memory core's log errors (a bug of its own, not a failed request)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            self.errors.append(f"{record.name}: {record.getMessage()}"[:300])


class FlakyMemoryModel:
    """The memory model's responder: a good answer, or (``rate`` of the time) one of FAULTS."""

    def __init__(self, rate: float, seed: int, hang: Gate) -> None:
        self.rng = random.Random(seed)
        self.rate = rate
        self.hang = hang
        self.lock = threading.Lock()
        self.faults: Counter[str] = Counter()
        self.requests = 0

    def __call__(self, body: Mapping[str, Any]) -> Any:
        good = ops_json(memory_tags(body))
        with self.lock:
            self.requests += 1
            fault = self.rng.choice(FAULTS) if self.rng.random() < self.rate else None
            if fault is not None:
                self.faults[fault] += 1
        if fault == "http 500":
            return http_error(500)
        if fault == "garbage":
            return text("I looked at the conversation and I think it went well. Nothing else to add!")
        if fault == "truncated json":
            return text(good[: max(1, len(good) // 2)])
        if fault == "cut stream":
            return truncated(4, reply=text(good, chunk_size=max(1, len(good) // 6)))
        if fault == "hang":
            return text(good, hold_before=self.hang)
        return text(good)


async def flaky_session(
    ws: Path, turns: int, rate: float = 0.3, seed: int = 0, request_timeout: float = 0.4
) -> Result:
    """Stress 3, in this process. Needs HOME/PSEUDOCLAUDE_HOME set."""
    from app.agent.config.settings import load_settings
    from app.agent.memory_bridge.completion import AnthropicCompletion
    from app.agent.runtime import Runtime
    from memory.events import JobApplied, JobFailed, MemoryEvent
    from memory.jobs.manager import Manager

    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    started = time.perf_counter()
    problems: list[str] = []
    with FakeAnthropic() as server, environ(**server.env(), PSEUDOCLAUDE_RETRY_DELAY="0"):
        hang = Gate("hang", timeout=request_timeout + 5)
        flaky = FlakyMemoryModel(rate, seed, hang)
        server.respond(MODEL, lambda _b: True, main_reply)
        server.respond(MEMORY_MODEL, lambda _b: True, flaky)
        settings = load_settings({"memory_mode": "auto"})
        runtime = Runtime(settings, ws)
        # The same manager the runtime builds, with a short request timeout: a hang ends fast.
        runtime.manager = Manager(
            runtime.stores,
            AnthropicCompletion(settings.memory_model),
            mode="auto",
            request_timeout=request_timeout,
            backoff_base=0.0,
        )
        failed_events: dict[str, str] = {}
        applied_events: set[str] = set()

        def on_event(ev: MemoryEvent) -> None:
            if isinstance(ev, JobFailed):
                failed_events[ev.job_id] = ev.reason
            elif isinstance(ev, JobApplied):
                applied_events.add(ev.job_id)

        runtime.manager.subscribe(on_event)
        jobs: list[tuple[str, str]] = []
        # The memory core logs each failed job (a warning, expected here) and its own bugs (errors).
        records = _Records()
        memory_log = logging.getLogger("memory")
        memory_log.addHandler(records)
        try:
            await runtime.open_session()
            for turn in range(turns):
                t = tag("f", turn)
                stop = await runtime.runner.run(prompt(t))
                if stop.status != "completed" or stop.text != answer(t) or not stop.job_id:
                    problems.append(f"turn {t} failed: {stop.status} {stop.message!r}")
                if stop.job_id:
                    jobs.append((t, stop.job_id))
                if turn % 50 == 49:
                    log(f"flaky model: {turn + 1} turns")
            unfinished = 0
            for _t, job_id in jobs:
                outcome = await runtime.manager.wait_for(job_id, 120)
                unfinished += not outcome.finished
            if unfinished:
                problems.append(f"{unfinished} job(s) neither applied nor failed after 120 s")
        finally:
            await runtime.close(0)
            hang.release()
            memory_log.removeHandler(records)
        problems += [f"fake API error: {e[-300:]}" for e in server.errors]
    problems += [f"memory logged an error: {r}" for r in records.errors]
    a = audit(ws, home)
    problems += a.problems
    failed = a.spooled_tags("failed")
    queued = {j for j, job in a.spooled.items() if job.get("state") != "failed"}
    if queued:
        problems.append(f"{len(queued)} job(s) still queued or held at the end")
    for j, job in a.spooled.items():
        if job.get("state") == "failed":
            if not job.get("error"):
                problems.append(f"job {j}: failed without a reason")
            if j not in failed_events:
                problems.append(f"job {j}: failed without a JobFailed event")
    for t, _job_id in jobs:
        n = a.cards[t] + failed[t]
        if n == 0:
            problems.append(f"turn {t}: its job vanished (no card, no failed job)")
        elif n > 1:
            problems.append(f"turn {t}: {a.cards[t]} card(s) and {failed[t]} failed job(s)")
    problems += [p for p in exactly_once(a, set()) if "lost" not in p]
    fault_text = ", ".join(f"{flaky.faults[f]} {f}" for f in FAULTS)
    applied_turns = sum(1 for t, _ in jobs if a.cards[t])
    detail = (
        f"{turns} turns; {flaky.requests} memory requests, {sum(flaky.faults.values())} failed "
        f"({fault_text}); {applied_turns} turns applied, {sum(failed[t] for t, _ in jobs)} in "
        f"{len(a.spooled)} visibly failed job(s); seed {seed}"
    )
    counts = {
        **flaky.faults,
        "requests": flaky.requests,
        "applied": applied_turns,
        "failed jobs": len(a.spooled),
    }
    return Result(problems, detail, time.perf_counter() - started, counts)


def run_flaky(root: Path, turns: int = 200, rate: float = 0.3, seed: int | None = None) -> Result:
    seed = random.randrange(1 << 30) if seed is None else seed
    return asyncio.run(flaky_session(new_workspace(root), turns, rate, seed))


# -- the figures -----------------------------------------------------------------------------------------


def _figure(name: str, result: Result) -> Figure:
    for p in result.problems[:20]:
        log(f"{name}: {p}")
    more = f"; first: {result.problems[0][:200]}" if result.problems else ""
    return at_most(name, len(result.problems), 0, "", f"{result.detail}; {result.seconds:.0f} s{more}")


def figures(runs: int = 5) -> list[Figure]:
    """The three stress runs at the issue's sizes (``runs`` is not used: each is one long run)."""
    out: list[Figure] = []
    with private_env() as root:
        log("3 app processes × 100 turns …")
        out.append(_figure("stress: 3 apps × 100 turns, jobs applied exactly once", run_app_processes(root)))
    with private_env() as root:
        log("SIGKILL of print mode during 200 turns …")
        out.append(_figure("stress: sigkill in 200 print turns, corrupt or lost jobs", run_sigkill(root)))
    with private_env() as root:
        log("memory model failing 30 % of 200 turns …")
        out.append(
            _figure("stress: 30 % failing memory model, turns failed or jobs vanished", run_flaky(root))
        )
    return out


def _child(argv: list[str]) -> int:
    what = argv[0]
    if what == "app":
        ws, who, turns = Path(argv[1]), argv[2], int(argv[3])
        result = asyncio.run(_app_driver(ws, who, turns))
        print(json.dumps(result), flush=True)
        return 0
    if what == "print":
        return _print_driver(Path(argv[1]), int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]))
    raise SystemExit(f"unknown driver {what!r}")


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
