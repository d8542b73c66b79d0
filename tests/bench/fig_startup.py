"""`make bench`, figure 5: start-up.

* First paint: the installed ``.venv/bin/pseudoclaude`` is started in a pseudo-terminal
  (100×30, TERM=xterm-256color, in a workspace with no memory yet) and timed from the spawn to
  the first output that holds its first frame (the prompt's "connecting…": the app draws it in
  its first frame and keeps it until the runtime is open, after the frame). A minimal Textual app
  (one ``Static``) is timed the same way, up to its own text. The two alternate, five runs each.
* Print mode: ``pseudoclaude -p`` (default settings: memory auto) against the fake Messages API
  in this process, from the spawn to the first byte of the answer on stdout, against
  ``python -c "import anthropic"`` from the spawn to its exit; alternating.
* Imports: the ``memory`` modules that importing the App (``app.tui``, everything before its
  first frame) brings in, imported alone, against ``app.tui``, as ``python -c "import …"`` wall
  times less that of ``python -c pass`` (the interpreter itself); alternating. The whole memory
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
_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

MINIMAL_APP = '''\
from textual.app import App, ComposeResult
from textual.widgets import Static


class Minimal(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("minimal app ready")


Minimal().run()
'''


def _log(msg: str) -> None:
    print(f"  fig_startup: {msg}", file=sys.stderr, flush=True)


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def first_paint(argv: list[str], marker: bytes, cwd: Path, timeout: float = 30.0) -> float:
    """Seconds from spawning ``argv`` on a new pseudo-terminal to the first output holding
    ``marker`` (escape sequences removed); the process is killed then."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                            start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        while True:
            left = started + timeout - time.perf_counter()
            if left <= 0:
                raise RuntimeError(f"{argv[0]}: no {marker!r} on the terminal after {timeout:g} s: {seen[-300:]!r}")
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
                return time.perf_counter() - started
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
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
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
        raise RuntimeError(f"{' '.join(argv[:3])}: exit {proc.returncode}, stdout {first + out!r}, "
                           f"stderr {err.decode(errors='replace')[-300:]!r}")
    return seconds


def wall(argv: list[str], cwd: Path) -> float:
    """Seconds from spawning ``argv`` to its exit (which must be 0)."""
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=60)
    return time.perf_counter() - started


def _memory_modules() -> list[str]:
    return sorted(f"memory.{p.stem}" for p in (ROOT / "memory").glob("*.py") if p.stem != "__init__")


def _first_frame_memory_modules() -> list[str]:
    """The memory modules that importing the App loads (its first frame needs no more)."""
    probe = "import sys, app.tui; print(' '.join(sorted(m for m in sys.modules if m.startswith('memory.'))))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True)
    return out.stdout.split()


def byte_compile() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", "app", "memory", "widgets"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def figures(runs: int = 5) -> list[Figure]:
    """Issue 10 figure 5: first paint, print mode's first byte, and the memory package's imports."""
    from tests.support.fakeapi import FakeAnthropic, text

    paint: dict[str, list[float]] = {"app": [], "minimal": []}
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
        server.respond(MODEL, lambda body: True, text("The answer is 42."))
        server.respond(MEMORY_MODEL, lambda body: True, text("[]"))
        os.environ.update(server.env())
        for run in range(runs):
            paint["app"].append(first_paint([_bin("pseudoclaude"), "-C", str(ws)], b"connecting", ws))
            paint["minimal"].append(first_paint([py, str(minimal)], b"minimal app ready", ws))
            answer["print"].append(first_byte([_bin("pseudoclaude"), "-C", str(ws), "-p", "what is the answer?"], ws))
            answer["sdk"].append(wall([py, "-c", "import anthropic"], ws))
            imports["memory"].append(wall([py, "-c", memory_import], ROOT))
            imports["core"].append(wall([py, "-c", core_import], ROOT))
            imports["app"].append(wall([py, "-c", "from app.tui.app import PseudoClaudeApp"], ROOT))
            imports["bare"].append(wall([py, "-c", "pass"], ROOT))
            _log(f"run {run + 1}/{runs}: first paint {paint['app'][-1]:.2f} s vs {paint['minimal'][-1]:.2f} s, "
                 f"first byte {answer['print'][-1]:.2f} s vs SDK import {answer['sdk'][-1]:.2f} s")
    p = {k: median(v) for k, v in paint.items()}
    a = {k: median(v) for k, v in answer.items()}
    i = {k: median(v) for k, v in imports.items()}
    mem, core, app = i["memory"] - i["bare"], i["core"] - i["bare"], i["app"] - i["bare"]
    return [
        at_most("start-up: first paint, pseudoclaude / minimal Textual app", p["app"] / p["minimal"], 1.5, "×",
                f"spawn to first frame on a {COLS}×{ROWS} pty, medians of {runs}: "
                f"{p['app']:.3f} s vs {p['minimal']:.3f} s"),
        at_most("start-up: print mode first answer byte minus SDK import", a["print"] - a["sdk"], 0.5, "s",
                f"`pseudoclaude -p` (memory auto, fake API) spawn to first stdout byte vs "
                f"`python -c \"import anthropic\"`, medians of {runs}: {a['print']:.3f} s vs {a['sdk']:.3f} s"),
        at_most("start-up: import memory / import the App", mem / app, 0.25, "×",
                f"the {len(first_frame)} memory modules the App imports ({', '.join(first_frame)}) vs app.tui, "
                f"wall time less the bare interpreter ({i['bare']:.3f} s), medians of {runs}: "
                f"{mem:.3f} s vs {app:.3f} s"),
        Figure("start-up: import the whole memory core / import the App", core / app, "×", "reported", True,
               f"all {len(_memory_modules())} memory modules (pydantic contracts, worker, stores; the runtime imports "
               f"them after the first frame) vs app.tui: {core:.3f} s vs {app:.3f} s"),
    ]
