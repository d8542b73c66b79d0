"""`make bench`, figure 5: start-up.

* First paint: the installed ``.venv/bin/pseudoclaude`` is started in a pseudo-terminal
  (100×30, TERM=xterm-256color, in a workspace with no memory yet) and timed from the spawn to
  the first output that holds its first frame (the prompt's "connecting…": the app draws it in
  its first frame and keeps it until the runtime is open, after the frame). A minimal Textual app
  (one ``Static``) is timed the same way, up to its own text. The two alternate, five runs each.
* The side panel's index: the same spawn on a 160×45 pty (where a person sees the panel), in a
  workspace whose trusted project store holds 20 cards and whose user store (a PSEUDOCLAUDE_HOME
  of its own) holds 20, up to the first output showing the first project card's title (the panel
  lists the index), against the minimal app's first frame at the same size; a variant with 1,000
  user cards is reported. Warm runs: the cards are written just before a first start that lives a
  few seconds (as a person's start right after a change does), and each timed run finds the
  snapshot its previous start left, checked valid before the spawn (app/tui/panel/snapshot.py). A
  cold run (the snapshot deleted: the early read of the stores, a first start ever) precedes each
  and is reported beside it.
* Print mode: ``pseudoclaude -p`` (default settings: memory auto) against the fake Messages API
  in this process, from the spawn to the first byte of the answer on stdout, against
  ``python -c "import anthropic"`` from the spawn to its exit; alternating.
* Imports: the ``memory`` modules that importing the App (``app.tui.app``, everything before its
  first frame; found by importing it, and none found is an error) brings in, imported alone,
  against ``app.tui``, as ``python -c "import …"`` wall times less that of ``python -c pass``
  (the interpreter itself); alternating. The whole memory
  core (every module: pydantic contracts, the worker, the stores), which the runtime imports
  after the first frame, is reported beside it.

Our modules are byte-compiled first (``compileall``), as an installed package is: this machine
sets PYTHONDONTWRITEBYTECODE, so without it every start would compile the app from source while
the libraries it is compared with (Textual) were compiled when they were installed.

    python -m tests.bench fig_startup --no-readme
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.bench.common import Figure, at_most, median, private_env

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"
ROWS, COLS = 30, 100
# The side panel's figures: the size a person measured them at in tmux (the panel has room there).
PANEL_ROWS, PANEL_COLS = 45, 160
# A warm-up start lives this long after its first frame, as a person's does: a snapshot refused
# for stores changed just before it is written once they are past the racy window (2 s).
WARM_UP_HOLD_S = 3.0
_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

PANEL_MARK = "Panelmark first card"
PANEL_CARDS = (20, 20)  # project, user: the target's workspace
BIG_USER = 1_000  # user cards of the reported variant

MINIMAL_APP = """\
from textual.app import App, ComposeResult
from textual.widgets import Static


class Minimal(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("minimal app ready")


Minimal().run()
"""


def _log(msg: str) -> None:
    print(f"  fig_startup: {msg}", file=sys.stderr, flush=True)


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def first_paint(
    argv: list[str],
    marker: bytes,
    cwd: Path,
    timeout: float = 30.0,
    extra_env: dict[str, str] | None = None,
    *,
    size: tuple[int, int] = (ROWS, COLS),
    hold: float = 0.0,
) -> float:
    """Seconds from spawning ``argv`` on a new pseudo-terminal of ``size`` (rows, columns) to the
    first output holding ``marker`` (escape sequences removed); the process is killed then, or
    ``hold`` seconds later (its output read meanwhile)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", **(extra_env or {})}
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True
    )
    os.close(slave)
    seen = b""
    try:
        while True:
            left = started + timeout - time.perf_counter()
            if left <= 0:
                raise RuntimeError(
                    f"{argv[0]}: no {marker!r} on the terminal after {timeout:g} s: {seen[-300:]!r}"
                )
            ready, _, _ = select.select([master], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the process ended
                chunk = b""
            if not chunk:
                raise RuntimeError(f"{argv[0]} ended before drawing {marker!r}: {seen[-300:]!r}")
            seen += chunk
            if marker in _ESCAPES.sub(b"", seen):
                seconds = time.perf_counter() - started
                end = time.perf_counter() + hold
                while (left := end - time.perf_counter()) > 0:
                    if select.select([master], [], [], left)[0]:
                        try:
                            if not os.read(master, 65536):
                                break
                        except OSError:
                            break
                return seconds
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)
        os.close(master)


