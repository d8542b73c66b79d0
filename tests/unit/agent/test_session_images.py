"""A session keeps each image once, by its content's hash, beside its log (never base64 in the
JSONL), and a replay reads it back: an image block with its data, name and size again. A missing or
damaged image file is a note in its place and one warning, never a failed resume; a hostile
reference reads nothing outside the session's images folder."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
from pathlib import Path

from PIL import Image

from app.agent.conversation.blocks import ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from app.agent.conversation.images import labelled_blocks, prepare_image
from app.agent.conversation.session_images import SessionImages
from app.agent.conversation.session_store import SessionStore
from memory.store.fs import FS


def png(width: int, height: int, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def prompt(name: str, data: bytes, words: str = "what is wrong here") -> Message:
    return Message(
        role="user", content=[TextBlock(text=words), *labelled_blocks(prepare_image(data, name), 1)]
    )


def tool_turn(data: bytes, name: str = "shot.png") -> list[Message]:
    """A tool call and its result holding an image (as ``read_file`` of an image answers)."""
    picture = prepare_image(data, name)
    call = ToolUseBlock(id="toolu_1", name="read_file", input={"path": name})
    result = ToolResultBlock(tool_use_id="toolu_1", content=[TextBlock(text="[Image #1]"), picture.block()])
    return [Message(role="assistant", content=[call]), Message(role="user", content=[result])]


def images_of(messages: list[Message]) -> list[ImageBlock]:
    found: list[ImageBlock] = []
    for m in messages:
        for b in m.content:
            inner = b.content if isinstance(b, ToolResultBlock) and isinstance(b.content, list) else [b]
            found += [c for c in inner if isinstance(c, ImageBlock)]
    return found


def one_turn(store: SessionStore, ws: Path, *messages: Message) -> Path:
    with store.create(ws) as s:
        s.begin_turn("a turn")
        for m in messages:
            s.append(m)
        s.end_turn("completed")
        return s.path


def test_each_image_is_kept_once_beside_the_session_and_read_back_whole(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    red, blue = png(40, 30), png(20, 10, (0, 0, 255))
    answer = Message(role="assistant", content=[TextBlock(text="seen")])
    log = one_turn(store, tmp_path, prompt("shot.png", red), *tool_turn(red), answer)
    with store.open(log.stem) as s:
        s.begin_turn("again")
        s.append(prompt("other.png", blue, "and this one"))
        s.append(Message(role="assistant", content=[TextBlock(text="blue")]))
        s.end_turn("completed")
    folder = log.with_suffix(".images")
    files = sorted(p.name for p in folder.iterdir())
    want = sorted(f"{hashlib.sha256(d).hexdigest()}.png" for d in (red, blue))
    assert files == want  # the red one was sent twice (a prompt and a tool result): one file
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE((folder / f).stat().st_mode) == 0o600 for f in files)
    text = log.read_text()
    for data in (red, blue):
        assert base64.b64encode(data).decode()[:40] not in text  # no base64 in the JSONL
    with store.open(log.stem) as again:
        images = images_of(again.messages)
        assert again.warnings == []
    assert [(i.name, i.width, i.height) for i in images] == [
        ("shot.png", 40, 30),
        ("shot.png", 40, 30),
        ("other.png", 20, 10),
    ]
    assert [base64.b64decode(i.source.data) for i in images] == [red, red, blue]
    assert all(i.source.media_type == "image/png" for i in images)


def _break(log: Path, how: str) -> None:
    [image] = log.with_suffix(".images").iterdir()
    if how == "missing":
        image.unlink()
    else:
        image.write_bytes(image.read_bytes()[:-10] + b"0123456789")


def test_a_missing_or_damaged_image_is_a_note_and_one_warning_never_a_failed_resume(tmp_path: Path) -> None:
    for how in ("missing", "damaged"):
        store = SessionStore(tmp_path / how)
        answer = Message(role="assistant", content=[TextBlock(text="seen")])
        log = one_turn(store, tmp_path, prompt("shot.png", png(40, 30)), *tool_turn(png(40, 30)), answer)
        _break(log, how)
        with store.open(log.stem) as s:
            assert images_of(s.messages) == []
            notes = [b.text for m in s.messages for b in m.content if isinstance(b, TextBlock)]
            results = [r.content for m in s.messages for r in m.tool_results()]
            assert "[image shot.png: no longer kept]" in notes
            assert [
                c.text for r in results if isinstance(r, list) for c in r if isinstance(c, TextBlock)
            ] == [
                "[Image #1]",
                "[image shot.png: no longer kept]",
            ]
            [warning] = s.warnings
            assert "2 image(s) no longer kept beside the session (shot.png)" in warning


def _hostile_line(ref: dict[str, object]) -> bytes:
    image = {"type": "image", "source": ref, "name": "x.png", "width": 1, "height": 1}
    line = {
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi"}, image]},
    }
    return json.dumps(line).encode() + b"\n"


def test_a_hostile_reference_reads_nothing_outside_the_images_folder(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    log = one_turn(store, tmp_path, Message(role="user", content=[TextBlock(text="hello")]))
    secret = png(8, 8)
    outside = tmp_path / "secret.png"
    outside.write_bytes(secret)
    sha = hashlib.sha256(secret).hexdigest()
    folder = log.with_suffix(".images")
    folder.mkdir(mode=0o700)
    # Its own name, but a symlink to a file outside: not followed.
    (folder / f"{sha}.png").symlink_to(outside)
    refs = [
        {"type": "session_image", "sha256": sha, "media_type": "image/png"},
        {"type": "session_image", "sha256": "../../secret", "media_type": "image/png"},
        {"type": "session_image", "sha256": sha, "media_type": "../../secret.png"},
        {"type": "session_image", "sha256": sha + "/../" + sha, "media_type": "image/png"},
    ]
    with log.open("ab") as f:
        for ref in refs:
            f.write(_hostile_line(ref))
    with store.open(log.stem) as s:
        assert images_of(s.messages) == []
        notes = [b.text for m in s.messages for b in m.content if isinstance(b, TextBlock)]
        assert notes.count("[image x.png: no longer kept]") == 4
    # Nothing is opened outside the folder: each reference is checked before any read.
    fs = FS(record=True)
    images = SessionImages(folder, fs)
    for ref in refs:
        parsed = Message.model_validate(json.loads(_hostile_line(ref))["message"])
        assert images_of([images.resolve(parsed)]) == []
    assert fs.log is not None
    assert all(os.path.dirname(p) in (str(folder), str(folder.parent)) for _, p, _ in fs.log), fs.log
    # A symlinked images folder is not read at all.
    os.unlink(folder / f"{sha}.png")
    os.rmdir(folder)
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / f"{sha}.png").write_bytes(secret)
    folder.symlink_to(real)
    with store.open(log.stem) as s:
        assert images_of(s.messages) == []


def test_an_image_file_left_damaged_by_a_crash_is_written_again(tmp_path: Path) -> None:
    data = png(12, 12)
    folder = tmp_path / "s.images"
    folder.mkdir()
    sha = hashlib.sha256(data).hexdigest()
    (folder / f"{sha}.png").write_bytes(data[:5])  # a write cut before its line was written
    images = SessionImages(folder)
    raw = images.dump(prompt("a.png", data))
    assert raw["content"][2]["source"] == {"type": "session_image", "sha256": sha, "media_type": "image/png"}
    assert (folder / f"{sha}.png").read_bytes() == data


def test_compaction_and_rewind_records_refer_to_the_images_too(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    data = png(30, 20)
    answer = Message(role="assistant", content=[TextBlock(text="seen")])
    log = one_turn(store, tmp_path, prompt("shot.png", data), answer)
    with store.open(log.stem) as s:
        s.compact("a summary", list(s.messages), None)
        s.record_rewind("[rewind]", 1, (list(s.messages), None))
    b64 = base64.b64encode(data).decode()
    assert b64[:40] not in log.read_text()
    for history in (True, False):
        with SessionStore(tmp_path / "home", history=history).open(log.stem) as s:
            [image] = images_of(s.messages)
            assert (image.name, image.source.data) == ("shot.png", b64) and s.warnings == []


def test_a_message_scrubbed_on_its_way_to_the_file_keeps_its_images_names_and_sizes(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    with store.create(tmp_path) as s:
        s.begin_turn("a turn")
        s.append(prompt("shot.png", png(10, 8), words="a lone surrogate: \udcff"))
        [image] = images_of(s.messages)
        assert (image.name, image.width, image.height) == ("shot.png", 10, 8)
        log = s.path
    with store.open(log.stem) as again:
        [image] = images_of(again.messages)
        assert (image.name, image.width, image.height) == ("shot.png", 10, 8)
