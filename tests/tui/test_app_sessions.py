"""Sessions in the app: what /resume offers, what a resumed compacted session shows, and the
unknown-model error naming the app's own command."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from textual.widgets import OptionList

from app.agent.conversation.blocks import Message
from app.agent.conversation.session_store import SessionStore
from app.tui.chat.session_picker import SessionPicker
from tests.support.clitools import system_text
from tests.support.fakeapi import FakeAnthropic, http_error, text
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.error_block import ErrorBlock
from widgets.chat.note_block import NoteBlock

MARKER = "the model has a summary of the"


def is_summary(body: Mapping[str, Any]) -> bool:
    return "tools" not in body


def _session_with_a_turn(ws: Path, prompt: str, answer: str) -> str:
    with SessionStore().create(ws) as s:
        s.begin_turn(prompt)
        s.append(Message.model_validate({"role": "user", "content": [{"type": "text", "text": prompt}]}))
        s.append(Message.model_validate({"role": "assistant", "content": [{"type": "text", "text": answer}]}))
        s.end_turn("completed")
        return s.id


async def _pick_first(pilot: Any) -> None:
    """Enter on the picker's first row, once the picker has taken the focus."""
    # Pushed is not yet composed: wait for its list too.
    await wait_until(
        pilot,
        lambda: isinstance(pilot.app.screen, SessionPicker) and bool(pilot.app.screen.query(OptionList)),
        what="the picker",
    )
    picker = pilot.app.screen
    options = picker.query_one(OptionList)
    await wait_until(
        pilot, lambda: options.has_focus and options.highlighted == 0, what="the picker to take the focus"
    )
    await pilot.press("enter")


def _empty_session(ws: Path) -> str:
    with SessionStore().create(ws) as s:  # opened and closed: no prompt was ever sent
        return s.id


async def test_resume_offers_only_sessions_that_had_a_prompt(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    # Before: every opened-and-closed session (and the new, empty current one) was offered too.
    _empty_session(ws)
    real = _session_with_a_turn(ws, "the real question", "the real answer")
    _empty_session(ws)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionPicker), what="the picker")
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        assert [s.id for s in picker.sessions] == [real]
        await _pick_first(pilot)
        await wait_until(pilot, lambda: app.services.session.id == real, what="the resumed session")
        await wait_until(pilot, lambda: "the real answer" in chat_texts(app), what="its history")


