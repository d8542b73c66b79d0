"""The real `pseudoclaude` (no -p) in a real terminal: tmux, the fake Messages API, the real SDK.

Pilot tests drive the App in-process; this one proves the installed entry point opens the full-screen
app in a terminal, that typed keys reach it, and that what a user reads (the streamed answer, the
memory panel refreshed by the job the turn started) is really on the screen, and that escape
sequences in model text never reach the real terminal. tmux runs on a private
socket with its own config, so a user's tmux server and ~/.tmux.conf are never touched.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, ROOT, cli_env, create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, text
from widgets.dialogs.decision import QUIET_S, SETTLE_S

pytestmark = pytest.mark.timeout(120)

WIDTH, HEIGHT = 100, 30
PROMPT = "How do I build this project?"
ANSWER = "The build command is make build."
CARD_TITLE = "Build with make"
# Loaded when the private server starts: no status bar (the app gets all 30 rows), a dead pane stays
# readable (a crash's traceback can be shown), and Esc reaches the app without tmux's 500 ms wait.
TMUX_CONF = "set -g status off\nset -g remain-on-exit on\nset -g escape-time 10\nset -g history-limit 5000\n"


class Tmux:
    """One detached session on a private tmux server, read with capture-pane."""

    def __init__(self, conf: Path) -> None:
        self.socket = f"pcsmoke-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.target = "smoke"
        self.conf = conf

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.conf), *args],
            capture_output=True,
            text=True,
            timeout=15,
            check=check,
        )

    def start(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        # The private server starts with this environment, so the pane gets exactly it.
        subprocess.run(
            [
                "tmux",
                "-L",
                self.socket,
                "-f",
                str(self.conf),
                "new-session",
                "-d",
                "-s",
                self.target,
                "-x",
                str(WIDTH),
                "-y",
                str(HEIGHT),
                "-c",
                str(cwd),
                shlex.join(command),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=15,
            check=True,
        )

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.target).stdout

    def send_text(self, value: str) -> None:
        self.run("send-keys", "-t", self.target, "-l", value)

    def send_key(self, key: str) -> None:
        self.run("send-keys", "-t", self.target, key)

    def pane(self) -> tuple[bool, str, bool]:
        """(dead, exit status, alternate screen on): a full-screen app runs on the alternate screen."""
        out = self.run(
            "display-message", "-p", "-t", self.target, "#{pane_dead} #{pane_dead_status} #{alternate_on}"
        ).stdout.split()
        dead = out[0] == "1"
        return dead, out[1] if dead else "", out[-1] == "1"

    def kill(self) -> None:
        self.run("kill-server", check=False)

    def anew(self) -> None:
        """Kill this server and take a new one for the next ``start``: a killed server may still be
        going away (its socket there) when the next ``new-session`` would reach it."""
        self.kill()
        self.socket = f"pcsmoke-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def wait_for(self, predicate: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        """Poll until the app is running full-screen and ``predicate`` holds for its screen.

        The app must still be alive: text typed into a pane whose program already printed and left
        would be echoed by the terminal and could satisfy a predicate on its own.
        """
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            dead, status, alternate = self.pane()
            if dead:
                pytest.fail(f"pseudoclaude exited (status {status}) before {what}; screen:\n{screen}")
            if alternate and predicate(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(
                    f"timed out after {timeout}s waiting for {what} (alternate screen "
                    f"{'on' if alternate else 'off'}); screen:\n{screen}"
                )
            time.sleep(0.1)  # a poll interval, not a synchronisation: the predicate decides


def pseudoclaude_exe() -> Path:
    """The entry point installed next to the interpreter running the tests (the .venv's)."""
    exe = Path(sys.executable).parent / "pseudoclaude"
    assert exe.exists(), f"{exe} is missing: install the project (`make test` does) before this test"
    return exe


def open_tmux(folder: Path) -> Tmux:
    """A private tmux server's session (not started yet), its config written into ``folder``."""
    assert shutil.which("tmux"), "tmux is required for the smoke test (.ci/run installs it)"
    conf = folder / "tmux.conf"
    conf.write_text(TMUX_CONF)
    return Tmux(conf)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    session = open_tmux(tmp_path)
    try:
        yield session
    finally:
        session.kill()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    w = tmp_path / "repo"
    (w / ".git").mkdir(parents=True)
    (w / "README.md").write_text("# demo\n")
    return Path(os.path.realpath(w))


def start_app(
    tmux: Tmux,
    server: FakeAnthropic,
    workspace: Path,
    *flags: str,
    exe: Path | None = None,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
) -> str:
    """Start ``exe`` (default: the .venv's entry point) in ``cwd`` and return its first ready screen."""
    if env is None:
        env = cli_env(server)
    env = {k: v for k, v in env.items() if not k.startswith("TMUX")}
    tmux.start([str(exe or pseudoclaude_exe()), "-C", str(workspace), *flags], env, cwd=cwd)
    # Sending is disabled (status "connecting…") until the SDK is loaded off the main thread. The
    # status line is the frame's last row: with it on the screen, a frame is not drawn halfway
    # (a capture in the middle of the first frame has no "connecting" either).
    return tmux.wait_for(
        lambda s: "memory " in (s.strip().splitlines() or [""])[-1] and "connecting" not in s,
        "the app to be ready",
    )


def colour_env(server: FakeAnthropic, no_color: bool) -> dict[str, str]:
    """The app's environment with NO_COLOR (https://no-color.org) set, or surely unset."""
    env = {k: v for k, v in cli_env(server).items() if k != "NO_COLOR"}
    return env | {"NO_COLOR": "1"} if no_color else env


# Each drawing path once in colour and once as NO_COLOR's monochrome (Textual filters every segment).
COLOURS = pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])


