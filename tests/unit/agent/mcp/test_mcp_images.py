"""An MCP tool's image content reaches the model as an image (prepared like any other: a readable
image, scaled to at most 1568 px), labelled in its place in the text; one that is not a readable
image stays a one-line note, and audio and other content stay notes."""

from __future__ import annotations

import base64
import io
from types import SimpleNamespace
from typing import Any

from PIL import Image

from app.agent.extensions.mcp.agent_tool import McpAgentTool, McpArguments
from app.agent.extensions.mcp.model import McpTool
from app.agent.extensions.mcp.results import McpResult, tool_result, with_images
from app.agent.tools.base import ToolContext


def png_b64(w: int, h: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (w, h), (0, 128, 0)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def answer(*blocks: SimpleNamespace, is_error: bool = False) -> SimpleNamespace:
    return SimpleNamespace(is_error=is_error, structured_content=None, content=list(blocks))


def block(kind: str, **fields: object) -> SimpleNamespace:
    return SimpleNamespace(type=kind, **fields)


def test_images_are_prepared_and_labelled_in_place_and_a_bad_one_is_a_note() -> None:
    r = tool_result(
        answer(
            block("text", text="two screenshots:"),
            block("image", data=png_b64(3136, 100), mime_type="image/png"),
            block("image", data="AAAA" * 100, mime_type="image/png"),
            block("audio", data="AAAA", mime_type="audio/wav"),
            block("image", data=png_b64(10, 20), mime_type="image/png"),
        )
    )
    text, images = with_images(r.parts)
    assert text.splitlines() == [
        "two screenshots:",
        "[Image #1: mcp image 1 1568×50]",
        "[image image/png, 300 B: not shown: mcp image 2: not a readable image]",
        "[audio audio/wav, 3 B: not shown]",
        "[Image #2: mcp image 2 10×20]",
    ]
    assert [(i.name, i.width, i.height) for i in images] == [
        ("mcp image 1", 1568, 50),
        ("mcp image 2", 10, 20),
    ]
    with Image.open(io.BytesIO(base64.b64decode(images[0].source.data))) as seen:
        assert seen.size == (1568, 50)


class _Manager:
    def __init__(self, result: McpResult) -> None:
        self.result = result

    async def call(self, name: str, arguments: dict[str, Any]) -> McpResult:
        return self.result


async def test_the_agent_tool_gives_the_model_the_images(tmp_path: Any) -> None:
    r = tool_result(
        answer(block("text", text="a picture:"), block("image", data=png_b64(4, 4), mime_type="image/png"))
    )
    tool = McpAgentTool(McpTool("mcp__s__pic", "s", "pic", "d", {}), _Manager(r))  # type: ignore[arg-type]
    got = await tool.run(McpArguments(), ToolContext(workspace=tmp_path))
    assert got.content == "a picture:\n[Image #1: mcp image 1 4×4]" and not got.is_error
    [image] = got.images
    assert image.source.media_type == "image/png" and image.source.data == png_b64(4, 4)
    # Text only: as before, no images.
    plain = McpAgentTool(McpTool("mcp__s__t", "s", "t", "d", {}), _Manager(McpResult("hi")))  # type: ignore[arg-type]
    assert (await plain.run(McpArguments(), ToolContext(workspace=tmp_path))).images == []
