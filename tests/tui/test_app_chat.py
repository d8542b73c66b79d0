"""Chat: a streamed answer, Esc cancel, errors as one block, a resumed session's history."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fakeapi import FakeAnthropic, http_error, text
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.error_block import ErrorBlock
from widgets.chat.user_block import UserBlock


async def test_a_streamed_answer_appears_as_it_arrives_and_the_status_shows_the_turn(
    make_app, server: FakeAnthropic
) -> None:
    gate = server.gate("mid-answer")
    answer = "Run `make build`.\n\n```sh\nmake build\n```\n"
    server.script(
        MODEL,
        text(answer, usage={"input_tokens": 1200, "cache_read_input_tokens": 800}).held(after=gate, at=4),
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "How do I build this?")
        await wait_until(pilot, lambda: any(isinstance(b, UserBlock) for b in app.chat.blocks))
        # Part of the answer is on screen while the rest is still held by the server.
        await wait_until(pilot, lambda: any(isinstance(b, AnswerBlock) and b.text for b in app.chat.blocks))
        partial = next(b for b in app.chat.blocks if isinstance(b, AnswerBlock)).text
        assert partial and partial != answer
        assert app.prompt.disabled_reason  # no second turn while one runs
        gate.release()
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the turn to end")
        [block] = [b for b in app.chat.blocks if isinstance(b, AnswerBlock)]
        assert block.text == answer and block.finished
        assert "cached" in app.status_model.info.last_turn and "in" in app.status_model.info.last_turn
        assert app.services.session.messages[-1].role == "assistant"


async def test_escape_cancels_a_turn_mid_stream_and_the_next_turn_works(
    make_app, server: FakeAnthropic
) -> None:
    gate = server.gate("never released in time")
    server.script(
        MODEL,
        text("This answer is cut off by the user", chunk_size=4).held(after=gate, at=4),
        text("Second answer"),
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "first")
        await wait_until(pilot, lambda: any(isinstance(b, AnswerBlock) and b.text for b in app.chat.blocks))
        await pilot.press("escape")
        await wait_until(pilot, lambda: "cancelled" in chat_texts(app), what="the cancel note")
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
        gate.release()
        await send(pilot, "second")
        await wait_until(pilot, lambda: "Second answer" in chat_texts(app))
        # The conversation stayed valid: the second request carried the first turn and was accepted.
        assert len(server.requests_for(MODEL)) == 2
        assert not any(isinstance(b, ErrorBlock) for b in app.chat.blocks)


async def test_api_errors_and_abnormal_stops_show_one_readable_block_and_the_app_stays_usable(
    make_app, server: FakeAnthropic
) -> None:
    server.script(
        MODEL,
        http_error(401),
        http_error(404, message="model not found"),
        text("fine now"),
        text("cut sho", stop_reason="max_tokens"),
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "one")
        await wait_until(pilot, lambda: sum(isinstance(b, ErrorBlock) for b in app.chat.blocks) == 1)
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
        await send(pilot, "two")
        await wait_until(pilot, lambda: sum(isinstance(b, ErrorBlock) for b in app.chat.blocks) == 2)
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
        errors = [b.text for b in app.chat.blocks if isinstance(b, ErrorBlock)]
        assert "401" in errors[0] and "ANTHROPIC_API_KEY" in errors[0]
        assert "404" in errors[1] and "Traceback" not in "".join(errors)
        await send(pilot, "three")
        await wait_until(pilot, lambda: "fine now" in chat_texts(app))
        await send(pilot, "four")
        await wait_until(pilot, lambda: sum(isinstance(b, ErrorBlock) for b in app.chat.blocks) == 3)
        assert "max_tokens" in [b for b in app.chat.blocks if isinstance(b, ErrorBlock)][-1].text
        assert "cut sho" in chat_texts(app)  # what arrived stays on screen


async def test_a_refused_connection_is_one_error_block(make_app, server: FakeAnthropic, monkeypatch) -> None:
    app = make_app(server, memory_mode="off")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "hello?")
        await wait_until(pilot, lambda: any(isinstance(b, ErrorBlock) for b in app.chat.blocks), timeout=60)
        [err] = [b for b in app.chat.blocks if isinstance(b, ErrorBlock)]
        assert "cannot connect" in err.text


async def test_a_continued_session_shows_its_history(make_app, server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("The first answer."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "the first question")
        await wait_until(pilot, lambda: "The first answer." in chat_texts(app))
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
    again = make_app(server, memory_mode="off", continue_latest=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "The first answer." in chat_texts(again))
        texts = chat_texts(again)
        assert "the first question" in texts
        assert any("continuing session" in t for t in texts)
    assert not server.requests_for(MEMORY_MODEL)  # memory is off: no extraction request


async def test_a_failing_background_worker_is_one_error_line_not_a_crash(make_app, monkeypatch) -> None:
    from app.tui.panel import state as panel_state

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("the store folder is unreadable")

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        monkeypatch.setattr(panel_state, "build_panel_state", broken)
        app.memory.panel.update()
        app.memory.panel.update()
        await wait_until(pilot, lambda: any("the store folder is unreadable" in t for t in chat_texts(app)))
        await send(pilot, "/help")
        await wait_until(pilot, lambda: any("/remember TEXT" in t for t in chat_texts(app)))
        assert app.is_running
        assert sum("unreadable" in t for t in chat_texts(app)) == 1


async def test_the_memory_worker_makes_room_while_a_turn_streams_and_after_a_key(
    make_app, server: FakeAnthropic, monkeypatch
) -> None:
    """The stores' filesystem layer is paced by the App's pacer (memory.pace), which is busy from
    a turn's start to shortly after its end and after each key."""
    import app.tui.chat.chat_screen

    monkeypatch.setattr(app.tui.chat.chat_screen, "PACE_AFTER_S", 0.3)
    gate = server.gate("mid-answer")
    server.script(MODEL, text("A long answer, still streaming.", chunk_size=4).held(after=gate, at=4))
    server.script(MEMORY_MODEL, text("[]"))
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        pacer = app.bridge.pacer
        assert app.bridge.runtime.fs.pace is pacer and app.bridge.stores.fs.pace is pacer
        assert not pacer.is_busy
        await send(pilot, "Explain it")
        await wait_until(pilot, lambda: any(isinstance(b, AnswerBlock) and b.text for b in app.chat.blocks))
        assert pacer.is_busy
        gate.release()
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the turn to end")
        await wait_until(pilot, lambda: not pacer.is_busy, what="the pacer to go idle after the turn")
        await pilot.press("x")
        assert pacer.is_busy
        await wait_until(pilot, lambda: not pacer.is_busy, what="the pacer to go idle after the key")