def ask(tmux: Tmux, server: FakeAnthropic, prompt: str) -> None:
    tmux.send_text(prompt)
    tmux.wait_for(lambda s: prompt in s, "the typed prompt to show")
    tmux.send_key("Enter")
    server.wait_for_requests(1, model=MODEL, timeout=15)


def quit_app(tmux: Tmux) -> None:
    """Ctrl+Q ends the process with status 0 (the pane stays, dead, thanks to remain-on-exit)."""
    tmux.send_key("C-q")
    deadline = time.monotonic() + 20
    while not (state := tmux.pane())[0]:
        if time.monotonic() > deadline:
            pytest.fail(f"Ctrl+Q did not quit within 20 s; screen:\n{tmux.screen()}")
        time.sleep(0.1)
    assert state[1] == "0", f"exit status {state[1]}; screen:\n{tmux.screen()}"


@COLOURS
def test_typed_prompt_streams_answer_and_panel_shows_the_card_the_turn_created(
    tmux: Tmux, workspace: Path, no_color: bool
) -> None:
    with FakeAnthropic() as server:
        server.script(MODEL, text(ANSWER))
        server.script(
            MEMORY_MODEL,
            text(
                ops_answer(
                    create_op(
                        CARD_TITLE, "Run `make build` at the repository root.", summary="make build builds it"
                    )
                )
            ),
        )
        start_app(tmux, server, workspace, env=colour_env(server, no_color))
        ask(tmux, server, PROMPT)
        tmux.wait_for(lambda s: ANSWER in s, "the answer on screen")
        # The answer never names the card: seeing its title means the panel re-read the store.
        screen = tmux.wait_for(lambda s: CARD_TITLE in s, "the memory panel to show the new card")
        assert ANSWER in screen and "Traceback" not in screen
        cards = [p for p in (workspace / ".PseudoClaude" / "memory").glob("*.md") if p.name != "MEMORY.md"]
        assert any(CARD_TITLE in p.read_text() for p in cards), [p.name for p in cards]
        assert len(server.requests_for(MEMORY_MODEL)) == 1
        assert server.unscripted() == []
        quit_app(tmux)
        assert not server.errors, server.errors[0]


def test_escape_sequences_in_an_answer_never_reach_the_real_terminal(tmux: Tmux, workspace: Path) -> None:
    # An OSC 0 would retitle the terminal (tmux keeps it as the pane title), CSI 2J clear it,
    # SGR recolour what follows: stripped, only the words are left.
    hostile = "Safe\x1b]0;pwned-title\x07 and \x1b[31mred\x1b[0m text\x1b[2J end."
    with FakeAnthropic() as server:
        server.script(MODEL, text(hostile))
        server.script(MEMORY_MODEL, text("[]"))
        start_app(tmux, server, workspace)
        title_before = tmux.run("display-message", "-p", "-t", tmux.target, "#{pane_title}").stdout
        ask(tmux, server, "say something")
        tmux.wait_for(lambda s: "Safe and red text end." in s, "the cleaned answer on screen")
        title_after = tmux.run("display-message", "-p", "-t", tmux.target, "#{pane_title}").stdout
        assert "pwned" not in title_after and title_after == title_before
        quit_app(tmux)


