"""Images entering a prompt (app/agent/conversation/attachments.py): ``@shot.png`` attached as its
label and the image, numbered after the images pasted into the prompt, read off the loop with
aiofiles; what a terminal pastes for a dragged file read as image paths."""

from __future__ import annotations

import asyncio
import base64
import io
import os
from pathlib import Path

import aiofiles
import pytest
from PIL import Image

from app.agent.conversation import attachments
from app.agent.conversation.attachments import (
    attach_image,
    label_number,
    pasted_image_paths,
    read_image,
    with_attachments,
)
from app.agent.conversation.blocks import ImageBlock, TextBlock
from app.agent.conversation.images import ImageError, prepare_image


def png(size: tuple[int, int], color: str = "orange", fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, fmt)
    return out.getvalue()


def decoded(block: ImageBlock) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(block.source.data)))


# -- @shot.png -----------------------------------------------------------------------------------


async def test_an_at_image_is_its_label_then_the_image_after_the_words(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png((320, 200)))
    prompt, notes = await with_attachments("what is here @shot.png?", tmp_path, frozenset())
    words, label, image = prompt.blocks
    assert isinstance(words, TextBlock) and words.text == "what is here @shot.png?"
    assert isinstance(label, TextBlock) and label.text == "[Image #1: shot.png 320×200]"
    assert isinstance(image, ImageBlock) and image.source.media_type == "image/png"
    assert (image.name, image.width, image.height) == ("shot.png", 320, 200)
    assert decoded(image).size == (320, 200)
    assert notes == []


async def test_images_and_text_files_attach_in_the_prompts_order_numbered_after_pasted_ones(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.jpg").write_bytes(png((10, 10), fmt="JPEG"))
    (tmp_path / "b.txt").write_text("bee\n")
    (tmp_path / "c.webp").write_bytes(png((30, 20), fmt="WEBP"))
    pasted = prepare_image(png((5, 6)), "drag.png")
    label = "[Image #1: drag.png 5×6]"
    extra = [prepare_image(png((7, 8)), "opt.gif")]
    prompt, _ = await with_attachments(
        f"{label} vs @a.jpg and @b.txt then @c.webp",
        tmp_path,
        frozenset(),
        pasted={label: pasted, "[Image #9: gone.png 1×1]": pasted},
        extra=extra,
    )
    texts = [b.text if isinstance(b, TextBlock) else f"<{b.name}>" for b in prompt.blocks]
    assert texts[1:] == [
        "[Image #1: drag.png 5×6]",
        "<drag.png>",
        "[Image #2: a.jpg 10×10]",
        "<a.jpg>",
        '<attached-file path="b.txt">\nbee\n</attached-file>',
        "[Image #3: c.webp 30×20]",
        "<c.webp>",
        "[Image #4: opt.gif 7×8]",
        "<opt.gif>",
    ]


async def test_a_big_image_is_scaled_and_says_so_in_a_note(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(png((4000, 1000)))
    prompt, notes = await with_attachments("@big.png", tmp_path, frozenset())
    image = prompt.blocks[-1]
    assert isinstance(image, ImageBlock) and decoded(image).size == (1568, 392)
    assert notes == ["big.png: scaled from 4000×1000 to 1568×392"]


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("broken.png", b"\x89PNG\r\n\x1a\nnot at all", "@broken.png: not a readable image"),
        ("words.jpg", b"hello\n", "@words.jpg: not a readable image"),
        ("missing.png", None, "@missing.png: cannot read (No such file or directory)"),
    ],
)
async def test_an_image_that_cannot_be_sent_refuses_the_prompt_in_one_line(
    tmp_path: Path, name: str, content: bytes | None, says: str
) -> None:
    if content is not None:
        (tmp_path / name).write_bytes(content)
    with pytest.raises(ImageError) as caught:
        await with_attachments(f"look @{name}", tmp_path, frozenset())
    assert str(caught.value).startswith(says) and "\n" not in str(caught.value)


