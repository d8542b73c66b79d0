"""Long sessions: the pure and file-only parts of app/agent/conversation/compaction.py, and
how a Session records usage anchors, offloads and compactions so a replay rebuilds them exactly."""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.agent.conversation import compaction as cmp
from app.agent.conversation.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from app.agent.conversation.compaction import (
    Anchor,
    ResultStore,
    estimate_tokens,
    offload_old,
    result_stub,
    split_for_summary,
)
from app.agent.conversation.messages import INTERRUPTED, app_note, is_app_note, push_message
from app.agent.conversation.session_store import SessionStore
from tests.support.fakeapi import _validate_messages_body

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


HINT = re.compile(r"\n\[read_result: lines (\d+)–(\d+) of (\d+); use offset=(\d+) to read on\]\Z")


# -- helpers -------------------------------------------------------------------------------------


def user(t: str) -> Message:
    return Message(role="user", content=[TextBlock(text=t)])


def asst_text(t: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=t)])


def call(i: str, name: str = "bash") -> Message:
    return Message(role="assistant", content=[ToolUseBlock(id=i, name=name, input={"command": i})])


def answer(i: str, content: str) -> Message:
    return Message(role="user", content=[ToolResultBlock(tool_use_id=i, content=content)])


def conversation(*messages: Message) -> list[Message]:
    conv: list[Message] = []
    for m in messages:
        push_message(conv, m.model_copy(deep=True))
    return conv


def valid(messages: list[Message]) -> str | None:
    """What the fake API (stricter than the real one) would refuse about this conversation."""
    wire = [m.model_dump(mode="json") for m in messages]
    return _validate_messages_body({"model": "m", "max_tokens": 1, "messages": wire})


def read_all(store: ResultStore, rid: str, limit: int | None = None) -> tuple[str, list[str]]:
    """Follow read_result's "use offset=" hints to the end, as the model does; the parts joined
    (each without its hint line) and the raw outputs."""
    parts: list[str] = []
    outputs: list[str] = []
    offset: int | None = None
    for _ in range(10_000):
        out = store.read(rid, offset, limit)
        outputs.append(out)
        m = HINT.search(out)
        if m is None:
            parts.append(out)
            return "".join(parts), outputs
        first, last, _total, nxt = map(int, m.groups())
        assert first == (offset or 1) and nxt == last + 1
        parts.append(out[: m.start()])
        offset = nxt
    raise AssertionError("read_result never reached the end")


# -- ResultStore ---------------------------------------------------------------------------------

