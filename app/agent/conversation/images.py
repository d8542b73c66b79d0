"""Images for the model: read, checked and scaled once, before anything is sent.

Every image that enters the conversation (an ``@shot.png`` or pasted path in a prompt, ``--image``,
Ctrl+V, ``read_file`` of an image, an MCP tool's or ``web_fetch``'s image content) comes through
:func:`prepare_image`: it is decoded by Pillow (so a file that only has an image's name is refused,
and its real type is what it is sent as), an animated image gives its first frame, and it is scaled
so its long edge is at most :data:`MAX_EDGE` px and its base64 data at most :data:`MAX_DATA_BYTES`
(what the API would do anyway, after paying for the upload). An image already within both bounds
is sent as its own bytes. Anything wrong is an :class:`ImageError` with a one-line reason, and
nothing is sent.

Blocking (Pillow decodes on the calling thread): call from a worker thread.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import stat
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from app.agent.conversation.blocks import Base64Source, ImageBlock, TextBlock
from memory.text.lines import format_bytes
from memory.text.terminal import strip_terminal

if TYPE_CHECKING:
    from PIL.Image import Image as PilImage

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_DATA_BYTES",
    "MAX_EDGE",
    "MAX_FILE_BYTES",
    "ImageError",
    "Picture",
    "image_label",
    "image_mention",
    "image_tokens",
    "is_image_name",
    "is_label_of",
    "labelled_blocks",
    "prepare_image",
    "read_image_file",
    "without_labels",
]

MAX_EDGE = 1568  # px, the long edge
MAX_DATA_BYTES = 5 * 1024 * 1024  # the base64 data sent for one image
MAX_FILE_BYTES = 50 * 1024 * 1024  # a larger file is refused before it is read
MAX_PIXELS = 100_000_000  # a decoded image larger than this is refused (a decompression bomb)
# A file's name says it is meant as an image; its bytes say which kind it is.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_SENDABLE = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
TOKEN_PIXELS = 750  # an image costs about width·height/750 tokens
_B = TypeVar("_B")


class ImageError(ValueError):
    """An image that cannot be sent, with a one-line reason (its name first)."""


@dataclass(frozen=True)
class Picture:
    """An image as it is sent: its bytes and media type, its size as sent, the size it had, and
    the name it is shown by (a file's name as given, "clipboard", a URL's last part)."""

    data: bytes
    media_type: str
    width: int
    height: int
    name: str
    original: tuple[int, int]

    @property
    def scaled(self) -> bool:
        return (self.width, self.height) != self.original

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def block(self) -> ImageBlock:
        """The image block the model gets; it knows its name and size for the screen and for
        memory's ``[image: name]``, which are never sent."""
        data = base64.b64encode(self.data).decode("ascii")
        block = ImageBlock(source=Base64Source(media_type=self.media_type, data=data))
        return block.labelled(self.name, self.width, self.height)

    def note(self) -> str | None:
        """One line for the person when the image was changed on its way (None: sent as it is)."""
        if not self.scaled:
            return None
        ow, oh = self.original
        return f"{self.name}: scaled from {ow}×{oh} to {self.width}×{self.height}"


def is_image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def image_label(number: int, name: str, width: int, height: int) -> str:
    """How an image reads in the prompt and the chat: ``[Image #1: shot.png 1280×720]``."""
    shown = strip_terminal(name, keep_newlines=False)[:120]
    return f"[Image #{number}: {shown} {width}×{height}]"


