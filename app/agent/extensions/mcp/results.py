"""What the model is given for an MCP tool's answer: its text content as text, its images as
images (prepared like every image the model gets, by the agent's tool, off the event loop),
every other content block as a one-line note, and the server's ``isError`` as a tool error.

Works on the SDK's result objects by their fields only, so this module does not import the SDK.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.agent.conversation.blocks import ImageBlock
from app.agent.conversation.images import MAX_FILE_BYTES, ImageError, image_label, prepare_image
from memory.text.lines import format_bytes, one_line

__all__ = ["McpImage", "McpResult", "content_text", "tool_result", "with_images"]


@dataclass(frozen=True)
class McpImage:
    """An image content block of an answer: its base64 data as the server sent it, and the
    one-line note that stands for it where it cannot be shown."""

    data: str
    note: str


Part = str | McpImage


@dataclass(frozen=True)
class McpResult:
    """An MCP tool call's answer for the model (``is_error`` maps to the API's ``is_error``).
    ``content``: its text, each image a one-line note; ``parts``, when it has images: its
    content in order, text or image."""

    content: str
    is_error: bool = False
    parts: tuple[Part, ...] = ()


def _b64_size(data: Any) -> str:
    n = len(data) * 3 // 4 if isinstance(data, str) else 0
    return format_bytes(n)


def _note(block: Any) -> str:
    """A non-text block as one line: what it is, never its bytes."""
    kind = getattr(block, "type", None) or type(block).__name__
    mime = getattr(block, "mime_type", None) or "unknown type"
    if kind in ("image", "audio"):
        return f"[{kind} {mime}, {_b64_size(getattr(block, 'data', None))}: not shown]"
    if kind == "resource_link":
        name = getattr(block, "name", None)
        return f"[resource link {one_line(getattr(block, 'uri', ''), 200)}" + (
            f" ({one_line(name, 80)})]" if name else "]"
        )
    return f"[{one_line(kind, 40)} content: not shown]"


def content_text(blocks: Iterable[Any]) -> str:
    """Content blocks (a tool's or a prompt message's) as text, one part per block."""
    return "\n".join(p if isinstance(p, str) else p.note for p in content_parts(blocks))


def content_parts(blocks: Iterable[Any]) -> list[Part]:
    """Content blocks as text, one part per block, an image with base64 data as itself."""
    parts: list[Part] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind == "resource":
            # An embedded resource: its text when it has one, else a note.
            res = getattr(block, "resource", None)
            text = getattr(res, "text", None)
            if isinstance(text, str):
                parts.append(text)
            else:
                mime = getattr(res, "mime_type", None) or "unknown type"
                parts.append(
                    f"[resource {one_line(getattr(res, 'uri', ''), 200)} {mime}, "
                    f"{_b64_size(getattr(res, 'blob', None))}: not shown]"
                )
        elif kind == "image" and isinstance(getattr(block, "data", None), str):
            parts.append(McpImage(block.data, _note(block)))
        else:
            parts.append(_note(block))
    return parts


def tool_result(result: Any) -> McpResult:
    """A ``CallToolResult`` for the model. An answer with no content but structured content
    gives that as JSON; an error with no words still says it is one."""
    parts = content_parts(getattr(result, "content", None) or ())
    text = "\n".join(p if isinstance(p, str) else p.note for p in parts)
    if not text:
        structured = getattr(result, "structured_content", None)
        if structured is not None:
            text = json.dumps(structured, ensure_ascii=False)
    is_error = bool(getattr(result, "is_error", False))
    if not text:
        text = "the tool reported an error without a message" if is_error else "(no content)"
    has_image = any(isinstance(p, McpImage) for p in parts)
    return McpResult(text, is_error, tuple(parts) if has_image and not is_error else ())


def with_images(parts: Iterable[Part]) -> tuple[str, list[ImageBlock]]:
    """An answer's text, each image labelled in its place (``[Image #1: mcp image 1 64×64]``),
    and its images prepared for the model; an image that is not a readable one, or too large,
    stays its one-line note with why. Blocking (Pillow): call from a worker thread."""
    lines: list[str] = []
    images: list[ImageBlock] = []
    for part in parts:
        if isinstance(part, str):
            lines.append(part)
            continue
        n = len(images) + 1
        try:
            if len(part.data) > MAX_FILE_BYTES // 3 * 4 + 4:  # decoded, over the image file limit
                raise ImageError(f"over the {format_bytes(MAX_FILE_BYTES)} image limit")
            picture = prepare_image(base64.b64decode(part.data, validate=True), f"mcp image {n}")
        except (ImageError, binascii.Error, ValueError) as e:
            lines.append(f"{part.note[:-1]}: {one_line(e, 200)}]")
            continue
        lines.append(image_label(n, picture.name, picture.width, picture.height))
        images.append(picture.block())
    return "\n".join(lines), images
