"""A session's images, each kept once beside its log: ``sessions/<id>.images/<sha256>.<ext>``.

The log never holds an image's base64 data. Where a message has an image (a prompt's, or a tool
result's content), its line holds a reference instead::

    {"type":"image","source":{"type":"session_image","sha256":"<hex>","media_type":"image/png"},
     "name":"shot.png","width":1280,"height":720}

The image's bytes (the sha256 names them) are written, fsynced and their name made durable
before the line that refers to them; an image already there under its hash is used again (when
its bytes still hash to its name). The folder is 0700, each file 0600, created no-clobber and
never through a symlink.

Read back (``--continue``, ``--resume``, the app's history, a rewind's reading), a reference
becomes the image block again, with its name and size, so the next request sends it again. A
reference whose file is gone or damaged (or that is not a reference this writer makes: a hash
that is not one, a symlink in the folder) reads nothing and becomes the text block
``[image NAME: no longer kept]``; the replay notes it once. A rewind deletes the images only the
rewound turns referred to (:meth:`SessionImages.prune`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import logging
import os
import re
import stat
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.agent.conversation.blocks import (
    Base64Source,
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    UnknownBlock,
)
from app.agent.conversation.images import MAX_DATA_BYTES
from memory.store.fs import FS
from memory.text.terminal import strip_terminal

__all__ = ["REF_SOURCE", "SessionImages", "images_of", "missing_note", "referenced", "relabel"]

log = logging.getLogger(__name__)

REF_SOURCE = "session_image"
IMAGES_SUFFIX = ".images"
# The file's extension by what the image is sent as; a reference of another type reads nothing.
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
_SHA = re.compile(r"[0-9a-f]{64}")
# What the writer puts in a line (compact JSON, ``type`` then ``sha256``): a rewind finds the
# images the kept lines refer to at byte-search speed.
_REF_BYTES = re.compile(rb'"type":"session_image","sha256":"([0-9a-f]{64})"')
# A kept image is a prepared one (its base64 at most MAX_DATA_BYTES): a larger file is no image
# of this writer's, and is not read whole.
MAX_KEPT_BYTES = MAX_DATA_BYTES


class _RefSource(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["session_image"]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    media_type: str


class _Ref(BaseModel):
    """A reference as a line holds it (read leniently: a missing name or size reads as unknown)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["image"]
    source: _RefSource
    name: str = "image"
    width: int = Field(default=0, ge=0)
    height: int = Field(default=0, ge=0)


def _is_ref(block: object) -> bool:
    if not isinstance(block, UnknownBlock) or block.type != "image":
        return False
    source = (block.model_extra or {}).get("source")
    return isinstance(source, dict) and source.get("type") == REF_SOURCE


def missing_note(name: str) -> TextBlock:
    """What stands in the conversation for an image whose file is no longer kept."""
    shown = strip_terminal(name, keep_newlines=False)[:120] or "image"
    return TextBlock(text=f"[image {shown}: no longer kept]")


def images_of(message: Message) -> list[ImageBlock]:
    """The image blocks of a message, its tool results' included, in order."""
    found: list[ImageBlock] = []
    for b in message.content:
        inner = b.content if isinstance(b, ToolResultBlock) and isinstance(b.content, list) else [b]
        found += [c for c in inner if isinstance(c, ImageBlock)]
    return found


def relabel(source: Message, copy: Message) -> None:
    """Give the images of ``copy`` (``source`` read back from its JSON) the names and sizes those
    of ``source`` have: JSON carries neither."""
    for theirs, ours in zip(images_of(source), images_of(copy), strict=False):
        ours.labelled(theirs.name, theirs.width, theirs.height)


def referenced(data: bytes) -> set[str]:
    """The hashes of the images the session log lines ``data`` refer to."""
    return {m.group(1).decode("ascii") for m in _REF_BYTES.finditer(data)}