def first_byte(argv: list[str], cwd: Path, timeout: float = 60.0) -> float:
    """Seconds from spawning ``argv`` to its first byte on stdout; then waits for its exit."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        seconds = time.perf_counter() - started
        first = os.read(proc.stdout.fileno(), 1) if ready else b""
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    if not first or proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:3])}: exit {proc.returncode}, stdout {first + out!r}, "
            f"stderr {err.decode(errors='replace')[-300:]!r}"
        )
    return seconds


def wall(argv: list[str], cwd: Path) -> float:
    """Seconds from spawning ``argv`` to its exit (which must be 0)."""
    started = time.perf_counter()
    subprocess.run(
        argv,
        cwd=cwd,
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    return time.perf_counter() - started


def _memory_modules() -> list[str]:
    return sorted(f"memory.{p.stem}" for p in (ROOT / "memory").glob("*.py") if p.stem != "__init__")


def _first_frame_memory_modules() -> list[str]:
    """The memory modules that importing the App (``app.tui.app``, not the empty package
    ``app.tui``) loads: its first frame needs no more. None found is an error, not a 0."""
    probe = (
        "import sys, app.tui.app; "
        "print(' '.join(sorted(m for m in sys.modules if m == 'memory' or m.startswith('memory.'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True)
    found = out.stdout.split()
    if not found:
        raise RuntimeError("importing app.tui.app loaded no memory module: the probe is wrong")
    return found


def card_workspace(root: Path, name: str, project: int, user: int) -> tuple[Path, Path]:
    """A workspace (``root/name``) whose project store holds ``project`` trusted cards, and a
    PSEUDOCLAUDE_HOME of its own whose user store holds ``user`` cards (written as files, as
    ``write_note`` does). Returns (workspace, home). The first project card's title is
    ``PANEL_MARK``: the panel shows it once it lists the index."""
    from memory.constants import Level, NoteType
    from memory.store.stores import MemoryStores
    from tests.support.memtools import trust_workspace, write_note

    ws, home = root / name, root / f"{name}-home"
    (ws / ".git").mkdir(parents=True)
    home.mkdir()
    stores = MemoryStores(os.path.realpath(ws), home)
    for level, count, tag in ((Level.PROJECT, project, "P"), (Level.USER, user, "U")):
        for i in range(count):
            title = PANEL_MARK if (level, i) == (Level.PROJECT, 0) else f"Bench card {tag}{i:04d}"
            write_note(
                stores,
                level,
                f"project_knowledge_bench-{tag.lower()}{i:04d}.md",
                title,
                f"Body of card {tag}{i}.",
                NoteType.PROJECT_KNOWLEDGE,
                summary=f"what {tag}{i} says",
            )
    trust_workspace(ws, home)
    return ws, home


def snapshot_ready(ws: Path, home: Path, *, cold: bool = False) -> None:
    """Before a timed panel run: the snapshot the previous start left is there and valid (warm),
    or (``cold``) deleted. An invalid one is an error: the run would not measure what it says."""
    from app.services.panel_snapshot import snapshot_path
    from app.tui.panel.snapshot import read_snapshot

    if cold:
        snapshot_path(home, ws).unlink(missing_ok=True)
    elif read_snapshot(home, ws) is None:
        raise RuntimeError(f"no valid panel snapshot for {ws} before a warm run")


def byte_compile() -> None:
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "app", "memory", "widgets"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def figures(runs: int = 5) -> list[Figure]:
    """First paint, print mode's first byte, and the memory package's imports."""
    from tests.support.fakeapi import FakeAnthropic, text

    paint: dict[str, list[float]] = {
        "app": [],
        "minimal": [],
        "minimal_wide": [],
        "panel": [],
        "panel_big": [],
        "panel_cold": [],
    }
    answer: dict[str, list[float]] = {"print": [], "sdk": []}
    imports: dict[str, list[float]] = {"memory": [], "core": [], "app": [], "bare": []}
    py = sys.executable
    byte_compile()
    first_frame = _first_frame_memory_modules()
    memory_import = "import " + ", ".join(first_frame or ["memory"])
    core_import = "import " + ", ".join(_memory_modules())
    with private_env() as root, FakeAnthropic() as server:
        ws = root / "ws"
        (ws / ".git").mkdir(parents=True)
        minimal = root / "minimal_app.py"
        minimal.write_text(MINIMAL_APP, encoding="utf-8")
        cards_ws, cards_home = card_workspace(root, "cards", *PANEL_CARDS)
        big_ws, big_home = card_workspace(root, "big", PANEL_CARDS[0], BIG_USER)
        mark = PANEL_MARK.encode()
        for w, h in ((cards_ws, cards_home), (big_ws, big_home)):
            # As a person's first start right after the cards were written (not dated back): the
            # warm-up start (not timed) must leave the snapshot all the same. The small store's
            # cold run below leaves its own before each warm run.
            first_paint(
                [_bin("pseudoclaude"), "-C", str(w)],
                mark,
                w,
                extra_env={"PSEUDOCLAUDE_HOME": str(h)},
                size=(PANEL_ROWS, PANEL_COLS),
                hold=WARM_UP_HOLD_S,
            )
        server.respond(MODEL, lambda body: True, text("The answer is 42."))
        server.respond(MEMORY_MODEL, lambda body: True, text("[]"))
        os.environ.update(server.env())
        for run in range(runs):
            paint["app"].append(first_paint([_bin("pseudoclaude"), "-C", str(ws)], b"connecting", ws))
            paint["minimal"].append(first_paint([py, str(minimal)], b"minimal app ready", ws))
            paint["minimal_wide"].append(
                first_paint([py, str(minimal)], b"minimal app ready", ws, size=(PANEL_ROWS, PANEL_COLS))
            )
            for key, w, h, cold in (
                ("panel_cold", cards_ws, cards_home, True),
                ("panel", cards_ws, cards_home, False),
                ("panel_big", big_ws, big_home, False),
            ):
                snapshot_ready(w, h, cold=cold)
                paint[key].append(
                    first_paint(
                        [_bin("pseudoclaude"), "-C", str(w)],
                        mark,
                        w,
                        extra_env={"PSEUDOCLAUDE_HOME": str(h)},
                        size=(PANEL_ROWS, PANEL_COLS),
                    )
                )
            answer["print"].append(
                first_byte([_bin("pseudoclaude"), "-C", str(ws), "-p", "what is the answer?"], ws)
            )
            answer["sdk"].append(wall([py, "-c", "import anthropic"], ws))
            imports["memory"].append(wall([py, "-c", memory_import], ROOT))
            imports["core"].append(wall([py, "-c", core_import], ROOT))
            imports["app"].append(wall([py, "-c", "from app.tui.app import PseudoClaudeApp"], ROOT))
            imports["bare"].append(wall([py, "-c", "pass"], ROOT))
            _log(
                f"run {run + 1}/{runs}: first paint {paint['app'][-1]:.2f} s "
                f"vs {paint['minimal'][-1]:.2f} s, panel index {paint['panel'][-1]:.2f} s "
                f"(no snapshot: {paint['panel_cold'][-1]:.2f} s; "
                f"{BIG_USER:,} user cards: {paint['panel_big'][-1]:.2f} s), "
                f"first byte {answer['print'][-1]:.2f} s vs SDK import {answer['sdk'][-1]:.2f} s"
            )
    p = {k: median(v) for k, v in paint.items()}
    a = {k: median(v) for k, v in answer.items()}
    i = {k: median(v) for k, v in imports.items()}
    return _rows(p, a, i, runs, first_frame)


def _rows(
    p: dict[str, float], a: dict[str, float], i: dict[str, float], runs: int, first_frame: list[str]
) -> list[Figure]:
    mem, core, app = i["memory"] - i["bare"], i["core"] - i["bare"], i["app"] - i["bare"]
    return [
        at_most(
            "start-up: first paint, pseudoclaude / minimal Textual app",
            p["app"] / p["minimal"],
            1.5,
            "×",
            f"spawn to first frame on a {COLS}×{ROWS} pty, medians of {runs}: "
            f"{p['app']:.3f} s vs {p['minimal']:.3f} s",
        ),
        at_most(
            "start-up: side panel shows the index, pseudoclaude / minimal Textual app's first frame",
            p["panel"] / p["minimal_wide"],
            1.5,
            "×",
            f"spawn to the first frame whose panel lists a card ({PANEL_CARDS[0]} trusted project + "
            f"{PANEL_CARDS[1]} user cards) on a {PANEL_COLS}×{PANEL_ROWS} pty against the minimal app "
            f"at that size, warm runs (the panel snapshot the previous start left, checked valid before "
            f"each; the cards written just before the first start, as a person's are), medians of {runs}: "
            f"{p['panel']:.3f} s vs {p['minimal_wide']:.3f} s",
        ),
        Figure(
            "start-up: side panel shows the index without a snapshot / minimal Textual app",
            p["panel_cold"] / p["minimal_wide"],
            "×",
            "reported",
            True,
            f"as the row above with the snapshot deleted before each run (the early read of the stores; a "
            f"first start ever): {p['panel_cold']:.3f} s vs {p['minimal_wide']:.3f} s",
        ),
        Figure(
            f"start-up: side panel shows the index with {BIG_USER:,} user cards / minimal Textual app",
            p["panel_big"] / p["minimal_wide"],
            "×",
            "reported",
            True,
            f"as the warm row above with {BIG_USER:,} user cards: {p['panel_big']:.3f} s vs "
            f"{p['minimal_wide']:.3f} s",
        ),
        at_most(
            "start-up: print mode first answer byte minus SDK import",
            a["print"] - a["sdk"],
            0.5,
            "s",
            f"`pseudoclaude -p` (memory auto, fake API) spawn to first stdout byte vs "
            f'`python -c "import anthropic"`, medians of {runs}: {a["print"]:.3f} s vs {a["sdk"]:.3f} s',
        ),
        at_most(
            "start-up: import memory / import the App",
            mem / app,
            0.25,
            "×",
            f"the {len(first_frame)} memory modules the App imports ({', '.join(first_frame)}) vs app.tui, "
            f"wall time less the bare interpreter ({i['bare']:.3f} s), medians of {runs}: "
            f"{mem:.3f} s vs {app:.3f} s",
        ),
        Figure(
            "start-up: import the whole memory core / import the App",
            core / app,
            "×",
            "reported",
            True,
            f"all {len(_memory_modules())} memory modules (pydantic contracts, worker, stores; the "
            f"runtime imports them after the first frame) vs app.tui: {core:.3f} s vs {app:.3f} s",
        ),
    ]