def test_a_bracketed_paste_with_cr_line_ends_is_collapsed_and_sent_with_lf(
    tmux: Tmux, workspace: Path, tmp_path: Path
) -> None:
    # A terminal's paste ends each line in CR: `paste-buffer -p` sends the buffer bracketed, its
    # LFs made CRs (this buffer has CRs only already).
    lines = [f"pasted line {i:04d} " + "x" * 40 for i in range(3000)]
    buffer = tmp_path / "paste.txt"
    buffer.write_bytes("".join(f"{line}\r" for line in lines).encode())
    with FakeAnthropic() as server:
        server.script(MODEL, text(ANSWER))
        server.script(MEMORY_MODEL, text("[]"))
        start_app(tmux, server, workspace)
        tmux.run("load-buffer", "-b", "crpaste", str(buffer))
        tmux.run("paste-buffer", "-p", "-d", "-b", "crpaste", "-t", tmux.target)
        tmux.wait_for(lambda s: "[pasted 3,000 lines," in s, "the paste's placeholder")
        tmux.send_key("Enter")
        server.wait_for_requests(1, model=MODEL, timeout=15)
        screen = tmux.wait_for(lambda s: ANSWER in s, "the answer")
        assert "Traceback" not in screen
        [request] = server.requests_for(MODEL)
        sent = request.body["messages"][-1]["content"][-1]["text"]
        assert "\r" not in sent and sent.count("\n") == 2999
        assert sent == "\n".join(lines)
        quit_app(tmux)
        assert not server.errors, server.errors[0]


def _cards(workspace: Path) -> list[Path]:
    return [p for p in (workspace / ".PseudoClaude" / "memory").glob("*.md") if p.name != "MEMORY.md"]


@COLOURS
def test_pending_screen_in_review_mode_approves_a_held_op(
    tmux: Tmux, workspace: Path, no_color: bool
) -> None:
    with FakeAnthropic() as server:
        server.script(MODEL, text(ANSWER))
        server.script(
            MEMORY_MODEL,
            text(
                ops_answer(
                    create_op(
                        CARD_TITLE, "Run `make build` at the repository root.", summary="make build builds it"
                    ),
                    create_op(
                        "Tests need Docker",
                        "The integration suite starts containers.",
                        summary="docker needed",
                    ),
                )
            ),
        )
        start_app(tmux, server, workspace, "--memory", "review", env=colour_env(server, no_color))
        ask(tmux, server, PROMPT)
        tmux.wait_for(lambda s: "held for review" in s, "the held job in the panel")
        tmux.send_text("/pending")
        tmux.send_key("Enter")
        tmux.wait_for(lambda s: "Pending memory updates" in s and "held · 2 ops" in s, "the pending screen")
        tmux.send_key("Enter")  # expand the job into its operations
        tmux.wait_for(lambda s: f"[held] create · project · {CARD_TITLE}" in s, "the held operations")
        tmux.send_key("Down")
        tmux.wait_for(lambda s: "New card:" in s, "the first op's detail")
        # A person reads it first: a key is an answer only after the typing paused (DecisionGate).
        time.sleep(SETTLE_S + QUIET_S)
        tmux.send_text("a")
        screen = tmux.wait_for(lambda s: "wrote 1 change(s)" in s, "the approval's outcome")
        assert "Traceback" not in screen
        [card] = _cards(workspace)  # exactly the approved op was written
        assert CARD_TITLE in card.read_text()
        tmux.wait_for(lambda s: "held · 1 op" in s, "the other op still held")
        tmux.send_key("Escape")
        tmux.wait_for(
            lambda s: CARD_TITLE in s and "Pending memory updates" not in s, "the chat with the card"
        )
        quit_app(tmux)
        assert not server.errors, server.errors[0]


def test_remember_opens_the_editor_and_ctrl_s_saves_the_card(tmux: Tmux, workspace: Path) -> None:
    with FakeAnthropic() as server:
        start_app(tmux, server, workspace)
        tmux.send_text("/remember Releases are tagged from main only")
        tmux.wait_for(lambda s: "/remember Releases" in s, "the typed command")
        tmux.send_key("Enter")
        tmux.wait_for(lambda s: "New card" in s and "Ctrl+S save" in s, "the editor")
        assert _cards(workspace) == []  # nothing is written before Ctrl+S
        tmux.send_key("C-s")
        screen = tmux.wait_for(lambda s: "saved new project card" in s, "the saved note in the chat")
        [card] = _cards(workspace)
        assert (
            "Releases are tagged from main only" in card.read_text() and "source: manual" in card.read_text()
        )
        assert "Traceback" not in screen
        tmux.wait_for(lambda s: "Releases are tagged" in s and "New card" not in s, "the panel with the card")
        quit_app(tmux)


# Loaded by the app's interpreter (PYTHONPATH): `import anthropic` — the slow part of connecting —
# waits until the test creates the barrier file, so the app is reliably still "connecting…" while
# the test types. Everything else runs as in the product. The wait is in the module's execution,
# as a slow import's is: a finder's `find_spec` runs under the interpreter's global import lock,
# and waiting there froze every other import (the App's first Enter imports the chat's blocks)
# until the barrier, which the test only creates after that Enter is drawn.
_HOLD_SDK = """
import importlib.abc, importlib.machinery, os, sys, time

class _Held(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real
    def __getattr__(self, name):
        return getattr(self.real, name)
    def create_module(self, spec):
        return self.real.create_module(spec)
    def exec_module(self, module):
        while not os.path.exists(os.environ["PSEUDOCLAUDE_TEST_SDK_BARRIER"]):
            time.sleep(0.02)
        self.real.exec_module(module)

class _HoldSDK(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "anthropic":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Held(spec.loader)
        return spec

sys.meta_path.insert(0, _HoldSDK())
"""


