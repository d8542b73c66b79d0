"""Every image is prepared in one place before it is sent: decoded by Pillow (a file that only has
an image's name is one line), sent as what its bytes are, its first frame when animated, its long
edge at most 1568 px and its base64 data at most 5 MB; an image already within both bounds is
sent as its own bytes; a file over 50 MB is refused before it is read."""

from __future__ import annotations

import base64
import io
import os
import random
from pathlib import Path

import pytest
from PIL import Image

from app.agent.conversation import images
from app.agent.conversation.images import (
    MAX_DATA_BYTES,
    MAX_EDGE,
    ImageError,
    image_label,
    image_tokens,
    is_label_of,
    labelled_blocks,
    prepare_image,
    read_image_file,
)


def encoded(img: Image.Image, fmt: str, **kw: object) -> bytes:
    out = io.BytesIO()
    img.save(out, fmt, **kw)
    return out.getvalue()


def decoded(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


def test_an_image_within_the_bounds_is_sent_as_its_own_bytes() -> None:
    data = encoded(Image.new("RGB", (640, 480), (1, 2, 3)), "JPEG")
    pic = prepare_image(data, "photo.jpg")
    assert pic.data == data and pic.media_type == "image/jpeg"
    assert (pic.width, pic.height) == (640, 480) and not pic.scaled and pic.note() is None


def test_a_large_image_is_scaled_to_a_long_edge_of_1568_px_keeping_its_shape() -> None:
    pic = prepare_image(encoded(Image.new("RGB", (2000, 4000), (9, 9, 9)), "PNG"), "tall.png")
    assert (pic.width, pic.height) == (784, MAX_EDGE) and pic.original == (2000, 4000)
    assert decoded(pic.data).size == (784, MAX_EDGE)
    assert pic.note() == "tall.png: scaled from 2000×4000 to 784×1568"


def test_the_type_sent_is_what_the_bytes_are_not_what_the_name_says() -> None:
    pic = prepare_image(encoded(Image.new("RGB", (20, 10)), "JPEG"), "looks-like.png")
    assert pic.media_type == "image/jpeg"


def test_an_animated_gif_sends_its_first_frame() -> None:
    frames = [Image.new("RGB", (40, 30), color) for color in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    data = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    pic = prepare_image(data, "anim.gif")
    sent = decoded(pic.data)
    assert not getattr(sent, "is_animated", False) and getattr(sent, "n_frames", 1) == 1
    r, g, b = sent.convert("RGB").getpixel((5, 5))  # type: ignore[misc]
    assert r > 200 and g < 50 and b < 50


def test_noise_too_large_as_png_is_brought_under_5_mb() -> None:
    rng = random.Random(7)
    noise = Image.frombytes("RGB", (MAX_EDGE, MAX_EDGE), rng.randbytes(MAX_EDGE * MAX_EDGE * 3))
    data = encoded(noise, "PNG")
    assert len(base64.b64encode(data)) > MAX_DATA_BYTES
    pic = prepare_image(data, "noise.png")
    assert len(base64.b64encode(pic.data)) <= MAX_DATA_BYTES
    assert pic.media_type == "image/jpeg" and decoded(pic.data).format == "JPEG"


def test_transparency_is_kept_as_png_when_it_fits() -> None:
    pic = prepare_image(encoded(Image.new("RGBA", (3000, 100), (0, 0, 0, 0)), "PNG"), "alpha.png")
    assert pic.media_type == "image/png" and decoded(pic.data).mode == "RGBA"


@pytest.mark.parametrize(
    "data", [b"", b"not an image at all", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, b"GIF89a\x01"]
)
def test_what_is_not_a_readable_image_is_one_line(data: bytes) -> None:
    with pytest.raises(ImageError) as refused:
        prepare_image(data, "shot.png")
    assert str(refused.value).startswith("shot.png: ") and "\n" not in str(refused.value)


def test_a_truncated_image_is_one_line() -> None:
    data = encoded(Image.new("RGB", (500, 500), (200, 10, 10)), "PNG")
    with pytest.raises(ImageError, match="not a readable image"):
        prepare_image(data[: len(data) // 2], "cut.png")


def test_a_decompression_bomb_is_refused_before_it_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "MAX_PIXELS", 100 * 100)
    with pytest.raises(ImageError, match="too large an image"):
        prepare_image(encoded(Image.new("L", (200, 200)), "PNG"), "bomb.png")


def test_a_file_over_50_mb_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "huge.png"
    with big.open("wb") as f:
        f.truncate(images.MAX_FILE_BYTES + 1)  # sparse: nothing to read if it were read
    opened: list[int] = []
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: opened.append(fd) or real_fdopen(fd, *a, **k))
    with pytest.raises(ImageError, match=r"over the 50\.0 MiB image limit"):
        read_image_file(big, "huge.png")
    assert opened == []  # its size was enough: never opened for reading


def test_a_symlink_or_a_folder_is_not_read_as_an_image(tmp_path: Path) -> None:
    (tmp_path / "real.png").write_bytes(encoded(Image.new("RGB", (4, 4)), "PNG"))
    (tmp_path / "link.png").symlink_to(tmp_path / "real.png")
    (tmp_path / "dir.png").mkdir()
    with pytest.raises(ImageError, match="cannot read"):
        read_image_file(tmp_path / "link.png", "link.png")
    with pytest.raises(ImageError):
        read_image_file(tmp_path / "dir.png", "dir.png")


def test_the_block_knows_its_name_and_size_but_never_sends_them() -> None:
    pic = prepare_image(encoded(Image.new("RGB", (64, 48)), "PNG"), "shot.png")
    label, block = labelled_blocks(pic, 2)
    assert label.text == "[Image #2: shot.png 64×48]" and is_label_of(label, block)
    assert (block.name, block.width, block.height) == ("shot.png", 64, 48)
    assert block.model_dump(mode="json") == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(pic.data).decode()},
    }
    assert image_tokens(64, 48) == 4 and image_label(1, "a\x1b[31mb\nc", 1, 2) == "[Image #1: ab c 1×2]"
