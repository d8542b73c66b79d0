"""Terminal escapes in a streamed answer are stripped over the stream, not per chunk: a sequence cut
between two stream chunks leaves nothing of itself on screen (the app, and the answer block)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, send, wait_ready, wait_until
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.log import ChatPane

ANSWER = "Copied \x1b]52;c;aGFja2Vk\x07it and \x1b[5mblink\x1b[0m done."
SHOWN = "Copied it and blink done."


def _answers(app: App[object]) -> list[AnswerBlock]:
    return list(app.query(AnswerBlock))


async def test_escapes_split_across_stream_chunks_leave_no_fragment_in_the_chat(
    make_app, server: FakeAnthropic
) -> None:
    # Cut inside the OSC 52 payload and inside both CSI sequences.
    pieces = ["Copied \x1b", "]52;c;aGFj", "a2Vk\x07it and \x1b[", "5mblink\x1b", "[0m done."]
    server.script(MODEL, text(ANSWER, chunks=pieces))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "copy it")
        await wait_until(
            pilot,
            lambda: any(a.finished and a.shown_text == SHOWN for a in _answers(app)),
            what="the whole answer, stripped",
        )
        [answer] = _answers(app)
        assert answer.text == ANSWER  # kept as received


async def test_an_answer_held_mid_sequence_shows_what_came_before_and_nothing_of_the_sequence(
    make_app, server: FakeAnthropic
) -> None:
    gate = server.gate()
    pieces = ["Copied \x1b]52;c;aGFj", "a2Vk\x07it and \x1b[5mblink\x1b", "[0m done."]
    # The server holds the rest of the stream after the first delta.
    server.script(MODEL, text(ANSWER, chunks=pieces, hold_after=gate))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "copy it")
        try:
            await wait_until(
                pilot,
                lambda: any(a.shown_text == "Copied " for a in _answers(app)),
                what="the first chunk on screen",
            )
            await wait_until(pilot, lambda: gate.reached, what="the server to hold")
            assert all("52;" not in a.shown_text and "aGFj" not in a.shown_text for a in _answers(app))
        finally:
            gate.release()
        await wait_until(
            pilot,
            lambda: any(a.finished and a.shown_text == SHOWN for a in _answers(app)),
            what="the whole answer, stripped",
        )


class _ChatHost(App[None]):
    def compose(self) -> ComposeResult:
        yield ChatPane()


async def test_an_answer_block_drops_a_long_unterminated_osc_split_over_many_fragments() -> None:
    app = _ChatHost()
    async with app.run_test() as pilot:
        answer = app.query_one(ChatPane).start_answer()
        await wait_until(pilot, lambda: answer._ready)
        await answer.append("before \x1b]52;c;")
        for _ in range(3):  # each piece far longer than a look-back over the buffered text
            await answer.append("aGFja2Vk" * 64)
            await pilot.pause(answer.FLUSH_INTERVAL * 2)  # a flush happens while it is still open
        await answer.append("aGFja2Vk\x07after")
        await answer.finish()
        assert answer.shown_text == "before after"


async def test_an_answer_block_ends_an_open_sequence_when_the_response_is_complete() -> None:
    app = _ChatHost()
    async with app.run_test() as pilot:
        answer = app.query_one(ChatPane).start_answer()
        await wait_until(pilot, lambda: answer._ready)
        await answer.append("line one\r")
        assert answer.shown_text == ""
        answer.flush()  # the App's call when the response's usage arrives: no finish() yet
        await wait_until(pilot, lambda: answer.shown_text == "line one\n", what="the held CR written")
