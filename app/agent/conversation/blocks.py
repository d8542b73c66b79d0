"""Content blocks: the prompt, the conversation and the session file hold these typed values.

A message is a role and a list of blocks: text, image, document, tool_use, tool_result (with
text or image content), thinking with its signature, redacted_thinking, the server tools' blocks
(server_tool_use, web_search_tool_result), and :class:`UnknownBlock` for any other type. Fields
the API adds that the product does not use (a text block's ``citations``, a block's ``caller``)
are kept as sent, and an unknown block keeps its JSON whole: what the model sent goes back to it
unchanged, even where the product draws nothing of it.

Raw JSON (a response's blocks, a line of the session file) becomes blocks in one place,
:func:`parse_message` / :func:`parse_blocks`, which also replaces lone surrogates (undecodable
bytes) with U+FFFD; blocks become JSON by ``model_dump(mode="json")``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SkipValidation,
    TypeAdapter,
    ValidationError,
    field_validator,
)

__all__ = [
    "Block",
    "CacheControl",
    "DocumentBlock",
    "ImageBlock",
    "JsonObject",
    "Message",
    "Prompt",
    "RedactedThinkingBlock",
    "ServerToolUseBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnknownBlock",
    "WebSearchToolResultBlock",
    "encodable",
    "parse_blocks",
    "parse_message",
    "scrub",
    "scrub_text",
]

# A JSON object as the model wrote it (a tool call's input): kept as is, never re-shaped.
JsonObject = dict[str, JsonValue]
# JSON read from the wire or the file is JSON already: an object's values are not walked again
# (pydantic walks a JsonValue node by node in Python, the cost of a long session's replay).
_Object = dict[str, SkipValidation[JsonValue]]
_Json = SkipValidation[JsonValue]

_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_text(text: str) -> str:
    """``text`` with every lone surrogate (an undecodable byte kept by ``surrogateescape``)
    replaced by U+FFFD: one cannot be encoded as UTF-8, so it would fail every later request and
    the session file for good. The one scrubber of text entering the conversation."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def scrub(value: JsonValue) -> tuple[JsonValue, bool]:
    """``value`` (JSON) with every string scrubbed (keys too); and whether anything changed."""
    if isinstance(value, str):
        out = scrub_text(value)
        return out, out is not value
    if isinstance(value, list):
        pairs = [scrub(v) for v in value]
        return ([p[0] for p in pairs], True) if any(p[1] for p in pairs) else (value, False)
    if isinstance(value, dict):
        changed = False
        out_d: dict[str, JsonValue] = {}
        for k, v in value.items():
            k2 = scrub_text(k)
            v2, cv = scrub(v)
            out_d[k2] = v2
            changed = changed or cv or k2 is not k
        return (out_d, True) if changed else (value, False)
    return value, False


def _absent(value: object) -> bool:
    return value is None


# Built on first use: importing the provider (which any face does early) builds no schema.
_LAZY = ConfigDict(defer_build=True)


class _Block(BaseModel):
    # Fields the API adds that the product does not use are kept as sent, and sent back.
    model_config = ConfigDict(extra="allow", defer_build=True)


class CacheControl(BaseModel):
    model_config = _LAZY

    type: Literal["ephemeral"] = "ephemeral"


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: str
    cache_control: CacheControl | None = Field(default=None, exclude_if=_absent)


class Base64Source(BaseModel):
    """Bytes as base64: an image (``image/png``, ``image/jpeg``, ``image/gif``, ``image/webp``)
    or a PDF (``application/pdf``)."""

    model_config = _LAZY

    type: Literal["base64"] = "base64"
    media_type: str
    data: str


class PlainTextSource(BaseModel):
    model_config = _LAZY

    type: Literal["text"] = "text"
    media_type: Literal["text/plain"] = "text/plain"
    data: str


class ImageBlock(_Block):
    """An image. Besides what is sent, it knows the name it came by and its size as sent (for the
    screen's ``[Image #1: shot.png 1280×720]`` and memory's ``[image: shot.png]``): these are
    never sent, and the session file keeps them beside its reference to the image's bytes."""

    type: Literal["image"] = "image"
    source: Base64Source
    _name: str = PrivateAttr(default="image")
    _size: tuple[int, int] = PrivateAttr(default=(0, 0))

    @property
    def name(self) -> str:
        return self._name

    @property
    def width(self) -> int:
        return self._size[0]

    @property
    def height(self) -> int:
        return self._size[1]

    def labelled(self, name: str, width: int, height: int) -> ImageBlock:
        """This block, knowing its name and size (changed in place, and returned)."""
        self._name, self._size = name, (width, height)
        return self


class DocumentBlock(_Block):
    type: Literal["document"] = "document"
    source: Annotated[Base64Source | PlainTextSource, Field(discriminator="type")]
    title: str | None = Field(default=None, exclude_if=_absent)


class ToolUseBlock(_Block):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: _Object


class UnknownBlock(_Block):
    """A block of a type the product does not know (or of a known type in a shape it does not
    read): its JSON, kept exactly and sent back as it came."""

    type: str


# A known type by its ``type`` tag; anything else (or a known type in a shape this version does not
# read) as an unknown block, kept as it came.
ResultContent = Annotated[
    Annotated[TextBlock | ImageBlock, Field(discriminator="type")] | UnknownBlock,
    Field(union_mode="left_to_right"),
]


