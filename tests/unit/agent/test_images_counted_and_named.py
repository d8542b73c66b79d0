"""An image in the conversation counts as its tokens (width·height/750), not as the length of its
base64 data; a summary's transcript and the memory model read it as ``[image: NAME]`` (its label
left out), never its data; a large tool result moved to disk keeps its images, live and on
replay; ``read_file`` of an image gives the image (scaled), a broken one one line."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from app.agent.conversation import compaction as cmp
from app.agent.conversation.blocks import (
    Base64Source,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from app.agent.conversation.images import image_label, image_tokens
from app.agent.conversation.messages import replace_result
from app.agent.memory_bridge.turn_memory import turn_for_memory
from app.agent.tools.base import ToolContext, ToolError
from app.agent.tools.files import read_file

BIG = "QUJD" * 250_000  # a million characters of base64


def big_image(name: str = "shot.png", w: int = 1568, h: int = 1176) -> ImageBlock:
    return ImageBlock(source=Base64Source(media_type="image/png", data=BIG)).labelled(name, w, h)


def prompt_with(image: ImageBlock) -> Message:
    label = TextBlock(text=image_label(1, image.name, image.width, image.height))
    return Message(role="user", content=[TextBlock(text="what is wrong here"), label, image])


def test_the_estimate_counts_an_image_as_its_tokens_not_its_base64() -> None:
    plain = Message(role="user", content=[TextBlock(text="what is wrong here")])
    with_image = prompt_with(big_image())
    label_chars = cmp.messages_chars([prompt_with(big_image())]) - cmp.messages_chars([plain])
    # 1568·1176/750 = 2458 tokens, four characters each, plus the label and the block's JSON.
    assert image_tokens(1568, 1176) == 2458
    assert 2458 * 4 < label_chars < 2458 * 4 + 300
    tokens = cmp.estimate_tokens(None, [], [], [with_image])
    assert 2458 < tokens < 2458 + 200  # not a million characters / 4
    # In a tool result too.
    result = ToolResultBlock(tool_use_id="t", content=[TextBlock(text="[Image #1]"), big_image()])
    call = ToolUseBlock(id="t", name="read_file", input={"path": "shot.png"})
    conv = [plain, Message(role="assistant", content=[call]), Message(role="user", content=[result])]
    assert cmp.estimate_tokens(None, [], [], conv) < 2458 + 300


def test_a_summary_transcript_and_memory_name_the_image_and_never_hold_its_data() -> None:
    image = big_image("shot.png")
    result = ToolResultBlock(
        tool_use_id="t", content=[TextBlock(text="[Image #1: b.png 10×10]"), big_image("b.png", 10, 10)]
    )
    conv = [
        prompt_with(image),
        Message(role="assistant", content=[ToolUseBlock(id="t", name="read_file", input={"path": "b.png"})]),
        Message(role="user", content=[result]),
        Message(role="assistant", content=[TextBlock(text="the button is cut off")]),
    ]
    transcript = "\n".join(cmp.transcript_chunks(conv, 100_000))
    assert "USER: [image: shot.png]" in transcript and "[image: b.png]" in transcript
    assert BIG[:100] not in transcript and "[Image #1: shot.png" not in transcript
    turn = turn_for_memory(conv, "s1")
    said = [(m.role, m.text) for m in turn.messages]
    assert said == [("user", "what is wrong here\n[image: shot.png]"), ("assistant", "the button is cut off")]
    assert BIG[:100] not in turn.model_dump_json()


def test_a_large_tool_result_moved_to_disk_keeps_its_images(tmp_path: Path) -> None:
    text = "line of output\n" * 1_000
    image = big_image("b.png", 10, 10)
    result = ToolResultBlock(tool_use_id="t", content=[TextBlock(text=text), image])
    conv = [
        Message(role="user", content=[TextBlock(text="go")]),
        Message(role="assistant", content=[ToolUseBlock(id="t", name="mcp__x__y", input={})]),
        Message(role="user", content=[result]),
    ]
    replay = [m.model_copy(deep=True) for m in conv]
    done, _ = cmp.offload_old(conv, cmp.ResultStore(tmp_path / "results"), 1)
    [(call_id, stub)] = done
    assert isinstance(result.content, list) and len(result.content) == 2
    assert result.content[0] == TextBlock(text=stub) and result.content[1] is image
    assert stub.startswith(cmp.STUB_PREFIX)
    # The session log's offload record replays the same way.
    assert replace_result(replay, call_id, stub)
    assert replay[2].content == conv[2].content


def png(w: int, h: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (w, h), (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


def test_read_file_of_an_image_gives_the_image_scaled_and_a_broken_one_one_line(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(png(4000, 3000))
    (tmp_path / "small.png").write_bytes(png(64, 48))
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    ctx = ToolContext(workspace=tmp_path)
    big = read_file(ctx, "big.png", None, None)
    assert big.content == "[Image #1: big.png 1568×1176] (scaled from 4000×3000)"
    [image] = big.images
    with Image.open(io.BytesIO(base64.b64decode(image.source.data))) as seen:
        assert seen.size == (1568, 1176)
    small = read_file(ctx, "small.png", None, None)
    assert small.content == "[Image #1: small.png 64×48]"
    assert base64.b64decode(small.images[0].source.data) == (tmp_path / "small.png").read_bytes()
    with pytest.raises(ToolError) as refused:
        read_file(ctx, "broken.png", None, None)
    assert str(refused.value) == "broken.png: not a readable image"
