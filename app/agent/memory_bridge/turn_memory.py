"""What a completed turn gives memory: who said what, in words, and which files it touched.

Tool calls, tool results, the index-update blocks and the app's own notes are left out, and an
image is only named (``[image: shot.png]``):
extraction learns from what was said, not from tool output or from what memory itself sent.
Of a tool call only the paths it names are kept (what its tool's ``paths`` gives: the file
tools' ``path``), so the memory model can cite what a card rests on; patterns, contents, edit
strings and commands never are.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from pathlib import Path

from app.agent.conversation.blocks import Block, ImageBlock, Message, TextBlock, ToolUseBlock
from app.agent.conversation.images import image_mention, without_labels
from app.agent.conversation.messages import is_app_note
from app.agent.tools.registry import BUILTIN_TOOLS, ToolRegistry
from memory.constants import UPDATE_TAG
from memory.model import Turn, TurnMessage
from memory.text.terminal import is_unsafe_char

_UPDATE_OPEN = f"<{UPDATE_TAG}>"

MAX_TURN_PATHS = 200
MAX_PATH_CHARS = 1024


def text_of(content: list[Block]) -> str:
    """The words of a message's content: its text blocks but the app's notes and update blocks,
    and each image as ``[image: NAME]`` (its label left out): the memory model never gets an
    image's data."""
    parts: list[str] = []
    for b in without_labels(content):
        if isinstance(b, ImageBlock):
            parts.append(image_mention(b))
        elif isinstance(b, TextBlock) and not is_app_note(b) and not b.text.startswith(_UPDATE_OPEN):
            parts.append(b.text)
    return "\n".join(parts)


def workspace_path(raw: object, roots: tuple[str, ...]) -> str | None:
    """``raw`` as a workspace-relative POSIX path, or None when it is no usable path: not a
    string, too long, with control characters, absolute outside ``roots`` (or without them),
    escaping through ``..``, or the workspace root itself. Lexical only: the transaction
    confines every cite against the file system anyway, and this runs on the event loop."""
    if not isinstance(raw, str) or not raw or len(raw) > MAX_PATH_CHARS:
        return None
    if any(is_unsafe_char(c) for c in raw):
        return None
    if os.path.isabs(raw):
        path = os.path.normpath(raw)
        for root in roots:
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                raw = os.path.relpath(path, root)
                break
        else:
            return None
    rel = posixpath.normpath(raw.replace(os.sep, "/"))
    if rel in (".", "") or rel == ".." or rel.startswith(("../", "/")):
        return None
    return rel


def _roots(workspace: Path | str | None) -> tuple[str, ...]:
    if workspace is None:
        return ()
    given = os.path.normpath(os.path.abspath(workspace))
    real = os.path.realpath(given)
    return (given,) if real == given else (given, real)


def tool_paths(
    messages: Iterable[Message], workspace: Path | str | None = None, tools: ToolRegistry = BUILTIN_TOOLS
) -> list[str]:
    """The workspace paths the assistant's tool calls named (each tool's ``paths``), normalised
    (``workspace_path``), de-duplicated, in order of first use, at most MAX_TURN_PATHS."""
    roots = _roots(workspace)
    out: dict[str, None] = {}
    for m in messages:
        for b in m.tool_uses():
            if not isinstance(b, ToolUseBlock):
                continue
            for raw in tools.paths_of(b.name, b.input):
                path = workspace_path(raw, roots)
                if path is not None:
                    out.setdefault(path, None)
                    if len(out) >= MAX_TURN_PATHS:
                        return list(out)
    return list(out)


def turn_for_memory(
    messages: Iterable[Message],
    session: str = "",
    *,
    workspace: Path | str | None = None,
    tools: ToolRegistry = BUILTIN_TOOLS,
) -> Turn:
    """``messages`` as a memory Turn: role and text, and the paths its tool calls named (see the
    module doc). Without ``workspace`` an absolute path cannot be placed and is left out."""
    messages = list(messages)
    out = []
    for m in messages:
        text = text_of(m.content)
        if text.strip():
            out.append(TurnMessage(role=m.role, text=text))
    return Turn(messages=out, session=session, paths=tool_paths(messages, workspace, tools))
