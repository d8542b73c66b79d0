"""Sessions: JSONL files under $PSEUDOCLAUDE_HOME/sessions/, restored into a valid conversation."""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.agent.conversation.blocks import (
    Base64Source,
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    parse_message,
)
from app.agent.conversation.messages import (
    INTERRUPTED,
    app_note,
    is_app_note,
    push_message,
    restore_conversation,
)
from app.agent.conversation.session import Session
from app.agent.conversation.session_log import SessionError
from app.agent.conversation.session_store import SessionStore

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


@pytest.fixture
def store(isolated_home: Path) -> SessionStore:
    return SessionStore()


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def asst(*blocks: Block) -> Message:
    return Message(role="assistant", content=list(blocks))


def text(t: str) -> TextBlock:
    return TextBlock(text=t)


def tool_use(i: str, name: str = "read_file") -> ToolUseBlock:
    return ToolUseBlock(id=i, name=name, input={"path": "a.txt"})


def result(i: str, content: str = "ok", is_error: bool | None = None) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=i, content=content, is_error=is_error)


def results(*blocks: Block) -> Message:
    return Message(role="user", content=list(blocks))


def raw(m: Message) -> dict[str, Any]:
    """A message as the session file's JSON holds it."""
    return m.model_dump(mode="json")


def raw_note(t: str) -> dict[str, Any]:
    return app_note(t).model_dump(mode="json")


def old_user(t: str) -> dict[str, Any]:
    """A user message as versions before content blocks wrote it: its text as a str."""
    return {"role": "user", "content": t}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def assert_valid(messages: list[Message]) -> None:
    """What the Messages API needs: user first, roles alternate, every tool_use answered right after."""
    if not messages:
        return
    assert messages[0].role == "user"
    for a, b in itertools.pairwise(messages):
        assert a.role != b.role, messages
    for i, m in enumerate(messages):
        blocks = m.content
        assert blocks, m
        for b in blocks:
            if isinstance(b, TextBlock):
                assert b.text.strip()
        if m.role == "user":
            res = m.tool_results()
            assert blocks[: len(res)] == res, "tool results come first"
            prev_ids = [b.id for b in messages[i - 1].tool_uses()] if i > 0 else []
            assert sorted(b.tool_use_id for b in res) == sorted(prev_ids), messages
        else:
            ids = [b.id for b in m.tool_uses()]
            if ids:
                assert i + 1 < len(messages), "a tool_use is never left without a result"


# -- creating and writing --------------------------------------------------------------------


def test_create_writes_a_private_file_with_a_header(
    store: SessionStore, ws: Path, isolated_home: Path
) -> None:
    with store.create(ws, model="claude-x") as s:
        assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", s.id)
        assert s.path == isolated_home / "sessions" / f"{s.id}.jsonl"
        assert s.workspace == ws and s.messages == [] and s.warnings == []
    assert stat.S_IMODE(os.stat(isolated_home / "sessions").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(s.path).st_mode) == 0o600
    [meta] = records(s.path)
    assert meta == {
        "type": "meta",
        "version": 1,
        "id": s.id,
        "workspace": str(ws),
        "created": meta["created"],
        "model": "claude-x",
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["created"])


def test_existing_sessions_folder_is_made_private(store: SessionStore, ws: Path, isolated_home: Path) -> None:
    (isolated_home / "sessions").mkdir(parents=True, mode=0o755)
    os.chmod(isolated_home / "sessions", 0o755)
    store.create(ws).close()
    assert stat.S_IMODE(os.stat(isolated_home / "sessions").st_mode) == 0o700


