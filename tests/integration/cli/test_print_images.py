"""Images in a print-mode prompt: ``-p "… @shot.png"`` and ``--image FILE``, end to end (the real
CLI, the real SDK, the fake Messages API). Each image reaches the model as an image block after
its label, scaled to a long edge of at most 1568 px; an image that cannot be sent is one line on
stderr, exit 2, and no request."""

from __future__ import annotations

import base64
import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.support.clitools import MODEL, run_cli
from tests.support.fakeapi import FakeAnthropic, text

pytestmark = pytest.mark.timeout(90)


def write_image(path: Path, size: tuple[int, int], fmt: str = "PNG", color: str = "teal") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, fmt)
    return path


def user_content(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The first user message's blocks (the prompt)."""
    first = body["messages"][0]
    assert first["role"] == "user"
    content = first["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def images_of(blocks: list[Mapping[str, Any]]) -> list[tuple[str, Image.Image]]:
    """Each image block with the label just before it, decoded."""
    found = []
    for i, b in enumerate(blocks):
        if b["type"] == "image":
            assert b["source"]["type"] == "base64"
            img = Image.open(io.BytesIO(base64.b64decode(b["source"]["data"])))
            img.load()
            assert Image.MIME[img.format] == b["source"]["media_type"]
            label = blocks[i - 1]["text"] if i and blocks[i - 1]["type"] == "text" else ""
            found.append((label, img))
    return found


def test_an_at_image_reaches_the_model_as_an_image_block_after_its_label(
    server: FakeAnthropic, ws: Path
) -> None:
    write_image(ws / "shot.png", (640, 480))
    server.script(MODEL, text("A teal square."))
    res = run_cli(server, ws, "-p", "what is wrong here @shot.png", "--memory", "off")
    assert res.code == 0, res.err
    assert "A teal square." in res.out
    [request] = server.requests_for(MODEL)
    blocks = user_content(request.body)
    assert blocks[0] == {"type": "text", "text": "what is wrong here @shot.png"}
    [(label, img)] = images_of(blocks)
    assert label == "[Image #1: shot.png 640×480]"
    assert img.size == (640, 480)
    # Only what the API takes: no name or size of the app's own in the block.
    image_block = next(b for b in blocks if b["type"] == "image")
    assert set(image_block) == {"type", "source"}


def test_a_4000_px_image_is_scaled_to_1568_and_the_note_says_so(server: FakeAnthropic, ws: Path) -> None:
    write_image(ws / "big.png", (4000, 3000))
    server.script(MODEL, text("Seen."))
    res = run_cli(server, ws, "-p", "look at @big.png", "--memory", "off")
    assert res.code == 0, res.err
    [(label, img)] = images_of(user_content(server.requests_for(MODEL)[0].body))
    assert img.size == (1568, 1176) and max(img.size) <= 1568
    assert label == "[Image #1: big.png 1568×1176]"
    assert "big.png: scaled from 4000×3000 to 1568×1176" in res.err


def test_a_broken_png_is_one_line_exit_2_and_no_request(server: FakeAnthropic, ws: Path) -> None:
    (ws / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nthis is not really a png")
    server.script(MODEL, text("never"))
    res = run_cli(server, ws, "-p", "what is this @broken.png", "--memory", "off")
    assert res.code == 2, res.err
    lines = [line for line in res.err.splitlines() if line.strip()]
    assert lines == ["pseudoclaude: @broken.png: not a readable image; nothing was sent"], res.err
    assert server.requests_for(MODEL) == []
    assert res.out == ""
    # No session was opened for a prompt that was not sent.
    sessions = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions"
    assert not sessions.exists() or not any(sessions.glob("*.jsonl"))


def test_an_image_outside_the_workspace_is_refused_by_at_but_taken_by_image(
    server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    outside = write_image(tmp_path / "elsewhere" / "out.png", (32, 16))
    res = run_cli(server, ws, "-p", f"see @{outside}", "--memory", "off")
    assert res.code == 2 and "outside the workspace" in res.err, res.err
    assert server.requests_for(MODEL) == []
    server.script(MODEL, text("Seen."))
    res = run_cli(server, ws, "-p", "see this", "--image", str(outside), "--memory", "off")
    assert res.code == 0, res.err
    [(label, img)] = images_of(user_content(server.requests_for(MODEL)[0].body))
    assert img.size == (32, 16) and label == "[Image #1: out.png 32×16]"


def test_two_image_options_give_two_labelled_images_in_order(
    server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    a = write_image(tmp_path / "a.png", (100, 50), color="red")
    b = write_image(tmp_path / "b.jpg", (60, 90), fmt="JPEG", color="blue")
    write_image(ws / "c.webp", (20, 20), fmt="WEBP")
    server.script(MODEL, text("Three images."))
    res = run_cli(
        server,
        ws,
        "-p",
        "compare @c.webp with these",
        "--image",
        str(a),
        "--image",
        str(b),
        "--memory",
        "off",
    )
    assert res.code == 0, res.err
    found = images_of(user_content(server.requests_for(MODEL)[0].body))
    assert [(label, img.format, img.size) for label, img in found] == [
        ("[Image #1: c.webp 20×20]", "WEBP", (20, 20)),
        ("[Image #2: a.png 100×50]", "PNG", (100, 50)),
        ("[Image #3: b.jpg 60×90]", "JPEG", (60, 90)),
    ]


@pytest.mark.parametrize("bad", ["missing.png", "notes.png"])
def test_a_bad_image_option_is_a_usage_error_with_no_request(
    server: FakeAnthropic, ws: Path, tmp_path: Path, bad: str
) -> None:
    (tmp_path / "notes.png").write_text("just words\n")
    path = tmp_path / bad
    res = run_cli(server, ws, "-p", "see this", "--image", str(path), "--memory", "off")
    assert res.code == 2, res.err
    [line] = [line for line in res.err.splitlines() if line.strip()]
    assert line.startswith(f"pseudoclaude: --image {path}: ") and line.endswith("; nothing was sent"), line
    assert server.requests_for(MODEL) == []


def test_an_image_over_50_mb_is_refused_before_it_is_read(server: FakeAnthropic, ws: Path) -> None:
    with open(ws / "huge.png", "wb") as f:
        f.truncate(50 * 1024 * 1024 + 1)  # sparse: the size is what is refused
    res = run_cli(server, ws, "-p", "what is @huge.png", "--memory", "off")
    assert res.code == 2, res.err
    assert "@huge.png: 50.0 MiB is over the 50.0 MiB image limit; nothing was sent" in res.err
    assert server.requests_for(MODEL) == []


def test_a_text_file_and_an_image_attach_together_in_print_mode(server: FakeAnthropic, ws: Path) -> None:
    (ws / "notes.txt").write_text("the layout breaks at 80 columns\n")
    write_image(ws / "shots" / "layout.gif", (300, 200), fmt="GIF")
    server.script(MODEL, text("I see."))
    res = run_cli(server, ws, "-p", "read @notes.txt and look at @shots/layout.gif", "--memory", "off")
    assert res.code == 0, res.err
    blocks = user_content(server.requests_for(MODEL)[0].body)
    assert blocks[1]["type"] == "text" and blocks[1]["text"].startswith('<attached-file path="notes.txt">')
    [(label, img)] = images_of(blocks)
    assert label == "[Image #1: shots/layout.gif 300×200]" and img.format == "GIF"


def test_an_attached_image_survives_continue(server: FakeAnthropic, ws: Path) -> None:
    write_image(ws / "shot.png", (200, 100), color="purple")
    server.script(MODEL, text("Purple."), text("Still purple."))
    first = run_cli(server, ws, "-p", "what colour is @shot.png", "--memory", "off")
    assert first.code == 0, first.err
    second = run_cli(server, ws, "--continue", "-p", "and now?", "--memory", "off")
    assert second.code == 0, second.err
    sent = [images_of(user_content(r.body)) for r in server.requests_for(MODEL)]
    [(label, img)] = sent[1]
    assert label == "[Image #1: shot.png 200×100]" and img.size == (200, 100)
    first_data = next(b for b in user_content(server.requests_for(MODEL)[0].body) if b["type"] == "image")
    again = next(b for b in user_content(server.requests_for(MODEL)[1].body) if b["type"] == "image")
    assert again["source"] == first_data["source"]
    assert json.dumps(server.requests_for(MODEL)[1].body["messages"][-1]).count('"image"') == 0
