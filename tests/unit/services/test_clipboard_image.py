"""The clipboard's image for Ctrl+V (app/services/clipboard_image.py), read with the desktop's tools:
here fake ``wl-paste``, ``xclip`` and ``osascript`` scripts, alone on the PATH, that log how they
were called."""

from __future__ import annotations

import io
import json
import re
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from app.services.clipboard_image import ClipboardError, clipboard_image


def png_bytes(size: tuple[int, int] = (12, 8)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, "green").save(out, "PNG")
    return out.getvalue()


def fake_tool(folder: Path, name: str, body: str) -> Path:
    """A script named ``name`` in ``folder`` that appends its arguments to ``calls.jsonl`` and
    then runs ``body`` (Python, with ``args`` and ``out``, the binary stdout)."""
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys, time\n"
        "args = sys.argv[1:]\n"
        f"with open({str(folder / 'calls.jsonl')!r}, 'a') as log:\n"
        f"    log.write(json.dumps([{name!r}, *args]) + '\\n')\n"
        "out = sys.stdout.buffer\n" + body + "\n"
    )
    script.chmod(0o755)
    return script


def calls(folder: Path) -> list[list[str]]:
    log = folder / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def offering(types: list[str], data: bytes, list_flag: str) -> str:
    """A tool body that lists ``types`` for ``list_flag`` and gives ``data`` otherwise."""
    return (
        f"if {list_flag!r} in args:\n"
        f"    out.write({chr(10).join(types).encode()!r} + b'\\n')\n"
        "else:\n"
        f"    out.write({data!r})\n"
    )


async def test_wl_paste_lists_the_types_then_gives_the_png(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    data = png_bytes()
    fake_tool(bin_, "wl-paste", offering(["text/plain", "image/png", "image/jpeg"], data, "--list-types"))
    assert await clipboard_image(path=str(bin_)) == data
    assert calls(bin_) == [["wl-paste", "--list-types"], ["wl-paste", "--no-newline", "--type", "image/png"]]


async def test_xclip_asks_the_clipboard_selection_for_its_targets_then_the_image(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    data = png_bytes()
    fake_tool(bin_, "xclip", offering(["TARGETS", "image/png"], data, "TARGETS"))
    assert await clipboard_image(path=str(bin_)) == data
    assert calls(bin_) == [
        ["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"],
        ["xclip", "-selection", "clipboard", "-t", "image/png", "-o"],
    ]


async def test_a_failing_wl_paste_hands_on_to_xclip(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    data = png_bytes()
    fake_tool(bin_, "wl-paste", "sys.exit(1)  # no Wayland display")
    fake_tool(bin_, "xclip", offering(["image/png"], data, "TARGETS"))
    assert await clipboard_image(path=str(bin_)) == data
    assert [c[0] for c in calls(bin_)] == ["wl-paste", "xclip", "xclip"]


async def test_osascript_writes_the_clipboard_png_to_the_file_it_is_given(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    data = png_bytes()
    fake_tool(bin_, "osascript", f"open(args[-1], 'wb').write({data!r})")
    assert await clipboard_image(path=str(bin_)) == data
    [call] = calls(bin_)
    assert call[1] == "-e" and "«class PNGf»" in call[2]


async def test_a_clipboard_of_text_is_one_line_naming_the_tools_it_asked(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    fake_tool(bin_, "wl-paste", offering(["text/plain"], b"words", "--list-types"))
    fake_tool(bin_, "xclip", offering(["UTF8_STRING", "TARGETS"], b"words", "TARGETS"))
    with pytest.raises(ClipboardError) as caught:
        await clipboard_image(path=str(bin_))
    assert str(caught.value) == "Ctrl+V: the clipboard holds no image (looked with wl-paste, xclip)"
    # Only the types were asked for: no text was read as an image.
    assert calls(bin_) == [
        ["wl-paste", "--list-types"],
        ["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"],
    ]


async def test_no_tool_at_all_is_one_line_naming_what_it_looked_for(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ClipboardError) as caught:
        await clipboard_image(path=str(tmp_path / "empty"))
    line = str(caught.value)
    assert "\n" not in line
    assert "no clipboard tool found (looked for wl-paste, xclip, osascript)" in line


async def test_a_tool_that_hangs_is_killed_within_the_bound(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    fake_tool(bin_, "wl-paste", "time.sleep(60)")
    started = time.monotonic()
    with pytest.raises(ClipboardError, match=re.escape("wl-paste did not answer within 0.5 s")):
        await clipboard_image(path=str(bin_), timeout=0.5)
    assert time.monotonic() - started < 5


async def test_an_image_over_the_limit_is_refused_and_its_tool_stopped(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    body = offering(["image/png"], b"", "--list-types").replace(
        "    out.write(b'')", "    while True: out.write(b'x' * 65536)"
    )
    fake_tool(bin_, "wl-paste", body)
    started = time.monotonic()
    with pytest.raises(ClipboardError, match=re.escape("is over the 1.0 MiB image limit")):
        await clipboard_image(path=str(bin_), limit=1024 * 1024)
    assert time.monotonic() - started < 5