def image_tokens(width: int, height: int) -> int:
    """What an image of this size costs in the context window, in tokens."""
    return max(1, (width * height) // TOKEN_PIXELS)


def _b64_len(n: int) -> int:
    return 4 * ((n + 2) // 3)


def _pil() -> ModuleType:
    # Pillow is imported on the first image, never at start-up.
    from PIL import Image

    return Image


def _open(data: bytes, name: str) -> PilImage:
    Image = _pil()
    UnidentifiedImageError = Image.UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            if img.width * img.height > MAX_PIXELS:
                raise ImageError(f"{name}: {img.width}×{img.height} pixels is too large an image")
            img.load()
    except ImageError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        if isinstance(e, UnidentifiedImageError):
            raise ImageError(f"{name}: not a readable image") from None
        raise ImageError(f"{name}: too large an image to decode") from None
    except (OSError, ValueError, SyntaxError, EOFError) as e:  # a truncated or damaged file
        raise ImageError(f"{name}: not a readable image ({type(e).__name__})") from None
    return img


def _encode(img: PilImage, fmt: str, quality: int = 85) -> bytes:
    out = io.BytesIO()
    if fmt == "JPEG":
        if img.mode not in ("RGB", "L"):
            rgba = img.convert("RGBA")
            flat = _pil().new("RGB", rgba.size, (255, 255, 255))  # transparency onto white
            flat.paste(rgba, mask=rgba.getchannel("A"))
            img = flat
        img.save(out, "JPEG", quality=quality, optimize=True)
    else:
        if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
            img = img.convert("RGBA")
        img.save(out, "PNG", optimize=True)
    return out.getvalue()


def prepare_image(data: bytes, name: str) -> Picture:
    """``data`` as an image the API takes (see the module doc); ImageError with one line when it
    is not a readable image or cannot be brought within the bounds."""
    shown = strip_terminal(name, keep_newlines=False)[:200] or "image"
    if len(data) > MAX_FILE_BYTES:
        raise ImageError(
            f"{shown}: {format_bytes(len(data))} is over the {format_bytes(MAX_FILE_BYTES)} image limit"
        )
    img = _open(data, shown)
    fmt = img.format or ""
    original = (img.width, img.height)
    animated = bool(getattr(img, "is_animated", False))
    fits = max(original) <= MAX_EDGE and _b64_len(len(data)) <= MAX_DATA_BYTES
    if fmt in _SENDABLE and fits and not animated:
        return Picture(data, _SENDABLE[fmt], img.width, img.height, shown, original)
    if animated:
        img.seek(0)  # the first frame
        img = img.copy()
    if max(original) > MAX_EDGE:
        k = MAX_EDGE / max(original)
        size = (max(1, round(original[0] * k)), max(1, round(original[1] * k)))
        img = img.convert("RGBA" if img.mode in ("P", "LA", "PA") else img.mode) if img.mode != "RGB" else img
        img = img.resize(size, _pil().Resampling.LANCZOS)
    has_alpha = img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info
    # A photograph is smaller as JPEG; a screenshot or a drawing keeps its edges as PNG.
    tries: list[tuple[str, int]] = [("PNG", 0)] if fmt in ("PNG", "GIF") or has_alpha else []
    tries += [("JPEG", 85), ("JPEG", 70), ("JPEG", 50)]
    for _ in range(8):  # each round three quarters the size: a 5 MB bound is met long before
        for kind, quality in tries:
            out = _encode(img, kind, quality)
            if _b64_len(len(out)) <= MAX_DATA_BYTES:
                media = _SENDABLE[kind]
                return Picture(out, media, img.width, img.height, shown, original)
        smaller = (max(1, img.width * 3 // 4), max(1, img.height * 3 // 4))
        img = img.resize(smaller, _pil().Resampling.LANCZOS)
    raise ImageError(f"{shown}: could not bring the image under {format_bytes(MAX_DATA_BYTES)}")


def read_image_file(path: Path | str, name: str | None = None) -> Picture:
    """The image file at ``path`` (its final component not followed if a symlink), prepared;
    ImageError with one line when it is not a regular readable file, is over
    :data:`MAX_FILE_BYTES` (checked before reading) or is not a readable image."""
    shown = strip_terminal(name if name is not None else os.fspath(path), keep_newlines=False)[:200]
    try:
        # O_NONBLOCK: a FIFO must not hang the reader.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise ImageError(f"{shown}: cannot read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ImageError(f"{shown}: not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            size, limit = format_bytes(st.st_size), format_bytes(MAX_FILE_BYTES)
            raise ImageError(f"{shown}: {size} is over the {limit} image limit")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ImageError(f"{shown}: cannot read ({e.strerror or e})") from None
    finally:
        os.close(fd)
    return prepare_image(data, shown)


def labelled_blocks(picture: Picture, number: int) -> list[TextBlock | ImageBlock]:
    """An image as a prompt or a tool result holds it: its label (``[Image #1: shot.png
    1280×720]``, so the model can tell which image is which file) followed by the image."""
    label = image_label(number, picture.name, picture.width, picture.height)
    return [TextBlock(text=label), picture.block()]


def is_label_of(text: TextBlock, image: ImageBlock) -> bool:
    """Whether ``text`` is the label :func:`labelled_blocks` put before ``image`` (a screen or
    memory that shows the image itself leaves its label out)."""
    return bool(_LABEL.fullmatch(text.text)) and text.text.endswith(f"{image.width}×{image.height}]")


_LABEL = re.compile(r"\[Image #\d+: [^\n]* \d+×\d+\]")


def image_mention(image: ImageBlock) -> str:
    """An image as memory and a summary's transcript read it: ``[image: shot.png]`` (its
    bytes go to the main model only)."""
    return f"[image: {strip_terminal(image.name, keep_newlines=False)[:120]}]"


def without_labels(blocks: Sequence[_B]) -> list[_B]:
    """``blocks`` less each image's label (the text block just before an image that names it):
    a reader that mentions the image itself would name it twice."""
    out: list[_B] = []
    for i, b in enumerate(blocks):
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        if isinstance(b, TextBlock) and isinstance(after, ImageBlock) and is_label_of(b, after):
            continue
        out.append(b)
    return out
