"""A streamed answer block (widgets/chat/answer_block.py) drawn on demand: ``drawn()`` writes what
was received without the coalescing wait and returns after the frame (tiny host App, no runtime)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tests.tui.conftest import wait_until
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.log import ChatPane


class ChatHost(App[None]):
    def compose(self) -> ComposeResult:
        yield ChatPane()

    @property
    def pane(self) -> ChatPane:
        return self.query_one(ChatPane)


async def test_drawn_writes_what_was_received_without_the_coalescing_wait_and_returns_after_a_frame() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = app.pane.start_answer()
        assert isinstance(answer, AnswerBlock)
        await wait_until(pilot, lambda: answer._ready)
        answer.FLUSH_INTERVAL = 3600.0  # the timer would never write it in this test
        await answer.append("The last ")
        await answer.append("words.")
        frames: list[int] = []
        app.screen.call_after_refresh(lambda: frames.append(1))  # a marker frame
        await answer.drawn()
        assert answer.shown_text == "The last words."
        assert not answer.finished  # the stream may go on
        assert answer.shown_lines == ["The last words."]
        assert answer.region.height > 0  # laid out and placed on the screen: the frame was drawn
        assert frames  # the refresh that was due when it was called has run
        await answer.append(" More.")
        await answer.drawn()
        assert answer.shown_text == "The last words. More."


async def test_drawn_returns_at_once_for_a_removed_block() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        await answer.append("gone")
        await answer.remove()
        await answer.drawn()
        assert answer.shown_text == ""


async def test_drawn_waits_for_the_first_layout_of_a_block_mounted_a_moment_ago() -> None:
    """A short answer arrives whole (its deltas merged): its block is not laid out yet when the
    end is to be drawn; ``drawn`` waits for that layout and the frame after it."""
    app = ChatHost()
    async with app.run_test(size=(100, 30)):
        answer = app.pane.start_answer()
        await answer.append("All of it at once.")
        assert not answer._ready
        await answer.drawn()
        assert answer._ready and answer.shown_lines == ["All of it at once."]
        assert answer.region.height > 0


async def test_a_write_that_grows_the_answer_repaints_only_the_lines_from_its_last_block() -> None:
    """Textual repaints all of a widget whose height changed; the answer's lines above its last
    block have not changed, and keep their cached rendering."""
    app = ChatHost()
    async with app.run_test(size=(100, 40)) as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        answer.FLUSH_INTERVAL = 3600.0
        await answer.append("".join(f"Paragraph {i}.\n\n" for i in range(8)) + "The last one")
        await answer.drawn()
        first_changed = len(answer._lines.finished)
        assert first_changed > 10
        painted: list[int] = []
        render_line = answer.render_line

        def spy(y: int):  # type: ignore[no-untyped-def]
            painted.append(y)
            return render_line(y)

        answer.render_line = spy  # type: ignore[method-assign]
        await answer.append(" grows\n\nand a new block follows.")
        await answer.drawn()
        assert answer.shown_lines[-1] == "and a new block follows."
        assert painted and min(painted) >= first_changed, (first_changed, sorted(set(painted)))