class ToolResultBlock(_Block):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ResultContent]
    is_error: bool | None = Field(default=None, exclude_if=_absent)

    @property
    def text(self) -> str:
        """The result's text (its text blocks, for content given as blocks)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


class ThinkingBlock(_Block):
    """The model's thinking; ``signature`` proves it is the model's own when it is sent back."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class RedactedThinkingBlock(_Block):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ServerToolUseBlock(_Block):
    """A call of a tool the API runs itself (web search)."""

    type: Literal["server_tool_use"] = "server_tool_use"
    id: str
    name: str
    input: _Object


class WebSearchToolResultBlock(_Block):
    """A server web search's results (or its error), as the API gave them."""

    type: Literal["web_search_tool_result"] = "web_search_tool_result"
    tool_use_id: str
    content: _Json


# A known type by its ``type`` tag; anything else (or a known type in a shape this version does not
# read) as an unknown block, kept as it came.
Block = Annotated[
    Annotated[
        TextBlock
        | ImageBlock
        | DocumentBlock
        | ToolUseBlock
        | ToolResultBlock
        | ThinkingBlock
        | RedactedThinkingBlock
        | ServerToolUseBlock
        | WebSearchToolResultBlock,
        Field(discriminator="type"),
    ]
    | UnknownBlock,
    Field(union_mode="left_to_right"),
]


class Message(BaseModel):
    """One message of the conversation. Text content (a str, as older session files hold it)
    becomes one text block, or none when blank."""

    model_config = _LAZY

    role: Literal["user", "assistant"]
    content: list[Block]

    @field_validator("content", mode="before")
    @classmethod
    def _text_is_a_block(cls, value: object) -> object:
        if isinstance(value, str):
            return [TextBlock(text=value)] if value.strip() else []
        return value

    def tool_uses(self) -> list[ToolUseBlock]:
        """The tool calls of an assistant message, in order (none in a user message)."""
        if self.role != "assistant":
            return []
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]


PromptBlock = Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]


class Prompt(BaseModel):
    """What the person sends: their words, and the files, images and documents that go with them."""

    model_config = _LAZY

    blocks: list[PromptBlock] = Field(default_factory=list)

    @classmethod
    def of(cls, prompt: str | Prompt) -> Prompt:
        """A prompt of plain text (a ``Prompt`` is taken as it is)."""
        if isinstance(prompt, Prompt):
            return prompt
        return cls(blocks=[TextBlock(text=prompt)])

    @property
    def text(self) -> str:
        """Its text blocks joined by a blank line: what hooks, the title and recall read."""
        return "\n\n".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    @property
    def empty(self) -> bool:
        """Nothing to send: no words, no image, no document."""
        return not any(not isinstance(b, TextBlock) or b.text.strip() for b in self.blocks)

    def scrubbed(self) -> Prompt:
        """The prompt with its text scrubbed (see :func:`scrub_text`)."""
        blocks = [
            b.model_copy(update={"text": scrub_text(b.text)}) if isinstance(b, TextBlock) else b
            for b in self.blocks
        ]
        return Prompt(blocks=blocks)


class _RawMessage(BaseModel):
    model_config = _LAZY

    role: Literal["user", "assistant"]
    content: str | list[_Json]


# mypy reads the annotated union as a value, not a type: the adapter's type is stated.
_BLOCK: TypeAdapter[Block] = TypeAdapter(Block, config=_LAZY)


def _block(raw: JsonValue, notes: list[str]) -> Block | None:
    try:
        return _BLOCK.validate_python(raw)
    except ValidationError:  # only what is not an object with a type: anything else is a block
        notes.append("dropped a content block that is not an object with a type")
        return None


def _blocks(raw: list[JsonValue], notes: list[str]) -> list[Block]:
    return [b for b in (_block(r, notes) for r in raw) if b is not None]


def parse_blocks(raw: list[JsonValue], notes: list[str]) -> list[Block]:
    """Blocks from JSON (a response's content), their strings scrubbed: what is not an object
    with a type is left out; a block of a known type in a shape this version does not read is
    kept as an :class:`UnknownBlock`. ``notes`` gets a line for each repair."""
    value, scrubbed = scrub(raw)
    if scrubbed:
        notes.append("replaced undecodable characters (lone surrogates) with U+FFFD")
    return _blocks(value if isinstance(value, list) else [], notes)


def encodable(message: Message) -> bool:
    """Whether ``message`` holds no lone surrogate (its JSON serialiser refuses one): the check is
    cheap, so text scrubbed where it entered is not scrubbed again."""
    try:
        message.__pydantic_serializer__.to_json(message)
    except ValueError:
        return False
    return True


def parse_message(raw: JsonValue) -> tuple[Message | None, list[str]]:
    """A message from JSON (a response, a session file's line): its strings scrubbed, its blocks
    read by :func:`parse_blocks`; None when it is not a user or assistant message with text or
    block content. Returns it with one-line notes about anything repaired."""
    notes: list[str] = []
    raw, scrubbed = scrub(raw)
    if scrubbed:
        notes.append("replaced undecodable characters (lone surrogates) with U+FFFD")
    try:  # the common case, in one step: every block an object with a type
        return Message.model_validate(raw), notes
    except ValidationError:
        pass
    try:
        shape = _RawMessage.model_validate(raw)
    except ValidationError as e:
        if any(err["loc"][:1] == ("content",) for err in e.errors()) and not any(
            err["loc"][:1] == ("role",) for err in e.errors()
        ):
            return None, [*notes, "dropped a message whose content is neither text nor a list of blocks"]
        return None, [*notes, "dropped a message whose role is not user or assistant"]
    content = shape.content
    if isinstance(content, str):
        blocks: list[Block] = [TextBlock(text=content)] if content.strip() else []
    else:
        blocks = _blocks(content, notes)
    return Message(role=shape.role, content=blocks), notes