async def test_an_image_is_confined_to_the_workspace_like_a_text_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "out.png").write_bytes(png((4, 4)))
    (ws / "link.png").symlink_to(tmp_path / "out.png")
    for rel in ("../out.png", str(tmp_path / "out.png"), "link.png"):
        with pytest.raises(ImageError, match="outside the workspace"):
            await attach_image(ws, rel)


async def test_a_listed_workspace_leaves_unknown_image_names_as_words_but_attaches_ignored_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "ignored.png").write_bytes(png((3, 3)))  # on disk, left out of the listing
    prompt, _ = await with_attachments("@nowhere.png and @ignored.png", tmp_path, frozenset({"README.md"}))
    labels = [b.text for b in prompt.blocks[1:] if isinstance(b, TextBlock)]
    assert labels == ["[Image #1: ignored.png 3×3]"]


async def test_an_image_over_50_mb_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with open(tmp_path / "huge.png", "wb") as f:
        f.truncate(50 * 1024 * 1024 + 1)
    with pytest.raises(ImageError, match=r"^@huge\.png: 50\.0 MiB is over the 50\.0 MiB image limit$"):
        await attach_image(tmp_path, "huge.png")


async def test_a_fifo_named_as_an_image_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.png")
    with pytest.raises(ImageError, match="not a regular file"):
        await asyncio.wait_for(attach_image(tmp_path, "pipe.png"), 5)


async def test_files_are_read_with_aiofiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = aiofiles.open

    def spy(path: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        opened.append(os.path.basename(path))
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(aiofiles, "open", spy)
    (tmp_path / "a.png").write_bytes(png((2, 2)))
    (tmp_path / "b.txt").write_text("text\n")
    await with_attachments("@a.png @b.txt", tmp_path, frozenset())
    assert opened == ["a.png", "b.txt"]


async def test_reading_an_image_leaves_the_loop_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Decoding is held until the loop has shown it still runs: a decode on the loop would hang.
    import threading

    ran = threading.Event()
    real = attachments.prepare_image

    def slow(data: bytes, name: str):  # type: ignore[no-untyped-def]
        assert ran.wait(5), "the loop did not run while the image was decoded"
        return real(data, name)

    monkeypatch.setattr(attachments, "prepare_image", slow)
    (tmp_path / "a.png").write_bytes(png((2, 2)))
    task = asyncio.ensure_future(read_image(tmp_path / "a.png", "a.png"))
    while not task.done():
        ran.set()
        await asyncio.sleep(0.01)
    assert (await task).width == 2


def test_a_label_knows_its_number() -> None:
    assert label_number("[Image #12: x.png 1×1]") == 12
    assert label_number("[pasted 3 lines, 1 KiB]") == 0


# -- a pasted path ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pasted",
    [
        "/home/me/My Shot.png",
        "'/home/me/My Shot.png'",
        '"/home/me/My Shot.png"',
        "/home/me/My\\ Shot.png",
        "file:///home/me/My%20Shot.png",
        "'/home/me/My Shot.png' ",
        "/home/me/My\\ Shot.png\n",
        "file://localhost/home/me/My%20Shot.png\r\n".replace("\r\n", "\n"),
    ],
)
def test_what_a_terminal_pastes_for_a_dragged_file_reads_as_its_path(pasted: str) -> None:
    assert ["/home/me/My Shot.png"] in pasted_image_paths(pasted)


def test_several_dragged_files_read_as_several_paths() -> None:
    assert pasted_image_paths("'/a/one shot.png' /b/two.JPG file:///c/three.webp")[0] == [
        "/a/one shot.png",
        "/b/two.JPG",
        "/c/three.webp",
    ]


def test_a_home_relative_path_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    assert pasted_image_paths("~/shots/a.gif") == [["/home/me/shots/a.gif"]]


@pytest.mark.parametrize(
    "pasted",
    [
        "shot.png",  # not a path a terminal gives for a drag
        "look at /home/me/shot.png please",
        "/home/me/notes.txt",
        "/a/b.png /c/notes.txt",
        "file://host.example/a.png",
        "line one\n/home/me/shot.png and more",
        "",
        "'/unclosed/quote.png",
    ],
)
def test_anything_else_pasted_is_text(pasted: str) -> None:
    assert pasted_image_paths(pasted) == []
