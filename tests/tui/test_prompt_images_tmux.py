"""Images in the prompt in a real terminal: the installed app in tmux, the fake Messages API.
``@shot.png`` typed and sent, a dragged file's path pasted as the terminal pastes it (bracketed),
and Ctrl+V with a ``wl-paste`` on the PATH that holds a PNG: each reaches the model as an image
block of at most 1568 px, and the chat shows its label, never its data."""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.support.clitools import MODEL, cli_env
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.test_smoke_tmux import Tmux, quit_app, start_app, tmux, workspace

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(120)


def images_sent(body: Any) -> list[tuple[str, tuple[int, int]]]:
    content = body["messages"][0]["content"]
    found = []
    for i, b in enumerate(content):
        if b["type"] == "image":
            img = Image.open(io.BytesIO(base64.b64decode(b["source"]["data"])))
            found.append((content[i - 1]["text"], img.size))
    return found


def test_a_typed_at_image_is_sent_scaled_and_the_chat_shows_its_label(tmux: Tmux, workspace: Path) -> None:
    Image.new("RGB", (2400, 1200), "olive").save(workspace / "shot.png", "PNG")
    with FakeAnthropic() as server:
        server.script(MODEL, text("An olive rectangle."))
        start_app(tmux, server, workspace, "--memory", "off")
        tmux.send_text("what is here @shot.png")
        tmux.wait_for(lambda s: "what is here @shot.png" in s, "the typed prompt")
        tmux.send_key("Enter")  # the file completion's list, if open, has the word typed in full: it sends
        server.wait_for_requests(1, model=MODEL, timeout=20)
        label = "[Image #1: shot.png 1568×784]"
        screen = tmux.wait_for(
            lambda s: "An olive rectangle." in s and label in s, "the answer and the label"
        )
        assert "base64" not in screen and "iVBOR" not in screen
        [request] = server.requests_for(MODEL)
        assert images_sent(request.body) == [(label, (1568, 784))]
        quit_app(tmux)
        assert not server.errors, server.errors[0]


def test_a_pasted_dragged_path_and_ctrl_v_attach_images(tmux: Tmux, workspace: Path, tmp_path: Path) -> None:
    dragged = tmp_path / "Desktop" / "My Shot.png"
    dragged.parent.mkdir()
    Image.new("RGB", (300, 200), "maroon").save(dragged, "PNG")
    clip = io.BytesIO()
    Image.new("RGB", (50, 40), "gold").save(clip, "PNG")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "wl-paste").write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if '--list-types' in sys.argv:\n"
        "    print('image/png')\n"
        "else:\n"
        f"    sys.stdout.buffer.write({clip.getvalue()!r})\n"
    )
    (bin_ / "wl-paste").chmod(0o755)
    with FakeAnthropic() as server:
        server.script(MODEL, text("Maroon and gold."))
        env = cli_env(server)
        env["PATH"] = f"{bin_}:{env.get('PATH', '')}"
        start_app(tmux, server, workspace, "--memory", "off", env=env)
        tmux.send_key("F2")  # the memory panel hidden: the prompt's line is wide enough for both labels
        tmux.wait_for(lambda s: "no notes yet" not in s, "the memory panel hidden")
        tmux.send_text("compare ")
        tmux.wait_for(lambda s: "compare" in s, "the typed words")
        # What a terminal pastes for a file dropped on it: its path, quoted (bracketed paste).
        buffer = tmp_path / "drop.txt"
        buffer.write_text(f"'{dragged}' ")
        tmux.run("load-buffer", "-b", "drop", str(buffer))
        tmux.run("paste-buffer", "-p", "-d", "-b", "drop", "-t", tmux.target)
        first = "[Image #1: My Shot.png 300×200]"
        tmux.wait_for(lambda s: first in s, "the dragged image's label in the prompt")
        tmux.send_key("C-v")
        second = "[Image #2: clipboard 50×40]"
        tmux.wait_for(lambda s: second in s, "the clipboard image's label in the prompt")
        tmux.send_key("Enter")
        server.wait_for_requests(1, model=MODEL, timeout=20)
        screen = tmux.wait_for(lambda s: "Maroon and gold." in s, "the answer")
        assert first in screen and second in screen and str(dragged.parent) not in screen
        [request] = server.requests_for(MODEL)
        assert images_sent(request.body) == [(first, (300, 200)), (second, (50, 40))]
        quit_app(tmux)
        assert not server.errors, server.errors[0]