async def test_no_full_garbage_collection_while_an_answer_streams_and_the_schedule_is_back_when_idle(
    make_app, server: FakeAnthropic, monkeypatch
) -> None:
    """A full collection walks every object of the process (a pause of a few hundred ms with the
    SDK and a long chat): it is held off while an answer streams and comes back once the turn is
    over and the keyboard has been still for GC_IDLE_S."""
    import gc

    import app.tui.chat.gc_hold

    monkeypatch.setattr(app.tui.chat.gc_hold, "GC_IDLE_S", 2.0)
    saved = gc.get_threshold()
    gate = server.gate("mid-answer")
    server.script(MODEL, text("An answer that streams for a while.", chunk_size=4).held(after=gate, at=4))
    app_ = make_app(server, memory_mode="off")
    try:
        async with app_.run_test(size=(120, 40)) as pilot:
            await wait_ready(pilot)
            await send(pilot, "Explain it")
            await wait_until(
                pilot, lambda: any(isinstance(b, AnswerBlock) and b.text for b in app_.chat.blocks)
            )
            assert gc.get_threshold()[2] > saved[2] and gc.get_threshold()[:2] == saved[:2]
            # A key pressed just before the turn ends keeps the collector held past its end: the
            # turn ends well within GC_IDLE_S of it (the answer's rest is already written).
            await pilot.press("x")
            gate.release()
            await wait_until(pilot, lambda: app_.prompt.disabled_reason is None, what="the turn to end")
            assert app_.chat_screen.turn_view.answer is None and gc.get_threshold()[2] > saved[2]
            await wait_until(pilot, lambda: gc.get_threshold() == saved, what="the collector's schedule")
    finally:
        gc.set_threshold(*saved)


# -- Ctrl+C ---------------------------------------------------------------------------------------


def _notes_shown(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_ctrl_c_cancels_a_running_turn_as_esc_does_and_the_next_turn_works(
    make_app, server: FakeAnthropic
) -> None:
    gate = server.gate(
        "never released in time", timeout=100
    )  # held past every wait: released after the cancel
    server.script(
        MODEL,
        text("This answer is cut off by Ctrl+C", chunk_size=4).held(after=gate, at=4),
        text("Second answer"),
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "first")
        await wait_until(pilot, lambda: any(isinstance(b, AnswerBlock) and b.text for b in app.chat.blocks))
        assert app.focused is app.prompt  # the key is pressed where the user types
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: "cancelled" in chat_texts(app), what="the cancel note")
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
        assert app.is_running and not any("Ctrl+Q" in n for n in _notes_shown(app))
        gate.release()
        await send(pilot, "second")
        await wait_until(pilot, lambda: "Second answer" in chat_texts(app))
        assert not any(isinstance(b, ErrorBlock) for b in app.chat.blocks)