def test_each_line_is_on_disk_as_soon_as_it_is_appended(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    assert s.begin_turn("hello there") == 1
    s.append(user("hello there"))
    # Not closed, no end_turn: another reader already sees every line.
    assert [r["type"] for r in records(s.path)] == ["meta", "turn_start", "message"]
    assert records(s.path)[1]["text"] == "hello there"
    s.close()


def test_round_trip(store: SessionStore, ws: Path) -> None:
    convo = [
        user("read a.txt"),
        asst(text("Reading it."), tool_use("t1"), tool_use("t2", "grep")),
        results(result("t1", "line one\u2028still line one\nline two"), result("t2", "boom", is_error=True)),
        asst(text("Done: caf\u00e9 \U0001f600 \udcff")),
        results(
            text("thanks"),
            ImageBlock(source=Base64Source(media_type="image/png", data="iVBORw0KGgo=")),
            # A block this version does not read (an image without its media type) is kept as sent.
            UnknownBlock(type="image", source={"type": "base64", "data": "x"}),
        ),
        asst(text("You're welcome.")),
    ]
    with store.create(ws, model="m1") as s:
        n = s.begin_turn("read a.txt")
        for m in convo[:4]:
            s.append(m)
        s.end_turn("completed", iterations=2)
        assert s.begin_turn("thanks") == n + 1
        for m in convo[4:]:
            s.append(m)
        s.end_turn("completed")
        live = s.messages
    # A lone surrogate could never be sent again: it is stored as U+FFFD.
    expected = [*convo[:3], asst(text("Done: caf\u00e9 \U0001f600 \ufffd")), *convo[4:]]
    assert live == expected
    with store.open(s.id) as r:
        assert r.messages == expected
        assert r.warnings == []
        assert r.turns == 2 and r.title == "read a.txt" and r.model == "m1" and r.workspace == ws
        assert r.begin_turn("more") == 3
    ends = [x for x in records(s.path) if x["type"] == "turn_end"]
    assert ends[0]["status"] == "completed" and ends[0]["iterations"] == 2 and ends[0]["turn"] == 1
    # ASCII only, one record per line.
    assert all(b < 0x80 for b in s.path.read_bytes())


def test_append_takes_a_snapshot_and_keeps_fields_the_api_adds(store: SessionStore, ws: Path) -> None:
    msg, notes = parse_message(
        {"role": "user", "content": [{"type": "text", "text": "hi", "citations": None}]}
    )
    assert msg is not None and notes == []
    with store.create(ws) as s:
        s.append(msg)
        msg.content.append(text("later"))
        assert s.messages == [Message(role="user", content=[TextBlock(text="hi", citations=None)])]
        assert records(s.path)[-1]["message"] == {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "citations": None}],
        }


@pytest.mark.parametrize(
    "bad", [{"role": "system", "content": "x"}, {"role": "user"}, {"role": "user", "content": {"a": 1}}, "hi"]
)
def test_what_is_not_a_message_never_becomes_one(store: SessionStore, ws: Path, bad: Any) -> None:
    message, notes = parse_message(bad)
    assert message is None and notes
    with store.create(ws) as s:
        with pytest.raises(ValueError):
            s.append(Message.model_validate(bad))
        assert [r["type"] for r in records(s.path)] == ["meta"]