def test_a_prompt_sent_right_after_the_first_frame_while_connecting_is_queued_then_answered(
    tmux: Tmux, workspace: Path, tmp_path: Path
) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_HOLD_SDK)
    barrier = tmp_path / "sdk-may-load"
    with FakeAnthropic() as server:
        server.script(MODEL, text(ANSWER))
        server.script(MEMORY_MODEL, text("[]"))
        env = {k: v for k, v in cli_env(server).items() if not k.startswith("TMUX")}
        path = [str(hook), *filter(None, [env.get("PYTHONPATH")])]
        env |= {"PYTHONPATH": os.pathsep.join(path), "PSEUDOCLAUDE_TEST_SDK_BARRIER": str(barrier)}
        tmux.start([str(pseudoclaude_exe()), "-C", str(workspace)], env, cwd=ROOT)
        # The first frame: the status line (the frame's last row) is drawn and says connecting.
        tmux.wait_for(
            lambda s: "memory " in (s.strip().splitlines() or [""])[-1] and "connecting" in s,
            "the first frame, connecting",
        )
        tmux.send_text(PROMPT)
        tmux.send_key("Enter")
        screen = tmux.wait_for(lambda s: "queued: sent" in s and PROMPT in s, "the prompt shown as queued")
        assert "connecting" in screen and server.requests_for(MODEL) == []
        barrier.touch()
        screen = tmux.wait_for(lambda s: ANSWER in s, "the answer to the queued prompt")
        assert "queued: sent" not in screen and "Traceback" not in screen
        [request] = server.requests_for(MODEL)
        assert PROMPT in json.dumps(request.body["messages"])
        quit_app(tmux)
        assert not server.errors, server.errors[0]


def test_keys_typed_before_the_first_frame_reach_the_prompt_and_are_sent(tmux: Tmux, workspace: Path) -> None:
    with FakeAnthropic() as server:
        server.script(MODEL, text(ANSWER))
        server.script(MEMORY_MODEL, text("[]"))
        env = {k: v for k, v in cli_env(server).items() if not k.startswith("TMUX")}
        tmux.start([str(pseudoclaude_exe()), "-C", str(workspace)], env, cwd=ROOT)
        tmux.send_text(PROMPT)  # at once: the interpreter has not even started the app yet
        tmux.wait_for(lambda s: f"│ {PROMPT}" in s, "the early keys in the prompt")
        tmux.send_key("Enter")
        screen = tmux.wait_for(lambda s: ANSWER in s, "the answer")
        assert "Traceback" not in screen
        quit_app(tmux)
        assert not server.errors, server.errors[0]


BIG_STORE_CARDS = 10_001


def test_a_cloned_10001_card_store_asks_at_once_then_y_typed_keys_echo_and_ctrl_q_quits(
    tmux: Tmux, tmp_path: Path
) -> None:
    from tests.bench.bigstore import make_big_store

    big = Path(os.path.realpath(tmp_path / "big"))
    make_big_store(big, BIG_STORE_CARDS)  # as a clone brings it: no trust recorded here
    with FakeAnthropic() as server:
        env = {k: v for k, v in cli_env(server).items() if not k.startswith("TMUX")}
        tmux.start([str(pseudoclaude_exe()), "-C", str(big)], env, cwd=ROOT)
        tmux.wait_for(lambda s: "seen by the next turn" in s, "the first frame")
        # Within seconds of the first frame (it took 32–39 s when the window mounted a widget per card).
        tmux.wait_for(lambda s: "Trust this project's memory?" in s, "the trust window", timeout=10)
        screen = tmux.wait_for(
            lambda s: "10,001 cards" in s, "the cards counted in the trust window", timeout=60
        )
        assert "Traceback" not in screen
        time.sleep(SETTLE_S + QUIET_S)  # the person reads the list: a key at once is not an answer
        tmux.send_text("y")
        tmux.wait_for(lambda s: "Trust this project's memory?" not in s, "the trust window answered")
        tmux.send_text("typed while the store loads")
        tmux.wait_for(lambda s: "typed while the store loads" in s, "the typed keys echoed", timeout=10)
        screen = tmux.wait_for(
            lambda s: "project memory trusted" in s, "the trust noted in the chat", timeout=60
        )
        assert "Traceback" not in screen
        quit_app(tmux)
        assert not server.errors, server.errors[0]