async def test_resume_with_only_empty_sessions_says_there_is_none_to_resume(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    _empty_session(ws)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/resume")
        await wait_until(pilot, lambda: "no sessions to resume in this workspace yet" in chat_texts(app))
        assert not isinstance(app.screen, SessionPicker)


async def _compacted_session(pilot: Any, app: Any) -> None:
    """Two turns, then /compact (the first turn is summarised, the second stays verbatim)."""
    await wait_ready(pilot)
    await send(pilot, "turn one: the parser keeps its state in one table")
    await wait_until(pilot, lambda: "answer one" in chat_texts(app), what="the first answer")
    await send(pilot, "turn two: and the lexer hands it tokens")
    await wait_until(pilot, lambda: "answer two" in chat_texts(app), what="the second answer")
    await send(pilot, "/compact")
    await wait_until(
        pilot, lambda: any("into a summary" in t for t in chat_texts(app)), what="the compaction"
    )
    await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the prompt to be free")


def _script_compaction(server: FakeAnthropic) -> None:
    server.respond(MODEL, is_summary, text("SUMMARY: the parser's tables were discussed."))
    server.script(MODEL, text("answer one"), text("answer two"), text("answer three"))


def _assert_whole_transcript_shown(app: Any) -> None:
    texts = chat_texts(app)
    one = texts.index("turn one: the parser keeps its state in one table")
    marker = next(i for i, t in enumerate(texts) if MARKER in t)
    two = texts.index("turn two: and the lexer hands it tokens")
    # The summarised turn, its answer, then the boundary line, then the verbatim part.
    assert one < texts.index("answer one") < marker < two < texts.index("answer two")
    assert isinstance(app.chat.blocks[marker], NoteBlock)
    assert [t for t in texts if MARKER in t] == [texts[marker]]  # one line per boundary


async def test_resuming_a_compacted_session_shows_the_turns_before_the_boundary(
    make_app, server: FakeAnthropic
) -> None:
    # Before: only the compacted part (the last turn) was shown after /resume.
    _script_compaction(server)
    app = make_app(server, memory_mode="off", context_window=20_000)
    async with app.run_test(size=(120, 60)) as pilot:
        await _compacted_session(pilot, app)
        compacted = app.services.session.id
        await send(pilot, "/clear")
        await wait_until(pilot, lambda: app.services.session.id != compacted, what="a new session")
        await send(pilot, "/resume")
        await _pick_first(pilot)  # the cleared session has no prompt: the compacted one is first
        await wait_until(pilot, lambda: app.services.session.id == compacted, what="the resumed session")
        await wait_until(pilot, lambda: "answer two" in chat_texts(app), what="its history")
        _assert_whole_transcript_shown(app)
        # The model still gets the compacted conversation: the summary, not turn one.
        await send(pilot, "turn three")
        await wait_until(pilot, lambda: "answer three" in chat_texts(app), what="the third answer")
        last = server.requests_for(MODEL)[-1]
        assert "SUMMARY: the parser's tables" in system_text(last)
        assert "turn one" not in str(last.body["messages"]) and "turn two" in str(last.body["messages"])


async def test_continuing_a_compacted_session_shows_the_turns_before_the_boundary(
    make_app, server: FakeAnthropic
) -> None:
    _script_compaction(server)
    first = make_app(server, memory_mode="off", context_window=20_000)
    async with first.run_test(size=(120, 60)) as pilot:
        await _compacted_session(pilot, first)
    again = make_app(server, memory_mode="off", context_window=20_000, continue_latest=True)
    async with again.run_test(size=(120, 60)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "answer two" in chat_texts(again), what="the history")
        _assert_whole_transcript_shown(again)
        assert len(again.services.session.messages) == 2  # the model's view: the verbatim turn only


async def test_an_unknown_model_in_the_app_names_the_model_command(make_app, server: FakeAnthropic) -> None:
    # Before: the app said "choose one with --model", a flag that cannot be given to a running app.
    server.script(MODEL, http_error(404, "not_found_error", f"model: {MODEL}"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "hello")
        await wait_until(
            pilot, lambda: any(isinstance(b, ErrorBlock) for b in app.chat.blocks), what="the error"
        )
        [err] = [b.text for b in app.chat.blocks if isinstance(b, ErrorBlock)]
        assert "404" in err and "/model" in err and "--model" not in err


async def test_resume_works_with_no_model_configured_and_shows_the_history(make_app, ws: Path) -> None:
    real = _session_with_a_turn(ws, "the offline question", "the offline answer")
    app = make_app(None, memory_mode="off")  # no credentials at all
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert not app.state.phase.ready
        await send(pilot, "/resume")
        await _pick_first(pilot)
        await wait_until(pilot, lambda: app.services.session.id == real, what="the resumed session")
        await wait_until(pilot, lambda: "the offline answer" in chat_texts(app), what="its history")


async def test_a_resumed_sessions_large_pasted_message_shows_collapsed_and_expands(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    from widgets.chat.user_block import UserBlock

    pasted = "\n".join(f"log line {i}" for i in range(3_000))
    _session_with_a_turn(ws, pasted, "the answer about the log")
    app = make_app(server, memory_mode="off", continue_latest=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "the answer about the log" in chat_texts(app), what="the history")
        [block] = list(app.chat.query(UserBlock))
        assert block.text == pasted  # kept whole
        assert "[pasted 3,000 lines" in block.shown_text and "log line 2999" not in block.shown_text
        block.expanded = True
        await wait_until(pilot, lambda: "log line 999" in block.shown_text, what="the expanded paste")


async def test_a_resumed_sessions_bash_call_shows_its_exit_status_as_it_did_live(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    from widgets.chat.tool_block import ToolBlock

    use = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "make test"}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "is_error": True,
        "content": "exit code: 2\n--- stderr ---\nmake: *** [test] Error 2",
    }
    with SessionStore().create(ws) as s:
        s.begin_turn("run the tests")
        s.append(
            Message.model_validate({"role": "user", "content": [{"type": "text", "text": "run the tests"}]})
        )
        s.append(Message.model_validate({"role": "assistant", "content": [use]}))
        s.append(Message.model_validate({"role": "user", "content": [result]}))
        s.append(
            Message.model_validate({"role": "assistant", "content": [{"type": "text", "text": "they fail"}]})
        )
        s.end_turn("completed")
    app = make_app(server, memory_mode="off", continue_latest=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "they fail" in chat_texts(app), what="the history")
        [block] = list(app.chat.query(ToolBlock))
        assert "exit 2" in block.header_text and "make test" in block.header_text


async def test_resume_typed_while_clear_is_still_closing_the_session_waits_for_it(
    make_app, server: FakeAnthropic, ws: Path, monkeypatch: Any
) -> None:
    # A session switch in flight is not cancelled by the next one: /resume right after /clear
    # used to cancel the clear between closing the session (its lock still held by the closing
    # thread) and opening the new one, and the resume then failed or never came.
    import threading

    from app.agent.conversation.session import Session

    first = _session_with_a_turn(ws, "the first question", "the first answer")
    server.script(MODEL, text("answer one"))
    app = make_app(server, memory_mode="off", resume=first)
    held = threading.Event()
    closing = threading.Event()
    close = Session.close

    def slow_close(self: Session) -> None:
        if self.id == first and not held.is_set():
            closing.set()
            held.wait(30)
        close(self)

    monkeypatch.setattr(Session, "close", slow_close)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert app.services.session.id == first
        await send(pilot, "/clear")
        await wait_until(pilot, closing.is_set, what="the clear closing the session")
        await send(pilot, "/resume")

        def switching() -> int:
            return sum(1 for w in app.workers if w.group == "session" and w.is_running)

        # Either the picker comes while the clear still closes (the race: chosen now, the resume
        # meets the lock) or the resume waits for the clear to end.
        await wait_until(
            pilot, lambda: isinstance(app.screen, SessionPicker) or switching() == 2, what="/resume"
        )
        raced = isinstance(app.screen, SessionPicker)
        if raced:
            await _pick_first(pilot)
        held.set()
        if not raced:
            await _pick_first(pilot)
        await wait_until(pilot, lambda: app.services.session.id == first, what="the resumed session")
        await wait_until(pilot, lambda: "the first answer" in chat_texts(app), what="its history")
        assert not any("in use" in t or "cannot" in t for t in chat_texts(app))