class SessionImages:
    """The images folder of one session. ``missing``: the images a read found no longer kept
    (by the block that stands for each, so a replay can tell which are still in the
    conversation)."""

    def __init__(self, folder: Path, fs: FS | None = None) -> None:
        self.folder = folder
        self.fs = fs or FS()
        self._good: set[str] = set()  # written or read back whole by this process
        self._data: dict[str, str] = {}  # sha256 -> base64, read back once per replay
        # id(the note block) -> the block (held, so its id stays its own) and the image's name
        self.missing: dict[int, tuple[TextBlock, str]] = {}

    @classmethod
    def beside(cls, log_path: Path, fs: FS | None = None) -> SessionImages:
        """The images of the session whose log is ``log_path`` (``<id>.jsonl`` -> ``<id>.images``)."""
        return cls(log_path.with_suffix(IMAGES_SUFFIX), fs)

    # -- writing ---------------------------------------------------------------------------

    def dump(self, message: Message) -> dict[str, Any]:
        """``message`` as its log line holds it: JSON, each image a reference to its file (written
        first). An image that cannot be kept (a full disk, a symlinked folder, data that is not
        base64) stays inline: the log must replay to the conversation that was sent."""
        raw = message.model_dump(mode="json")
        content = raw["content"]
        for i, b in enumerate(message.content):
            if isinstance(b, ImageBlock):
                content[i] = self._ref(b, content[i])
            elif isinstance(b, ToolResultBlock) and isinstance(b.content, list):
                inner = content[i]["content"]
                for j, c in enumerate(b.content):
                    if isinstance(c, ImageBlock):
                        inner[j] = self._ref(c, inner[j])
        return raw

    def _ref(self, block: ImageBlock, inline: dict[str, Any]) -> dict[str, Any]:
        media = block.source.media_type
        ext = _EXT.get(media)
        try:
            data = base64.b64decode(block.source.data, validate=True)
        except (binascii.Error, ValueError):
            return inline
        if ext is None:
            return inline
        sha = hashlib.sha256(data).hexdigest()
        try:
            self._put(sha, ext, data)
        except OSError as e:
            log.warning("could not keep an image beside the session (kept in the log): %s", e)
            return inline
        source = {"type": REF_SOURCE, "sha256": sha, "media_type": media}
        return {
            "type": "image",
            "source": source,
            "name": block.name,
            "width": block.width,
            "height": block.height,
        }

    def _put(self, sha: str, ext: str, data: bytes) -> None:
        path = self.folder / f"{sha}.{ext}"
        if sha in self._good and self.fs.exists(path):
            return
        self.fs.makedirs(self.folder, 0o700)  # refuses a symlinked folder
        if stat.S_IMODE(self.fs.lstat(self.folder).st_mode) != 0o700:
            os.chmod(self.folder, 0o700)
        try:
            self.fs.create_durable(path, data, 0o600)
        except FileExistsError:
            if self._read(path, sha) is None:  # damaged, or not a file: replaced
                self.fs.unlink(path)
                self.fs.create_durable(path, data, 0o600)
        self._good.add(sha)

    # -- reading ---------------------------------------------------------------------------

    def resolve(self, message: Message) -> Message:
        """``message`` (changed in place) with each reference read back as its image block, or as
        the note that it is no longer kept."""
        for i, b in enumerate(message.content):
            if _is_ref(b):
                message.content[i] = self._load(b)
            elif isinstance(b, ToolResultBlock) and isinstance(b.content, list):
                for j, c in enumerate(b.content):
                    if _is_ref(c):
                        b.content[j] = self._load(c)
        return message

    def _load(self, block: Block) -> ImageBlock | TextBlock:
        try:
            ref = _Ref.model_validate(block.model_dump(mode="json"))
        except ValidationError:
            ref = None
        ext = _EXT.get(ref.source.media_type) if ref is not None else None
        if ref is None or ext is None:
            name = (block.model_extra or {}).get("name")
            return self._gone(name if isinstance(name, str) else "image")
        sha = ref.source.sha256
        data = self._data.get(sha)
        if data is None:
            raw = self._read(self.folder / f"{sha}.{ext}", sha)
            if raw is None:
                return self._gone(ref.name)
            data = self._data[sha] = base64.b64encode(raw).decode("ascii")
        image = ImageBlock(source=Base64Source(media_type=ref.source.media_type, data=data))
        return image.labelled(ref.name, ref.width, ref.height)

    def _gone(self, name: str) -> TextBlock:
        note = missing_note(name)
        self.missing[id(note)] = (note, name)
        return note

    def _read(self, path: Path, sha: str) -> bytes | None:
        """The bytes of ``path`` when they are the image ``sha`` names; None when the folder or
        the file is a symlink, not a regular file, too large, unreadable or damaged."""
        if not _SHA.fullmatch(sha):
            return None
        if not self.kept():  # lstat: a symlinked folder is none
            return None
        try:
            data = self.fs.read_bytes(path, max_bytes=MAX_KEPT_BYTES)
        except OSError:
            return None
        if len(data) > MAX_KEPT_BYTES or hashlib.sha256(data).hexdigest() != sha:
            return None
        self._good.add(sha)
        return data

    def settle(self, conversation: list[Message]) -> list[str]:
        """At the end of a replay: the names of the images no longer kept that ``conversation``
        (what the model is sent) holds a note for. What the replay read is let go of (the
        conversation holds the images it still has)."""
        names = self._still_missing(conversation)
        self._data.clear()
        self.missing.clear()
        return names

    def _still_missing(self, conversation: list[Message]) -> list[str]:
        if not self.missing:
            return []
        names: list[str] = []
        for m in conversation:
            for b in m.content:
                inner = b.content if isinstance(b, ToolResultBlock) and isinstance(b.content, list) else [b]
                names += [self.missing[id(c)][1] for c in inner if id(c) in self.missing]
        return names

    # -- removing --------------------------------------------------------------------------

    def kept(self) -> bool:
        """Whether the session has an images folder at all."""
        try:
            return stat.S_ISDIR(self.fs.lstat(self.folder).st_mode)
        except OSError:
            return False

    def prune(self, keep: set[str]) -> int:
        """Delete the images whose hash is not in ``keep`` (nothing else in the folder, never
        through a symlink); returns how many went."""
        if not self.kept():
            return 0
        try:
            names = self.fs.listdir(self.folder)
        except OSError:
            return 0
        gone = 0
        for name in names:
            sha, dot, ext = name.partition(".")
            if not dot or ext not in _EXT.values() or not _SHA.fullmatch(sha) or sha in keep:
                continue
            with contextlib.suppress(OSError):
                self.fs.unlink(self.folder / name)
                self._good.discard(sha)
                self._data.pop(sha, None)
                gone += 1
        if gone:
            with contextlib.suppress(OSError):
                self.fs.fsync_dir(self.folder)
        return gone
