"""A continued session with images in the app: its history shows each image as its label (a
prompt's and a ``read_file`` result's), never base64, and the next request sends the images again
from the files kept beside the session."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from app.agent.conversation.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from app.agent.conversation.images import labelled_blocks, prepare_image
from app.agent.conversation.session_store import SessionStore
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until


def png(w: int, h: int, color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (w, h), color).save(out, "PNG")
    return out.getvalue()


def _session_with_images(ws: Path) -> list[str]:
    """A turn whose prompt has an image and whose read_file read another; their base64 data."""
    shot, page = (
        prepare_image(png(40, 30, (200, 0, 0)), "shot.png"),
        prepare_image(png(20, 10, (0, 0, 200)), "page.png"),
    )
    result = ToolResultBlock(tool_use_id="toolu_1", content=labelled_blocks(page, 1))
    with SessionStore().create(ws) as s:
        s.begin_turn("what is wrong here")
        s.append(
            Message(role="user", content=[TextBlock(text="what is wrong here"), *labelled_blocks(shot, 1)])
        )
        s.append(
            Message(
                role="assistant",
                content=[ToolUseBlock(id="toolu_1", name="read_file", input={"path": "page.png"})],
            )
        )
        s.append(Message(role="user", content=[result]))
        s.append(Message(role="assistant", content=[TextBlock(text="the button is cut off")]))
        s.end_turn("completed")
    return [shot.block().source.data, page.block().source.data]


async def test_a_continued_sessions_images_show_as_labels_and_are_sent_again(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    data = _session_with_images(ws)
    server.script(MODEL, text("still cut off"))
    app = make_app(server, memory_mode="off", continue_latest=True)
    async with app.run_test(size=(120, 50)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "the button is cut off" in chat_texts(app), what="the history")
        shown = "\n".join(chat_texts(app))
        assert "[Image #1: shot.png 40×30]" in shown and "[Image #1: page.png 20×10]" in shown
        assert all(d[:40] not in shown for d in data) and "base64" not in shown
        await send(pilot, "and now?")
        await wait_until(pilot, lambda: "still cut off" in chat_texts(app), what="the answer")
    sent = str(server.requests_for(MODEL)[-1].body["messages"])
    assert all(d in sent for d in data)