async def test_ctrl_c_with_no_turn_says_once_in_one_line_how_to_quit(make_app, monkeypatch) -> None:
    import app.tui.chat.chat_screen as chat_screen

    # The second Ctrl+C comes while the hint shows, however slow the machine: not a 4 s race.
    monkeypatch.setattr(chat_screen, "QUIT_HINT_S", 600.0)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: any("Ctrl+Q" in n for n in _notes_shown(app)), what="the hint")
        [hint] = [n for n in _notes_shown(app) if "Ctrl+Q" in n]
        assert "\n" not in hint and "quits" in hint
        await pilot.press("ctrl+c")  # pressed again while it shows: not a second toast
        await pilot.pause()
        assert sum("Ctrl+Q" in n for n in _notes_shown(app)) == 1
        assert app.is_running


async def test_ctrl_c_with_text_selected_in_the_prompt_copies_it_and_cancels_nothing(
    make_app, server: FakeAnthropic
) -> None:
    gate = server.gate("held answer", timeout=100)  # the turn runs until the test releases it
    server.script(MODEL, text("A long answer", chunk_size=2).held(after=gate, at=2))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "go")
        await wait_until(pilot, lambda: app.chat_screen.turn is not None and app.chat_screen.turn.is_running)
        app.prompt.text = "copy these words"
        app.prompt.select_all()
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: app.clipboard == "copy these words", what="the copy")
        assert app.chat_screen.turn.is_running and "cancelled" not in chat_texts(app)
        app.prompt.move_cursor((0, 0))  # no selection: Ctrl+C cancels again
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: "cancelled" in chat_texts(app), what="the cancel note")
        gate.release()


async def test_ctrl_c_while_the_permission_question_is_open_cancels_the_turn_and_closes_it(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    from tests.support.fakeapi import tool_use
    from widgets.dialogs.permission import PermissionModal

    server.script(MODEL, tool_use("bash", {"command": "touch made"}, id="toolu_c"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "make a file")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission modal")
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: "cancelled" in chat_texts(app), what="the cancel note")
        await wait_until(pilot, lambda: not isinstance(app.screen, PermissionModal), what="the modal gone")
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
        assert not (ws / "made").exists() and app.focused is app.prompt


# -- a large paste ----------------------------------------------------------------------------------


async def test_a_large_paste_is_collapsed_in_the_prompt_and_the_chat_and_the_model_gets_it_whole(
    make_app, server: FakeAnthropic
) -> None:
    from textual import events

    server.script(MODEL, text("Read it all."))
    app = make_app(server, memory_mode="off")
    log = "\n".join(f"2026-01-01 12:00:{i % 60:02d} worker {i}: step done" for i in range(3000))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await pilot.press(*"why", "space")
        app.post_message(events.Paste(log))  # as the terminal driver sends it
        await wait_until(pilot, lambda: app.prompt.text.startswith("why [pasted 3,000 lines, "))
        label = app.prompt.text.removeprefix("why ")
        assert label.endswith(" KiB]") and len(app.prompt.text) < 60
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Read it all." in chat_texts(app), what="the answer")
        [request] = server.requests_for(MODEL)
        sent = json.dumps(request.body["messages"][-1], ensure_ascii=False)
        assert json.dumps(f"why {log}", ensure_ascii=False)[1:-1] in sent  # whole, in place
        [block] = [b for b in app.chat.blocks if isinstance(b, UserBlock)]
        assert block.text == f"why {log}"
        shown = block.shown_text
        assert label in shown and "worker 2999" not in shown and len(shown.splitlines()) <= 3
        # Enter (or a click) on the block expands it; again collapses it.
        block.focus()
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: "worker 999: step done" in block.shown_text, what="the expanded paste"
        )
        assert "3,000 lines in all" in block.shown_text  # expanded, it says where it is cut
        await pilot.press("enter")
        await wait_until(pilot, lambda: "worker 999" not in block.shown_text)
        await pilot.click(block)
        await wait_until(pilot, lambda: "worker 999" in block.shown_text, what="expanded by a click")