_CHARS = st.sampled_from(["a", "é", "中", "文", "字", "😀", "👩‍💻", " ", "\t", "x", "=", "\u00a0"])
_SHORT_LINE = st.lists(_CHARS, max_size=120).map("".join)
_LONG_LINE = st.sampled_from(["中", "😀", "ab", "é文"]).map(lambda c: (c * 10_000)[:10_000])
_ENDING = st.sampled_from(["\n", "\r\n", "\n", "\r\n", "\r"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    lines = draw(
        st.lists(st.one_of(_SHORT_LINE, _SHORT_LINE, _SHORT_LINE, _LONG_LINE), min_size=0, max_size=40)
    )
    out = "".join(line + draw(_ENDING) for line in lines)
    if draw(st.booleans()) and out:
        out = out.rstrip("\r\n")  # no final newline
    return out


@settings(deadline=None, derandomize=True, max_examples=60)
@given(text=texts(), limit=st.one_of(st.none(), st.integers(1, 9)))
def test_paged_reads_reassemble_the_exact_text(text: str, limit: int | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp) / "s" / "results")
        rid = store.put(text)
        assert store.text(rid) == text
        whole, outputs = read_all(store, rid, limit)
        assert whole.encode("utf-8") == text.encode("utf-8")
        for out in outputs:
            m = HINT.search(out)
            body = out[: m.start()] if m else out
            assert len(body) <= cmp.READ_MAX_CHARS  # a read cannot overflow the window again
            if limit is not None and m is not None:
                first, last = int(m.group(1)), int(m.group(2))
                assert last - first + 1 <= limit


def test_a_line_over_4000_characters_counts_as_several(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results")
    text = "中" * 10_000 + "\n" + "tail\n"
    rid = store.put(text)
    first = store.read(rid, 1, 1)
    assert first.endswith("\n[read_result: lines 1–1 of 4; use offset=2 to read on]")
    assert first[: -len("\n[read_result: lines 1–1 of 4; use offset=2 to read on]")] == "中" * 4000
    assert store.read(rid, 3, 1).startswith("中" * 2000 + "\n")
    assert store.read(rid, 4) == "tail\n"


def test_ids_are_stable_per_content(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results")
    a = store.put("same output\n")
    assert re.fullmatch(r"r[0-9a-f]{16}", a)
    assert store.put("same output\n") == a
    assert ResultStore(tmp_path / "other").put("same output\n") == a  # by content, not by place
    b = store.put("other output\n")
    assert b != a
    assert sorted(os.listdir(tmp_path / "results")) == sorted([f"{a}.txt", f"{b}.txt"])


@pytest.mark.parametrize(
    "rid",
    [
        "r0123456789abcdef",
        "../r0123456789abcdef",
        "R0123456789ABCDEF",
        "r123",
        "",
        "r0123456789abcdef/../x",
        "r0123456789abcdef\n",
    ],
)
def test_unknown_and_invalid_ids_are_a_one_line_value_error(tmp_path: Path, rid: str) -> None:
    store = ResultStore(tmp_path / "results")
    store.put("something\n")
    for read in (lambda: store.text(rid), lambda: store.read(rid), lambda: store.read(rid, 2, 3)):
        with pytest.raises(ValueError) as info:
            read()
        reason = str(info.value)
        assert reason and "\n" not in reason


def test_offsets_past_the_end(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results")
    rid = store.put("one\ntwo\nthree")
    assert store.read(rid, 3) == "three"
    assert store.read(rid, 0) == "one\ntwo\nthree"  # 0 reads from the start
    with pytest.raises(ValueError, match=r"offset 4 is past the end: result r[0-9a-f]{16} has 3 lines"):
        store.read(rid, 4)
    with pytest.raises(ValueError, match="past the end"):
        store.read(rid, 10_000)
    empty = store.put("")
    assert store.read(empty) == ""


def test_the_results_folder_is_private(tmp_path: Path) -> None:
    old = os.umask(0)  # the modes must not depend on the umask
    try:
        folder = tmp_path / "sessions" / "s1" / "results"
        store = ResultStore(folder)
        rid = store.put("secret output\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(folder / f"{rid}.txt").st_mode) == 0o600


def test_a_symlinked_results_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "s1").mkdir()
    os.symlink(elsewhere, tmp_path / "s1" / "results")
    store = ResultStore(tmp_path / "s1" / "results")
    with pytest.raises(OSError, match="symlink"):
        store.put("output\n")
    assert os.listdir(elsewhere) == []
    # A file already in the link's target is neither taken as stored nor read back.
    planted = ResultStore(tmp_path / "plain").put("planted\n")
    (elsewhere / f"{planted}.txt").write_text("SOMETHING ELSE\n")
    with pytest.raises(OSError, match="symlink"):
        store.put("planted\n")
    with pytest.raises(ValueError, match="symlink"):
        store.read(planted)


# -- result_stub ---------------------------------------------------------------------------------


def test_a_stub_has_size_line_count_id_head_and_tail() -> None:
    text = "".join(f"line {i} ünïcödé\n" for i in range(1, 3001))
    rid = "r0123456789abcdef"
    stub = result_stub(text, rid)
    assert len(stub) < len(text) // 10
    size = len(text.encode("utf-8"))
    assert f"{size:,} bytes in 3,000 lines" in stub
    assert f'read_result {{"id": "{rid}"' in stub
    assert stub.startswith(cmp.STUB_PREFIX) and cmp.is_stub(stub)
    assert "\nline 1 ünïcödé\nline 2 ünïcödé\n" in stub  # the head
    assert stub.endswith("line 2999 ünïcödé\nline 3000 ünïcödé")  # the tail
    assert "line 1500 " not in stub
    m = re.search(r"\[… lines ([\d,]+)–([\d,]+) not shown …\]", stub)
    assert m is not None
    # Head + hidden + tail = every line, so the model knows exactly what to read back.
    head = stub.split("\n", 1)[1].split("\n[… lines")[0].count("\n") + 1
    assert int(m.group(1).replace(",", "")) == head + 1


def test_a_stub_of_one_huge_line_is_short() -> None:
    text = "😀" * 200_000
    stub = result_stub(text, "r0123456789abcdef")
    assert len(stub) < cmp.HEAD_CHARS + cmp.TAIL_CHARS + 400
    assert f"{len(text.encode()):,} bytes in 50 lines" in stub  # 4,000-character pieces
    assert "r0123456789abcdef" in stub


# -- estimate_tokens -----------------------------------------------------------------------------


def test_estimate_without_an_anchor_counts_everything_by_chars_over_4() -> None:
    system = [TextBlock(text="S" * 400)]
    tools = [{"name": "bash", "description": "D" * 400}]
    messages = [user("U" * 800)]
    chars = cmp.messages_chars(system) + cmp.json_chars(tools) + cmp.messages_chars(messages)
    assert estimate_tokens(None, system, tools, messages) == -(-chars // 4)


def test_estimate_with_an_anchor_adds_what_came_since() -> None:
    system = [TextBlock(text="S" * 40_000)]
    messages = [user("first")]
    anchor = Anchor(tokens=50_000, chars=cmp.messages_chars(messages))
    # Nothing appended: the reported tokens, whatever the system prompt's size.
    assert estimate_tokens(anchor, system, [], messages) == 50_000
    messages += [asst_text("A" * 4_000), user("B" * 2_000)]
    grown = cmp.messages_chars(messages) - anchor.chars
    assert estimate_tokens(anchor, system, [], messages) == 50_000 + -(-grown // 4)
    # The conversation shrank since (an offload, a compaction): the anchor no longer applies.
    small = [user("x")]
    assert estimate_tokens(anchor, system, [], small) == estimate_tokens(None, system, [], small)


# -- offload_old ---------------------------------------------------------------------------------


def _big(tag: str, n: int = 12_000) -> str:
    return "".join(f"{tag} {i} 数据\n" for i in range(n // 10))


def test_offload_old_moves_the_oldest_first_and_stops_when_enough_is_saved(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results")
    first, second = _big("first"), _big("second")
    stub_already = result_stub(_big("older"), "r00000000000000aa")
    conv = conversation(
        user("go"),
        call("t0"),
        answer("t0", stub_already),
        call("t1"),
        answer("t1", first),
        call("t2"),
        answer("t2", second),
        call("t3"),
        answer("t3", "small result\n" * 10),
        asst_text("done"),
    )
    before = copy.deepcopy(conv)
    done, moved = offload_old(conv, store, needed_chars=1)
    assert [tid for tid, _ in done] == ["t1"]
    assert moved == len(first.encode("utf-8"))
    assert conv[4].tool_results()[0].content == done[0][1] and cmp.is_stub(done[0][1])
    assert conv[6] == before[6]  # enough was saved: the newer one stays
    rid = re.search(r'"id": "(r[0-9a-f]{16})"', done[0][1]).group(1)  # type: ignore[union-attr]
    assert store.text(rid) == first

    done, moved = offload_old(conv, store, needed_chars=10**9)
    assert [tid for tid, _ in done] == ["t2"]
    assert conv[2] == before[2]  # a stub is not offloaded again
    assert conv[8] == before[8]  # a small result stays
    assert valid(conv) is None


def test_offload_old_with_a_folder_it_cannot_write_leaves_the_conversation(tmp_path: Path) -> None:
    (tmp_path / "s1").mkdir()
    os.symlink(tmp_path, tmp_path / "s1" / "results")
    conv = conversation(user("go"), call("t1"), answer("t1", _big("x")), asst_text("ok"))
    before = copy.deepcopy(conv)
    assert offload_old(conv, ResultStore(tmp_path / "s1" / "results"), needed_chars=10**9) == ([], 0)
    assert conv == before


# -- split_for_summary ---------------------------------------------------------------------------


def _three_turns() -> list[Message]:
    return conversation(
        user("turn one " + "a" * 3000),
        asst_text("answer one " + "b" * 3000),
        user("turn two " + "c" * 3000),
        call("t1"),
        answer("t1", "d" * 3000),
        asst_text("answer two"),
        user("turn three"),
        call("t2"),
        answer("t2", "e" * 3000),
        call("t3"),
        answer("t3", "f" * 50),
    )


def _pairs_kept(messages: list[Message], k: int) -> bool:
    calls = {b.id for m in messages[:k] for b in m.tool_uses()}
    results = {b.tool_use_id for m in messages[k:] for b in m.tool_results()}
    return not (calls & results)


def test_split_keeps_the_current_turn_and_never_parts_a_call_from_its_result() -> None:
    conv = _three_turns()
    current = 6  # "turn three": the turn in progress, with its tool calls and results
    assert conv[current] == user("turn three")
    for keep in (0, 100, 5_000, 8_000, 12_000, 10**9):
        k = split_for_summary(conv, keep, current)
        assert k <= current and conv[k].role == "user"
        assert _pairs_kept(conv, k)
        assert valid(cmp.rebuilt(conv[k:])) is None
    assert split_for_summary(conv, 0, current) == current
    assert split_for_summary(conv, 0, None) == current  # between turns: the last turn stays
    assert split_for_summary(conv, cmp.messages_chars(conv[2:]), current) == 2
    assert split_for_summary(conv, 10**9, current) == 0  # everything fits: nothing to summarise
    assert split_for_summary(conv, 0, 2) == 2  # never after the turn in progress


def test_split_is_0_with_only_one_turn() -> None:
    conv = conversation(
        user("only turn"), call("t1"), answer("t1", "x" * 5000), call("t2"), answer("t2", "y")
    )
    assert split_for_summary(conv, 0, 0) == 0
    assert split_for_summary(conv, 0, None) == 0
    assert split_for_summary([], 0, None) == 0


def test_split_does_not_cut_at_a_turn_merged_into_an_interrupted_turns_results() -> None:
    # A cancelled turn's results and the app's note are merged with the next user message: that
    # message answers the call before it, so cutting there would lose the result.
    conv = conversation(
        user("turn one " + "a" * 3000),
        asst_text("answer one"),
        user("turn two"),
        call("t1"),
        Message(
            role="user",
            content=[
                ToolResultBlock(tool_use_id="t1", content="R" * 500),
                app_note("this turn was interrupted by the app (the user cancelled it)"),
            ],
        ),
        user("turn three"),
        asst_text("answer three"),
    )
    assert len(conv) == 6 and isinstance(conv[4].content[0], ToolResultBlock)
    for keep in (0, 1_000, 10**9):
        for must in (None, 4):
            k = split_for_summary(conv, keep, must)
            assert _pairs_kept(conv, k), (keep, must, k)
            assert k in (0, 2)


# -- the session log -----------------------------------------------------------------------------


@pytest.fixture
def sessions(isolated_home: Path) -> SessionStore:
    return SessionStore()


def test_usage_offloads_and_compaction_replay_exactly(sessions: SessionStore, ws: Path) -> None:
    s = sessions.create(ws, model="m")
    s.begin_turn("turn one")
    s.append(user("turn one"))
    s.append(call("t1"))
    s.append(answer("t1", _big("one")))
    s.append(asst_text("answer one"))
    s.end_turn("completed")
    s.record_usage(12_345, cmp.messages_chars(s.messages))
    s.begin_turn("turn two")
    s.append(user("turn two"))
    s.append(asst_text("answer two"))
    s.end_turn("completed")
    # An offload: the caller replaces the result in `messages`, then records it.
    done, _ = offload_old(s.messages, ResultStore(s.results_dir), needed_chars=1)
    assert [t for t, _ in done] == ["t1"]
    s.record_offloads(done)
    s.record_usage(777, cmp.messages_chars(s.messages))
    sid, messages, anchor = s.id, copy.deepcopy(s.messages), s.anchor
    s.close()

    again = SessionStore().open(sid)
    assert again.messages == messages and again.anchor == anchor == (777, cmp.messages_chars(messages))
    assert again.summary is None
    # The compaction: a summary and the kept turn; the anchor is void until the next response.
    kept = cmp.rebuilt(again.messages[4:])
    again.compact("They asked about one and two.", kept, None, summarised=4, requests=1)
    assert again.anchor is None and again.summary == "They asked about one and two."
    again.begin_turn("turn three")
    again.append(user("turn three"))
    again.append(asst_text("answer three"))
    again.end_turn("completed")
    again.record_usage(900, cmp.messages_chars(again.messages))
    live = (copy.deepcopy(again.messages), again.anchor, again.summary, again.compactions)
    again.close()

    third = SessionStore().open(sid)
    assert (third.messages, third.anchor, third.summary, third.compactions) == live
    assert third.messages[0] == user("turn two") and valid(third.messages) is None
    assert third.turns == 3 and not third.warnings
    # Nothing is deleted: the log still holds the compacted turn and the whole tool result.
    log = [json.loads(line) for line in third.path.read_text().splitlines()]
    assert [r["type"] for r in log].count("compaction") == 1
    assert any(r.get("message") == user("turn one").model_dump() for r in log if r["type"] == "message")
    third.close()


def test_a_compaction_mid_turn_then_a_crash_replays_to_a_closed_valid_turn(
    sessions: SessionStore, ws: Path
) -> None:
    s = sessions.create(ws)
    s.begin_turn("turn one")
    s.append(user("turn one"))
    s.append(asst_text("answer one"))
    s.end_turn("completed")
    s.begin_turn("turn two")
    s.append(user("turn two"))
    s.append(call("t1"))
    s.append(answer("t1", "listing"))
    turn_start = s.turn_start
    assert turn_start == 2
    kept = cmp.rebuilt(s.messages[turn_start:])
    s.compact("Turn one: asked and answered.", kept, 0, summarised=2, requests=1)
    assert s.turn_start == 0
    s.append(call("t2"))  # the turn goes on; the process dies before its result and its end
    # The conversation as it stood when the process died:
    expected = copy.deepcopy(s.messages)
    sid = s.id
    os.close(s._fd)  # a crash: no turn_end, no close
    s._fd = None

    again = SessionStore().open(sid)
    msgs = again.messages
    assert valid(msgs) is None, valid(msgs)
    assert msgs[:4] == expected and msgs[0] == user("turn two") and len(msgs) == 5
    assert msgs[4].content[0].model_dump() == {
        "type": "tool_result",
        "tool_use_id": "t2",
        "content": INTERRUPTED,
        "is_error": True,
    }
    note = msgs[4].content[-1]
    assert is_app_note(note) and isinstance(note, TextBlock) and "PseudoClaude stopped" in note.text
    assert again.summary == "Turn one: asked and answered." and again.anchor is None
    assert any("cut short" in w for w in again.warnings)
    closed = copy.deepcopy(msgs)
    again.close()
    # The repair was written: a second replay gives the same conversation, with nothing to fix.
    third = SessionStore().open(sid)
    assert third.messages == closed and not third.warnings
    third.close()