def test_closed_session_refuses_writes(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.close()
    s.close()  # idempotent
    with pytest.raises(SessionError, match="closed"):
        s.append(user("x"))


# -- finding sessions --------------------------------------------------------------------------


def set_mtime(s: Session, t: int) -> None:
    os.utime(s.path, (t, t))


def test_latest_is_this_workspaces_most_recent(store: SessionStore, ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert store.latest(ws) is None
    a, b, c = store.create(ws), store.create(ws), store.create(other)
    for s in (a, b, c):
        s.begin_turn("a prompt")  # --continue skips sessions in which nothing was sent
        s.end_turn("completed")
        s.close()
    set_mtime(a, 2_000_000_000)
    set_mtime(b, 1_900_000_000)
    set_mtime(c, 2_100_000_000)  # newer, but another workspace's
    latest = store.latest(ws)
    assert latest is not None and latest.id == a.id
    latest.close()
    # Real paths are compared: a symlink to the workspace finds the same sessions.
    link = tmp_path / "link"
    link.symlink_to(ws)
    again = store.latest(link)
    assert again is not None and again.id == a.id
    again.close()
    other_latest = store.latest(other)
    assert other_latest is not None and other_latest.id == c.id
    other_latest.close()


def test_open_by_full_id_and_unambiguous_prefix(store: SessionStore, ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    s = store.create(other)
    s.close()
    with store.open(s.id) as r:
        assert r.id == s.id
        assert r.workspace == Path(os.path.realpath(other))  # allowed; the caller sees whose it is
    with store.open(s.id[:10]) as r:
        assert r.id == s.id
    with store.open(f"  {s.id}.jsonl ") as r:
        assert r.id == s.id


def test_open_unknown_ambiguous_and_malformed_ids(store: SessionStore, ws: Path) -> None:
    with pytest.raises(SessionError, match="no session matches"):
        store.open("2099")
    a, b = store.create(ws), store.create(ws)
    a.close()
    b.close()
    prefix = a.id[: next(i for i, (x, y) in enumerate(zip(a.id, b.id, strict=True)) if x != y)]
    with pytest.raises(SessionError, match="ambiguous") as ei:
        store.open(prefix)
    assert a.id in str(ei.value) and b.id in str(ei.value) and "\n" not in str(ei.value)
    for bad in ("", "../x", "a/b", "x y"):
        with pytest.raises(SessionError, match="not a session id"):
            store.open(bad)


def test_a_session_is_written_by_one_holder_at_a_time(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.begin_turn("a prompt")
    s.end_turn("completed")
    with pytest.raises(SessionError, match="in use"):
        store.open(s.id)
    with pytest.raises(SessionError, match="in use"):
        store.latest(ws)
    s.close()
    store.open(s.id).close()


def test_list_newest_first_with_title_and_turns(store: SessionStore, ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    long = "  Please\nrefactor\tthe \x1b[31mparser " + "x" * 200
    a = store.create(ws)
    a.begin_turn(long)
    a.append(user("<memory-update>\n+ a line\n</memory-update>\n" + long))
    a.append(asst(text("ok")))
    a.end_turn("completed")
    a.begin_turn("second")
    a.end_turn("cancelled")
    a.close()
    b = store.create(ws)
    b.append(user("<memory-update>x</memory-update>\nno turn marker here"))  # title falls back to the message
    b.close()
    c = store.create(other)
    c.close()
    set_mtime(a, 1_900_000_000)
    set_mtime(b, 2_000_000_000)
    set_mtime(c, 2_100_000_000)
    (store.dir / "notes.txt").write_text("not a session")
    (store.dir / "20990101T000000Z-badbad.jsonl").write_text("garbage\n")

    infos = store.list(ws)
    assert [i.id for i in infos] == [b.id, a.id]
    ia = infos[1]
    assert ia.turns == 2 and ia.workspace == str(ws) and ia.path == a.path
    assert len(ia.title) <= 80 and "\n" not in ia.title and "\x1b" not in ia.title
    # The title is one terminal-safe line: the escape sequence goes whole, not just its ESC.
    assert ia.title.startswith("Please refactor the parser xxx") and ia.title.endswith("…")
    assert infos[0].title == "no turn marker here" and infos[0].turns == 0
    assert ia.updated == "2030-03-17T17:46:40Z"
    assert [i.id for i in store.list()] == [c.id, b.id, a.id]


def test_store_home_defaults_to_pseudoclaude_home(isolated_home: Path, tmp_path: Path, ws: Path) -> None:
    assert SessionStore().dir == isolated_home / "sessions"
    assert SessionStore(tmp_path / "h").dir == tmp_path / "h" / "sessions"


# -- restoring after a crash or a cancel --------------------------------------------------------


def test_dangling_tool_use_gets_interrupted_results_on_load(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.begin_turn("go")
    s.append(user("go"))
    s.append(asst(text("Running."), tool_use("t1", "bash"), tool_use("t2")))
    os.close(s._fd)  # a crash: no end_turn, no close
    s._fd = None

    r = store.open(s.id)
    assert raw(r.messages[-1]) == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": INTERRUPTED, "is_error": True},
            {"type": "tool_result", "tool_use_id": "t2", "content": INTERRUPTED, "is_error": True},
            raw_note("this turn was interrupted by the app (PseudoClaude stopped before the turn ended)"),
        ],
    }
    assert_valid(r.messages)
    assert any(INTERRUPTED in w for w in r.warnings)
    # The repair is in the file, so the file replays to exactly these messages.
    recs = records(r.path)
    assert recs[-2]["repair"] == "interrupted" and recs[-1]["type"] == "turn_end"
    assert recs[-1]["status"] == "crashed"
    # The next turn's words join the trailing user message; the turn's messages include them.
    r.begin_turn("try again")
    r.append(user("try again"))
    assert len(r.messages) == 3 and r.messages[-1].content[-1] == text("try again")
    assert r.messages[r.turn_start :] == [r.messages[-1]]
    r.append(asst(text("Trying.")))
    r.end_turn("completed")
    r.close()
    with store.open(s.id) as restored:
        assert restored.messages == r.messages and restored.warnings == []


def test_cancelled_turn_keeps_completed_results_and_marks_the_rest(store: SessionStore, ws: Path) -> None:
    with store.create(ws) as s:
        s.begin_turn("go")
        s.append(user("go"))
        s.append(asst(tool_use("t1")))
        s.append(results(result("t1", "done")))
        s.append(asst(tool_use("t2")))
        s.end_turn("cancelled")
        assert s.messages[-1] == results(
            result("t2", INTERRUPTED, is_error=True),
            app_note("this turn was interrupted by the app (the user cancelled it)"),
        )
        assert s.messages[2] == results(result("t1", "done"))
        assert_valid(s.messages)
    recs = records(s.path)
    assert recs[-1]["type"] == "turn_end" and recs[-1]["status"] == "cancelled"
    with store.open(s.id) as r:
        assert r.messages == s.messages and r.warnings == []


def test_trailing_tool_results_are_kept(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.append(user("go"))
    s.append(asst(tool_use("t1")))
    s.append(results(result("t1", "done")))
    s.close()
    with store.open(s.id) as r:
        assert r.messages[-1] == results(result("t1", "done"))
        r.begin_turn("and now?")
        r.append(user("and now?"))
        assert r.messages[-1] == results(result("t1", "done"), text("and now?"))
        assert_valid(r.messages)


def test_truncated_last_line_is_dropped_with_a_warning(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.append(user("one"))
    s.append(asst(text("two")))
    s.close()
    with open(s.path, "ab") as f:
        f.write(b'{"type":"message","message":{"role":"user","con')
    r = store.open(s.id)
    assert r.messages == [user("one"), asst(text("two"))]
    assert r.warnings == [f"{s.id}.jsonl:4: dropped an incomplete last line (interrupted write)"]
    r.append(user("three"))
    r.close()
    assert [x["type"] for x in records(s.path)] == ["meta", "message", "message", "message"]
    with store.open(s.id) as again:
        assert again.warnings == []
        assert again.messages[-1] == user("three")


def test_complete_but_unterminated_last_line_is_kept(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.append(user("one"))
    s.close()
    data = s.path.read_bytes()
    s.path.write_bytes(data.rstrip(b"\n"))
    with store.open(s.id) as r:
        assert r.messages == [user("one")] and r.warnings == []
        r.append(asst(text("two")))
    with store.open(s.id) as r:
        assert r.messages == [user("one"), asst(text("two"))] and r.warnings == []


def test_corrupt_lines_are_skipped_and_counted(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.append(user("one"))
    s.close()
    with open(s.path, "ab") as f:
        f.write(b"this is not json\n[1, 2]\n\xff\xfe\n")
        f.write(b'{"type":"message","message":{"role":"assistant","content":"two"}}\n')
    with store.open(s.id) as r:
        assert r.messages == [user("one"), asst(text("two"))]
        assert [w.split(": ")[0] for w in r.warnings] == [f"{s.id}.jsonl:{n}" for n in (3, 4, 5)]


def test_file_without_a_header_is_not_a_session(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.close()
    s.path.write_bytes(b'{"type":"meta","vers')
    with pytest.raises(SessionError, match="not a session file"):
        store.open(s.id)
    assert s.path.read_bytes() == b'{"type":"meta","vers'  # a file we refuse is left as it was
    assert store.list() == [] and store.latest(ws) is None


def test_symlinked_session_file_is_refused(store: SessionStore, ws: Path, tmp_path: Path) -> None:
    s = store.create(ws)
    s.close()
    target = tmp_path / "elsewhere.jsonl"
    s.path.rename(target)
    s.path.symlink_to(target)
    with pytest.raises(SessionError, match="symlink"):
        store.open(s.id)


# -- the conversation rules --------------------------------------------------------------------


def test_consecutive_user_messages_merge_with_results_first() -> None:
    conv: list[Message] = []
    push_message(conv, user("go"))
    push_message(conv, asst(tool_use("t1")))
    push_message(conv, results(text("note"), result("t1")))
    idx, _ = push_message(conv, user("more"))
    assert idx == 2
    assert conv[2] == results(result("t1"), text("note"), text("more"))
    assert_valid(conv)


def test_orphan_and_duplicate_results_are_dropped() -> None:
    conv, notes = restore_conversation(
        [user("go"), asst(tool_use("t1")), results(result("t1"), result("t1", "again"), result("zz"))]
    )
    assert conv[-1] == results(result("t1"))
    assert len(notes) == 2
    conv, _ = restore_conversation([results(result("zz"))])
    assert conv == []


def test_assistant_after_an_unanswered_tool_call_gets_results_between() -> None:
    conv, _ = restore_conversation([user("go"), asst(tool_use("t1")), asst(text("lost the results"))])
    assert [m.role for m in conv] == ["user", "assistant", "user", "assistant"]
    assert conv[2].content[0] == result("t1", INTERRUPTED, is_error=True)
    conv, _ = restore_conversation([user("go"), asst(text("a")), asst(text("b"))])
    assert conv == [user("go"), asst(text("a"), text("b"))]


def test_empty_and_invalid_messages_are_dropped() -> None:
    assert parse_message({"role": "tool", "content": "x"})[0] is None
    conv, notes = restore_conversation(
        [
            asst(text("before any user")),
            user("   "),
            user("go"),
            asst(text(""), text("  ")),
            asst(text("ok"), result("t9")),
        ]
    )
    assert conv == [user("go"), asst(text("ok"))]
    assert notes


# -- property: any crash point restores to a valid conversation -------------------------------

_texts = st.text(min_size=1, max_size=12).filter(lambda t: bool(t.strip()))


@st.composite
def conversations(draw: st.DrawFn) -> list[list[Message]]:
    """Turns of a valid conversation: user, then tool rounds, then usually a final answer."""
    ids = itertools.count()
    turns: list[list[Message]] = []
    for _ in range(draw(st.integers(1, 3))):
        first = draw(_texts)
        turn: list[Message] = [user(first) if draw(st.booleans()) else results(text(first))]
        for _ in range(draw(st.integers(0, 3))):
            calls = [f"toolu_{next(ids)}" for _ in range(draw(st.integers(1, 3)))]
            lead = [text(draw(_texts))] if draw(st.booleans()) else []
            turn.append(asst(*lead, *(tool_use(c) for c in calls)))
            turn.append(results(*(result(c, draw(_texts), is_error=draw(st.booleans())) for c in calls)))
        turn.append(asst(text(draw(_texts))))
        turns.append(turn)
    return turns


@given(conversations(), st.floats(0, 1))
def test_any_cut_of_a_session_file_restores_to_a_valid_conversation(
    turns: list[list[Message]], where: float
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(os.path.realpath(tmp))
        store = SessionStore(ws / "home")
        with store.create(ws) as s:
            for i, turn in enumerate(turns):
                s.begin_turn(f"turn {i}")
                for m in turn:
                    s.append(m)
                s.end_turn("completed")
            original = s.messages
        assert original == [m for turn in turns for m in turn]
        data = s.path.read_bytes()
        header = data.index(b"\n") + 1
        cut = header + round(where * (len(data) - header))
        s.path.write_bytes(data[:cut])

        with store.open(s.id) as r:
            restored = r.messages
            warned = list(r.warnings)
        assert_valid(restored)
        if cut == len(data):
            assert restored == original and warned == []
        if restored:
            # Everything but the last message is the original's prefix; the last is the original's
            # next one or its [interrupted] answer.
            k = len(restored) - 1
            assert restored[:k] == original[:k]
            last = restored[-1]
            # A turn cut by the crash is closed by the app's note, which is not the original's.
            core = [b for b in last.content if not is_app_note(b)]
            assert (
                last == original[k]
                or core == original[k].content
                or all(isinstance(b, ToolResultBlock) and b.content == INTERRUPTED for b in core)
            )
        # The repairs are in the file: it replays to the same conversation, without warnings.
        with store.open(s.id) as again:
            assert again.messages == restored
            assert again.warnings == []


# -- failed turns: an error is never the model's own words -------------------------------------


def test_failed_turn_without_a_response_is_logged_but_left_out_of_the_next_request(
    store: SessionStore, ws: Path
) -> None:
    with store.create(ws) as s:
        s.begin_turn("first")
        s.append(user("first"))
        s.append(asst(text("First answer.")))
        s.end_turn("completed")
        s.begin_turn("this request is refused")
        s.append(user("this request is refused"))
        s.end_turn("error", message="the API refused the request (400): too long")
        assert s.messages == [user("first"), asst(text("First answer."))]
        assert "[error" not in json.dumps([raw(m) for m in s.messages])
    recs = records(s.path)
    assert recs[-1]["type"] == "turn_end" and recs[-1]["status"] == "error" and recs[-1]["dropped"] is True
    assert any(r.get("message") == raw(user("this request is refused")) for r in recs), (
        "the log keeps the turn"
    )
    with store.open(s.id) as r:
        assert r.messages == s.messages and r.warnings == []


def test_failed_turn_with_completed_tool_calls_is_closed_by_the_apps_note_not_the_models(
    store: SessionStore, ws: Path
) -> None:
    with store.create(ws) as s:
        s.begin_turn("go")
        s.append(user("go"))
        s.append(asst(tool_use("t1")))
        s.append(results(result("t1", "done")))
        s.end_turn("error", message="cannot connect to the API")
        assert [m.role for m in s.messages] == ["user", "assistant", "user"]
        assert s.messages[-1] == results(
            result("t1", "done"), app_note("this turn was interrupted by the app (cannot connect to the API)")
        )
        assert_valid(s.messages)
    with store.open(s.id) as r:
        assert r.messages == s.messages


def test_old_session_with_error_stored_as_the_models_answer_is_repaired_on_load(
    store: SessionStore, ws: Path
) -> None:
    s = store.create(ws)
    s.close()
    lines = [
        {"type": "turn_start", "turn": 1, "text": "hi"},
        {"type": "message", "message": old_user("hi")},
        {"type": "message", "message": raw(asst(text("[error: the API refused the request (400): bad]")))},
        {"type": "turn_end", "turn": 1, "status": "error"},
        {"type": "turn_start", "turn": 2, "text": "go"},
        {"type": "message", "message": old_user("go")},
        {"type": "message", "message": raw(asst(tool_use("t1")))},
        {"type": "message", "message": raw(results(result("t1", "done")))},
        {"type": "message", "message": raw(asst(text("[max_iterations: stopped after 1 model requests]")))},
        {"type": "turn_end", "turn": 2, "status": "max_iterations"},
    ]
    with open(s.path, "a") as f:
        f.writelines(json.dumps(rec) + "\n" for rec in lines)
    with store.open(s.id) as r:
        dumped = json.dumps([raw(m) for m in r.messages])
        assert "[error" not in dumped and "[max_iterations" not in dumped
        assert [m.role for m in r.messages] == ["user", "assistant", "user"]
        assert r.messages[0] == user("go") and is_app_note(r.messages[-1].content[-1])
        assert_valid(r.messages)


# -- undecodable text --------------------------------------------------------------------------


def test_session_with_lone_surrogates_loads_repaired_and_stays_usable(store: SessionStore, ws: Path) -> None:
    s = store.create(ws)
    s.close()
    # What an earlier version wrote for a file named b"bad\xffname.txt" listed by a tool.
    lines = [
        '{"type":"turn_start","turn":1,"text":"list \\udcff"}',
        '{"type":"message","message":{"role":"user","content":"list \\udcff files"}}',
        '{"type":"message","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1",'
        '"name":"list_files","input":{"path":"bad\\udcffname"}}]}}',
        '{"type":"message","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1",'
        '"content":"bad\\udcffname.txt"}]}}',
        '{"type":"message","message":{"role":"assistant","content":"Found bad\\udcffname.txt."}}',
        '{"type":"turn_end","turn":1,"status":"completed"}',
    ]
    with open(s.path, "a") as f:
        f.writelines(line + "\n" for line in lines)
    with store.open(s.id) as r:
        dumped = json.dumps([raw(m) for m in r.messages], ensure_ascii=False)
        dumped.encode("utf-8")  # what the SDK does: no UnicodeEncodeError any more
        assert "bad\ufffdname.txt" in dumped and r.title == "list \ufffd"
        assert any("surrogate" in w for w in r.warnings)
        r.begin_turn("more \udcff")
        r.append(user("more \udcff"))
        assert r.messages[-1].content == [text("more \ufffd")]


def test_a_message_read_from_json_has_lone_surrogates_replaced_everywhere() -> None:
    conv: list[Message] = []
    for value in (
        old_user("a\udcffb"),
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t\udc80", "name": "x\ud800", "input": {"k\udcff": "v\udcff"}}
            ],
        },
    ):
        message, notes = parse_message(value)
        assert message is not None and notes == [
            "replaced undecodable characters (lone surrogates) with U+FFFD"
        ]
        push_message(conv, message)
    json.dumps([raw(m) for m in conv], ensure_ascii=False).encode("utf-8")
    assert conv[1].content[0] == ToolUseBlock(id="t\ufffd", name="x\ufffd", input={"k\ufffd": "v\ufffd"})


def test_old_session_whose_crashed_turn_was_closed_as_the_models_words_is_repaired(
    store: SessionStore, ws: Path
) -> None:
    s = store.create(ws)
    s.close()
    # Before the turn rules, the next run closed a crashed turn with an *assistant* "[interrupted]".
    lines = [
        {"type": "turn_start", "turn": 1, "text": "go"},
        {"type": "message", "message": old_user("go")},
        {"type": "message", "message": raw(asst(tool_use("t1")))},
        {"type": "message", "message": raw(results(result("t1", "done")))},
        {"type": "message", "message": raw(asst(text("[interrupted]")))},
        {"type": "turn_start", "turn": 2, "text": "next"},
        {"type": "message", "message": old_user("next")},
        {"type": "message", "message": {"role": "assistant", "content": "Answer."}},
        {"type": "turn_end", "turn": 2, "status": "completed"},
    ]
    with open(s.path, "a") as f:
        f.writelines(json.dumps(rec) + "\n" for rec in lines)
    with store.open(s.id) as r:
        assert [m.role for m in r.messages] == ["user", "assistant", "user", "assistant"]
        assert is_app_note(r.messages[2].content[1]) and r.messages[2].content[-1] == text("next")
        assert "[interrupted]" not in json.dumps([raw(m) for m in r.messages if m.role == "assistant"])
        assert_valid(r.messages)
