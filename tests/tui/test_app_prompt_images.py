"""Images in the app's prompt (Pilot, the fake Messages API): a pasted path to an image file (what a
terminal gives for a dragged file) becomes ``[Image #1: name W×H]`` in the prompt and the image
goes with the prompt; ``@shot.png`` attaches one; Ctrl+V takes the clipboard's image; an image
that cannot be sent says one line and keeps the words in the prompt. The chat, live and resumed,
shows the labels and never the image's data."""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from textual import events

from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.error_block import ErrorBlock
from widgets.chat.note_block import NoteBlock
from widgets.chat.user_block import UserBlock


def write_image(path: Path, size: tuple[int, int], color: str = "navy") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, "PNG")
    return path


def sent_images(body: Any) -> list[tuple[str, tuple[int, int]]]:
    """The prompt's image blocks, each with the label before it and its decoded size."""
    content = body["messages"][0]["content"]
    found = []
    for i, b in enumerate(content):
        if b["type"] == "image":
            img = Image.open(io.BytesIO(base64.b64decode(b["source"]["data"])))
            found.append((content[i - 1]["text"], img.size))
    return found


def errors(app: Any) -> list[str]:
    return [b.text for b in app.chat.query(ErrorBlock)]


def notes(app: Any) -> list[str]:
    return [b.text for b in app.chat.query(NoteBlock)]


