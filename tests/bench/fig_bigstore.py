"""`make bench`: start-up with a 10,000-card project store against an empty one.

The installed ``.venv/bin/pseudoclaude`` runs in a private tmux server (100×30, the fake
Messages API as its endpoint) and is timed from the spawn to a usable screen:

* empty store, and a 10,000-card store that is trusted: the first frame, then a marker typed
  into the prompt shown back (the prompt takes keys from its first frame; a loop busy loading
  the store would echo late);
* a 10,000-card store that came with a clone (untrusted): the trust window on the screen (what
  takes the keys then).

Reported beside them: the trust window of the 10,000-card clone against that of a clone with one
card (what the store's size costs, apart from asking at all), and the time to "connected" (the
prompt's "connecting…" gone: the SDK is loaded and the session opened with the index built from
the cards), empty against trusted.

The store is written once (tests/bench/bigstore.py) and shared by the runs; every run gets a new
``PSEUDOCLAUDE_HOME`` (the trusted variant records trust in it first). The variants alternate,
A B C D A B C D …, medians of ``runs``; the figures are the ratios to the empty store (target ≤ 1.5×).
The screen is polled every 20 ms, the resolution of these times. Our modules are byte-compiled
first, as an installed package is (see fig_startup).

    python -m tests.bench fig_bigstore --no-readme
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.bench.bigstore import make_big_store
from tests.bench.common import Figure, at_most, median, private_env
from tests.bench.fig_startup import byte_compile

ROOT = Path(__file__).resolve().parents[2]
COLS, ROWS = 100, 30
CARDS = 10_000
MARKER = "zq7"
TMUX_CONF = "set -g status off\nset -g remain-on-exit on\nset -g escape-time 10\n"


def _log(msg: str) -> None:
    print(f"  fig_bigstore: {msg}", file=sys.stderr, flush=True)


class _Tmux:
    def __init__(self, conf: Path) -> None:
        self.args = ["tmux", "-L", f"pcbench-{os.getpid()}-{uuid.uuid4().hex[:6]}", "-f", str(conf)]

    def run(self, *args: str) -> str:
        return subprocess.run([*self.args, *args], capture_output=True, text=True, timeout=15).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "b")

    def dead(self) -> bool:
        return self.run("display-message", "-p", "-t", "b", "#{pane_dead}").strip() == "1"

    def wait(self, predicate: Callable[[str], bool], what: str, timeout: float = 60.0) -> float:
        deadline = time.perf_counter() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return time.perf_counter()
            if self.dead() or time.perf_counter() > deadline:
                raise RuntimeError(f"no {what} after {timeout:g} s; screen:\n{screen}")
            time.sleep(0.02)  # the poll interval (the figure's resolution), not a synchronisation

    def kill(self) -> None:
        subprocess.run([*self.args, "kill-server"], capture_output=True, timeout=15)


def usable(conf: Path, workspace: Path, env: dict[str, str], *, trust_window: bool) -> tuple[float, float]:
    """Seconds from spawning the app to a usable screen (see the module's docstring), and to
    connected (nan for the trust window)."""
    tmux = _Tmux(conf)
    argv = [str(Path(sys.executable).parent / "pseudoclaude"), "-C", str(workspace)]
    try:
        started = time.perf_counter()
        subprocess.run(
            [
                *tmux.args,
                "new-session",
                "-d",
                "-s",
                "b",
                "-x",
                str(COLS),
                "-y",
                str(ROWS),
                "-c",
                str(workspace),
                shlex.join(argv),
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=15,
        )
        if trust_window:
            return tmux.wait(lambda s: "Trust this project's memory?" in s, "trust window") - started, float(
                "nan"
            )
        tmux.wait(lambda s: "seen by the next turn" in s, "first frame")
        tmux.run("send-keys", "-t", "b", "-l", MARKER)
        echoed = tmux.wait(lambda s: MARKER in s, "typed marker") - started
        return echoed, tmux.wait(lambda s: "connecting" not in s, "connected") - started
    finally:
        tmux.kill()


def figures(runs: int = 5) -> list[Figure]:
    from tests.support.fakeapi import FakeAnthropic  # the endpoint the SDK is pointed at (no turn is sent)

    if shutil.which("tmux") is None:
        raise RuntimeError("tmux is required for this figure")
    byte_compile()
    times: dict[str, list[float]] = {"empty": [], "trusted": [], "untrusted": [], "clone1": []}
    connected: dict[str, list[float]] = {"empty": [], "trusted": []}
    with private_env() as root, FakeAnthropic() as server, tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "tmux.conf"
        conf.write_text(TMUX_CONF, encoding="utf-8")
        empty = Path(os.path.realpath(root / "empty"))
        (empty / ".git").mkdir(parents=True)
        big = Path(os.path.realpath(root / "big"))
        make_big_store(big, CARDS)
        small = Path(os.path.realpath(root / "small"))
        make_big_store(small, 1)
        base = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        base.update(server.env())
        base["TERM"] = "xterm-256color"
        for run in range(runs):
            for variant in ("empty", "trusted", "untrusted", "clone1"):
                home = Path(tempfile.mkdtemp(dir=root))
                env = {**base, "HOME": str(home), "PSEUDOCLAUDE_HOME": str(home / ".PseudoClaude")}
                if variant == "trusted":
                    subprocess.run(
                        [
                            sys.executable,
                            "-c",
                            "import sys; from memory.store.stores import MemoryStores; "
                            "MemoryStores(sys.argv[1]).trust_project()",
                            str(big),
                        ],
                        cwd=ROOT,
                        env=env,
                        check=True,
                        timeout=60,
                    )
                workspace = {"empty": empty, "clone1": small}.get(variant, big)
                shown, ready = usable(conf, workspace, env, trust_window=variant in ("untrusted", "clone1"))
                times[variant].append(shown)
                if variant in connected:
                    connected[variant].append(ready)
            _log(
                f"run {run + 1}/{runs}: empty {times['empty'][-1]:.2f} s, "
                f"trusted 10k {times['trusted'][-1]:.2f} s, "
                f"untrusted 10k (trust window) {times['untrusted'][-1]:.2f} s, "
                f"1-card clone {times['clone1'][-1]:.2f} s"
            )
    m = {k: median(v) for k, v in times.items()}
    c = {k: median(v) for k, v in connected.items()}
    detail = (
        f"spawn to a usable screen in tmux ({COLS}×{ROWS}, fake API), medians of {runs}, "
        f"the variants alternating: "
        f"empty store {m['empty']:.2f} s"
    )
    return [
        at_most(
            "start-up: 10,000-card trusted store / empty store, to a prompt that echoes keys",
            m["trusted"] / m["empty"],
            1.5,
            "×",
            f"{detail}, {CARDS:,} trusted cards {m['trusted']:.2f} s",
        ),
        at_most(
            "start-up: 10,000-card cloned store / empty store, to the trust window",
            m["untrusted"] / m["empty"],
            1.5,
            "×",
            f"{detail}, {CARDS:,} untrusted cards {m['untrusted']:.2f} s",
        ),
        Figure(
            "start-up: 10,000-card cloned store / 1-card cloned store, to the trust window",
            m["untrusted"] / m["clone1"],
            "×",
            "reported",
            True,
            f"the same window, medians of {runs}: {m['untrusted']:.2f} s vs {m['clone1']:.2f} s",
        ),
        Figure(
            "start-up: 10,000-card trusted store / empty store, to connected",
            c["trusted"] / c["empty"],
            "×",
            "reported",
            True,
            f'spawn to the prompt\'s "connecting…" gone (SDK loaded, session opened), medians '
            f"of {runs}: {c['trusted']:.2f} s vs {c['empty']:.2f} s",
        ),
    ]