@pytest.mark.parametrize(
    "pasted",
    ["'{path}'", '"{path}"', "{escaped}", "file://{url}", "{path} \n"],
    ids=["single-quoted", "double-quoted", "escaped-spaces", "file-url", "trailing-newline"],
)
async def test_a_pasted_image_path_becomes_its_label_and_the_image_goes_with_the_prompt(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path, pasted: str
) -> None:
    shot = write_image(tmp_path / "Desktop" / "My Shot.png", (1280, 720))
    text_pasted = pasted.format(
        path=shot, escaped=str(shot).replace(" ", "\\ "), url=str(shot).replace(" ", "%20")
    )
    server.script(MODEL, text("A navy rectangle."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.focus()
        app.prompt.text = "what is in "
        app.prompt.move_cursor(app.prompt.document.end)
        app.post_message(events.Paste(text_pasted))
        label = "[Image #1: My Shot.png 1280×720]"
        await wait_until(pilot, lambda: label in app.prompt.text, what="the image's label in the prompt")
        assert app.prompt.text == f"what is in {label} "
        assert str(shot.parent) not in app.prompt.text
        await pilot.press("enter")
        await wait_until(pilot, lambda: "A navy rectangle." in chat_texts(app), what="the answer")
        [request] = server.requests_for(MODEL)
        assert sent_images(request.body) == [(label, (1280, 720))]
        assert request.body["messages"][0]["content"][0]["text"] == f"what is in {label}"
        [block] = list(app.chat.query(UserBlock))
        assert label in block.shown_text and "base64" not in block.shown_text


async def test_a_pasted_path_to_no_file_or_to_other_text_is_pasted_as_text(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.focus()
        missing = f"'{tmp_path}/gone.png'"
        app.post_message(events.Paste(missing))
        await wait_until(pilot, lambda: app.prompt.text == missing, what="the path pasted as text")
        app.post_message(events.Paste(" and words"))
        await wait_until(pilot, lambda: app.prompt.text == missing + " and words", what="the words")
        assert app.chat_screen.images.pictures == {}


async def test_a_pasted_path_to_a_broken_image_says_one_line_and_pastes_the_text(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.focus()
        app.post_message(events.Paste(str(broken)))
        await wait_until(pilot, lambda: app.prompt.text == str(broken), what="the path as text")
        [line] = errors(app)
        assert line.startswith("broken.png: not a readable image") and line.endswith("; pasted as text")


async def test_an_at_image_is_sent_and_its_label_shows_in_the_chat_live_and_resumed(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    write_image(ws / "shot.png", (3000, 1500))
    server.script(MODEL, text("Wide and navy."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "what is here @shot.png")
        await wait_until(pilot, lambda: "Wide and navy." in chat_texts(app), what="the answer")
        [request] = server.requests_for(MODEL)
        label = "[Image #1: shot.png 1568×784]"
        assert sent_images(request.body) == [(label, (1568, 784))]
        [block] = list(app.chat.query(UserBlock))
        assert block.shown_text == f"what is here @shot.png\n{label}"
        assert "shot.png: scaled from 3000×1500 to 1568×784" in notes(app)
    again = make_app(server, memory_mode="off", continue_latest=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "Wide and navy." in chat_texts(again), what="the history")
        [block] = list(again.chat.query(UserBlock))
        assert block.shown_text == f"what is here @shot.png\n\n{label}"


async def test_a_resumed_pasted_image_shows_its_label_once(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    shot = write_image(tmp_path / "drag.png", (40, 30))
    server.script(MODEL, text("Small."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.focus()
        app.post_message(events.Paste(str(shot)))
        await wait_until(pilot, lambda: "[Image #1: drag.png 40×30]" in app.prompt.text, what="the label")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Small." in chat_texts(app), what="the answer")
    again = make_app(server, memory_mode="off", continue_latest=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "Small." in chat_texts(again), what="the history")
        [block] = list(again.chat.query(UserBlock))
        assert block.shown_text == "[Image #1: drag.png 40×30]"


async def test_a_broken_at_image_keeps_the_words_in_the_prompt_and_sends_nothing(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "why is this broken @broken.png")
        await wait_until(pilot, lambda: errors(app), what="the one line")
        [line] = errors(app)
        assert line.startswith("@broken.png: not a readable image") and line.endswith("; nothing was sent")
        await wait_until(
            pilot, lambda: app.prompt.text == "why is this broken @broken.png", what="the words back"
        )
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the prompt free")
        [block] = list(app.chat.query(UserBlock))
        assert block.note == "not sent (back in the prompt)"
        assert server.requests_for(MODEL) == []


def fake_clipboard(folder: Path, png: bytes | None) -> None:
    """A ``wl-paste`` alone on the PATH: it offers ``png`` (None: only text)."""
    folder.mkdir()
    types = "image/png\\ntext/plain" if png is not None else "text/plain"
    script = folder / "wl-paste"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if '--list-types' in sys.argv:\n"
        f"    print({types!r}.replace('\\\\n', '\\n'))\n"
        "else:\n"
        f"    sys.stdout.buffer.write({png!r})\n"
    )
    script.chmod(0o755)


async def test_ctrl_v_attaches_the_clipboards_image(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), "red").save(out, "PNG")
    fake_clipboard(tmp_path / "bin", out.getvalue())
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    server.script(MODEL, text("Red."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.focus()
        await pilot.press("ctrl+v")
        label = "[Image #1: clipboard 64×48]"
        await wait_until(pilot, lambda: label in app.prompt.text, what="the clipboard image's label")
        await pilot.press("w", "h", "a", "t", "?", "enter")
        await wait_until(pilot, lambda: "Red." in chat_texts(app), what="the answer")
        assert sent_images(server.requests_for(MODEL)[0].body) == [(label, (64, 48))]


async def test_ctrl_v_without_an_image_says_one_line_or_pastes_what_was_copied_in_the_app(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_clipboard(tmp_path / "bin", None)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.focus()
        await pilot.press("ctrl+v")
        await wait_until(pilot, lambda: any("Ctrl+V" in n for n in notes(app)), what="the line")
        assert "Ctrl+V: the clipboard holds no image (looked with wl-paste)" in notes(app)
        monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
        await pilot.press("ctrl+v")
        await wait_until(pilot, lambda: any("no clipboard tool" in n for n in notes(app)), what="no tool")
        assert app.prompt.text == ""
        # Text copied in the app (a selection and Ctrl+C) is still what Ctrl+V pastes without an image.
        app.copy_to_clipboard("copied words")
        said = len(notes(app))
        await pilot.press("ctrl+v")
        await wait_until(pilot, lambda: app.prompt.text == "copied words", what="the app's clipboard")
        assert len(notes(app)) == said
