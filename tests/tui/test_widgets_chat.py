"""The chat pane and its blocks, each in a tiny host App (no runtime, no network)."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from tests.tui.conftest import wait_until
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.answer_lines import AnswerLines
from widgets.chat.log import ChatPane
from widgets.chat.tool_block import ResultView, ToolBlock, summarize_args
from widgets.chat.user_block import UserBlock


class ChatHost(App[None]):
    def __init__(self, max_blocks: int = 300) -> None:
        super().__init__()
        self.max_blocks = max_blocks

    def compose(self) -> ComposeResult:
        yield ChatPane(max_blocks=self.max_blocks)

    @property
    def pane(self) -> ChatPane:
        return self.query_one(ChatPane)


async def test_streamed_fragments_render_as_markdown_with_a_highlighted_code_fence() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = app.pane.start_answer()
        fragments = ["Here ", "is **bold** ", "text.\n\n```py", "thon\nprint('hi')\n", "```\n", "Done."]
        for fragment in fragments:
            await answer.append(fragment)
        await answer.finish()
        assert answer.text == "".join(fragments)
        assert answer.source == "".join(fragments)
        # Finished before it was laid out: drawn whole at its first width.
        await wait_until(pilot, lambda: bool(answer.lines), what="the answer drawn")
        shown = answer.shown_lines
        assert "Here is bold text." in shown and "Done." in shown
        assert "**" not in "".join(shown)  # Markdown, not its source
        [code] = [line for line in answer.lines if "print('hi')" in line.text]
        # Highlighted: the call, the parentheses and the string are drawn in different colours.
        colours = {seg.style.color for seg in code if seg.style and seg.style.color and seg.text.strip()}
        assert len(colours) >= 2, colours
        await wait_until(pilot, lambda: "print('hi')" in _screen_text(app), what="the fence on the screen")


async def test_streamed_fragments_after_mount_are_rendered_when_finish_returns() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        for word in ["# Title\n\n", "para", "graph ", "one.\n\n", "- item\n"]:
            await answer.append(word)
        await answer.finish()
        assert answer.source == "# Title\n\nparagraph one.\n\n- item\n"
        shown = [line.strip() for line in answer.shown_lines]
        # The heading, the paragraph and the list, one blank line between blocks.
        title = next(i for i, line in enumerate(shown) if "Title" in line)
        para = shown.index("paragraph one.")
        item = next(i for i, line in enumerate(shown) if line.endswith("item"))
        assert title < para < item
        assert shown[para - 1] == "" and shown[item - 1] == ""
        assert "- item" not in shown  # drawn as a bullet


async def test_finish_returns_only_when_the_last_fragment_is_rendered() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        for i in range(300):
            await answer.append(f"word{i} ")
            if i % 10 == 0:
                await pilot.pause(0.001)
        await answer.append("\n\nThe very last paragraph.")
        await answer.finish()
        assert answer.shown_lines[-1] == "The very last paragraph."


async def test_many_small_appends_are_coalesced_into_few_markdown_writes() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        writes: list[str] = []
        original = AnswerLines.write

        def counting_write(self: AnswerLines, console, options, text, *, complete=False):  # type: ignore[no-untyped-def]
            writes.append(text)
            return original(self, console, options, text, complete=complete)

        AnswerLines.write = counting_write  # type: ignore[method-assign]
        try:
            # Tokens trickle in over time, as from the network, with the loop free in between.
            for i in range(200):
                await answer.append(f"w{i} ")
                await pilot.pause(0.002)
            await answer.finish()
        finally:
            AnswerLines.write = original  # type: ignore[method-assign]
        assert "".join(writes) == "".join(f"w{i} " for i in range(200))
        assert len(writes) < 60


async def _finished_answer(app: ChatHost, pilot: Any, text: str, source: str) -> Any:
    """An answer streamed whole and finished, once the block shows ``source``."""
    answer = app.pane.start_answer()
    await answer.append(text)
    await answer.finish()
    await wait_until(pilot, lambda: answer.source == source)
    return answer


async def test_answer_text_is_stripped_of_terminal_escapes_before_display() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        answer = await _finished_answer(
            app, pilot, "safe \x1b]0;pwned\x07title \x1b[31mred\x1b[0m", "safe title red"
        )
        assert "\x1b" in answer.text  # what was received is kept as received


async def test_an_escape_sequence_split_across_fragments_leaves_no_remnant() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        await answer.append("plain \x1b[3")
        await pilot.pause(answer.FLUSH_INTERVAL * 3)  # a flush happens between the two halves
        await answer.append("1mred\x1b]0;ti")
        await pilot.pause(answer.FLUSH_INTERVAL * 3)
        await answer.append("tle\x07 end")
        await answer.finish()
        assert answer.source == "plain red end"


async def test_an_answer_finished_before_it_was_mounted_is_shown_whole() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        answer = app.pane.start_answer()
        await answer.append("short answer")
        await answer.finish()
        await wait_until(pilot, lambda: answer.source == "short answer")


async def test_an_answer_removed_while_a_modal_draws_the_screen_behind_it_is_no_crash() -> None:
    # A session switch clears the chat while /resume's picker is up: the compositor draws the
    # screen behind the picker once more, the removed answer included, and it has no screen then.
    from textual.geometry import Region

    app = ChatHost()
    async with app.run_test() as pilot:
        answer = await _finished_answer(
            app, pilot, "an answer with\n\nsome lines", "an answer with\n\nsome lines"
        )
        width = answer.size.width
        await answer.remove()
        lines = answer.render_lines(Region(0, 0, width, 5))
        assert len(lines) == 5  # drawn (blank: it has no place any more), not NoScreen


async def test_blocks_beyond_max_blocks_are_pruned_from_the_top() -> None:
    app = ChatHost(max_blocks=20)
    async with app.run_test() as pilot:
        first = app.pane.add_user("first")
        for i in range(60):
            app.pane.add_note(f"note {i}")
        last_tool = app.pane.add_tool("call-last", "bash")
        await wait_until(pilot, lambda: len(app.pane.children) == 20)
        assert not first.is_attached
        assert app.pane.children[-1] is last_tool
        assert app.pane.tool("call-last") is last_tool


async def test_pruned_tool_blocks_are_forgotten_by_tool_lookup() -> None:
    app = ChatHost(max_blocks=5)
    async with app.run_test() as pilot:
        task = app.pane.add_tool("t1", "task")
        app.pane.add_tool("c1", "read_file", depth=1, parent_id="t1")
        for i in range(10):
            app.pane.add_note(f"n{i}")
        await wait_until(pilot, lambda: not task.is_attached and len(app.pane.children) == 5)
        assert app.pane.tool("t1") is None
        assert app.pane.tool("c1") is None


async def test_pane_follows_the_bottom_until_the_user_scrolls_up() -> None:
    app = ChatHost()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.pane
        for i in range(40):
            pane.add_note(f"line {i}")
        await wait_until(pilot, lambda: pane.max_scroll_y > 0 and pane.scroll_y == pane.max_scroll_y)

        # The user scrolls up (mouse wheel): new blocks no longer move the view.
        pane.scroll_up(animate=False)
        pane.scroll_up(animate=False)
        await wait_until(pilot, lambda: pane.scroll_y < pane.max_scroll_y)
        held = pane.scroll_y
        for i in range(10):
            pane.add_note(f"more {i}")
        await wait_until(pilot, lambda: len(pane.children) == 50 and pane.max_scroll_y > held + 5)
        assert pane.scroll_y == held

        # Back at the bottom, it follows again.
        pane.scroll_end(animate=False, immediate=True)
        await wait_until(pilot, lambda: pane.scroll_y == pane.max_scroll_y)
        for i in range(10):
            pane.add_note(f"again {i}")
        await wait_until(pilot, lambda: len(pane.children) == 60)
        await wait_until(pilot, lambda: pane.scroll_y == pane.max_scroll_y)


async def test_sending_a_message_re_anchors_a_pane_scrolled_up() -> None:
    app = ChatHost()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.pane
        for i in range(40):
            pane.add_note(f"line {i}")
        await wait_until(pilot, lambda: pane.max_scroll_y > 0 and pane.scroll_y == pane.max_scroll_y)
        pane.scroll_home(animate=False, immediate=True)
        await wait_until(pilot, lambda: pane.scroll_y == 0)
        user = pane.add_user("new question")
        await wait_until(pilot, lambda: user.is_mounted and pane.scroll_y == pane.max_scroll_y > 0)


async def test_tool_block_goes_from_streaming_to_running_to_done_with_a_collapsed_excerpt() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        block = app.pane.add_tool("c1", "bash")
        await wait_until(pilot, lambda: block.is_mounted)
        block.set_streaming(2048)
        assert block.status == "streaming"
        assert "2.0 KiB" in block.header_text
        block.set_running({"command": "ls -la", "timeout": 30})
        assert block.status == "running"
        assert block.args_line == "ls -la  timeout=30"
        output = "\n".join(f"file{i}" for i in range(10))
        block.set_result(output, is_error=False, denied=False)
        assert block.status == "done"
        assert block.excerpt.startswith("file0\nfile1\nfile2\n")
        assert "7 more lines" in block.excerpt
        assert "file9" not in block.excerpt


async def test_tool_result_expands_and_collapses_on_enter_and_on_click() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        block = app.pane.add_tool("c1", "read_file")
        block.set_running({"path": "a.py"})
        block.set_result("\n".join(f"line {i}" for i in range(20)), is_error=False, denied=False)
        await wait_until(pilot, lambda: block.is_mounted)
        block.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: block.expanded)
        assert "line 19" in block.excerpt
        await pilot.press("enter")
        await wait_until(pilot, lambda: not block.expanded)
        assert "line 19" not in block.excerpt
        await pilot.click(block)
        await wait_until(pilot, lambda: block.expanded)


async def test_tool_error_and_denied_results_show_their_status() -> None:
    app = ChatHost()
    async with app.run_test():
        failed = app.pane.add_tool("c1", "bash")
        failed.set_result("exit code 2", is_error=True, denied=False)
        denied = app.pane.add_tool("c2", "write_file")
        denied.set_result("the user denied this call", is_error=True, denied=True)
        assert failed.status == "error" and failed.has_class("-error")
        assert denied.status == "denied"
        assert "denied" in denied.header_text


async def test_a_sub_agent_call_nests_under_its_task_block() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        task = app.pane.add_tool("t1", "task")
        task.set_running({"description": "look around", "prompt": "find the tests\nand read them"})
        child = app.pane.add_tool("c1", "grep", depth=1, parent_id="t1")
        grandchild = task.add_child("c2", "read_file")
        await wait_until(pilot, lambda: child.is_mounted and grandchild.is_mounted)
        assert child in task.query(ToolBlock)
        assert child.parent is not app.pane
        assert app.pane.tool("c1") is child
        assert app.pane.tool("c2") is grandchild
        assert task.args_line == "look around  prompt: 2 lines"
        # A click on the child toggles the child only.
        child.set_result("a\nb\nc\nd\ne", is_error=False, denied=False)
        task.set_result("x\ny\nz\nw", is_error=False, denied=False)
        await pilot.pause()
        await pilot.click(child)
        await wait_until(pilot, lambda: child.expanded)
        assert not task.expanded


async def test_a_sub_agent_call_whose_parent_is_gone_is_added_at_the_bottom() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        orphan = app.pane.add_tool("c9", "grep", depth=1, parent_id="missing")
        await wait_until(pilot, lambda: orphan.is_mounted)
        assert orphan.parent is app.pane and orphan.has_class("-nested")


async def test_user_note_and_error_text_is_plain_and_sanitized() -> None:
    app = ChatHost()
    async with app.run_test():
        user = app.pane.add_user("[b]not markup[/b] \x1b[2Jcleared?")
        error = app.pane.add_error("429 rate limited\x1b]8;;http://x\x07")
        assert isinstance(user, UserBlock)
        assert user.content.plain == "[b]not markup[/b] cleared?"  # type: ignore[union-attr]
        assert "\x1b" not in error.content.plain  # type: ignore[union-attr]


async def test_clear_blocks_empties_the_pane_and_the_tool_lookup() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        app.pane.add_user("q")
        app.pane.add_tool("c1", "bash")
        answer = app.pane.start_answer()
        await answer.append("partial")
        app.pane.clear_blocks()
        assert app.pane.blocks == []
        await wait_until(pilot, lambda: len(app.pane.children) == 0)
        assert app.pane.tool("c1") is None
        await answer.append("after removal is dropped")
        await answer.finish()
        assert isinstance(answer, AnswerBlock)


# Display keys as tool specs give them: the telling inputs first, each with its format.
READ_MEMORY = (("filename", "{}"), ("level", "{} level"))
GREP = (("pattern", "{}"), ("path", "in {}"), ("glob", "files {}"))
LIST_FILES = (("pattern", "{}"), ("path", "in {}"))
PATH = (("path", "{}"),)
COMMAND = (("command", "{}"),)
DESCRIPTION = (("description", "{}"),)


def test_summarize_args_puts_the_telling_values_first_and_bulky_ones_as_sizes() -> None:
    assert (
        summarize_args({"path": "a.py", "content": "x\ny\n"}) == "a.py  content: 2 lines"
    )  # as the dialog counts
    assert summarize_args({"command": "echo \x1b[31mhi\nthere"}) == "echo hi there"
    assert summarize_args({"level": "user", "filename": "MEMORY.md", "offset": 10}, READ_MEMORY) == (
        "MEMORY.md  user level  offset=10"
    )
    assert len(summarize_args({"command": "x" * 1000})) == 300


async def test_a_new_tool_block_shows_its_name_before_any_event() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        block = app.pane.add_tool("c1", "list_files")
        await wait_until(pilot, lambda: block.is_mounted)
        assert block.header_text == "◌ list_files  preparing"


async def test_a_long_tool_call_stays_compact_until_expanded() -> None:
    app = ChatHost()
    async with app.run_test(size=(80, 24)) as pilot:
        block = app.pane.add_tool("c1", "bash")
        block.set_running({"command": "echo " + "word " * 100})
        block.set_result("\n".join("x" * 300 for _ in range(10)), is_error=False, denied=False)
        # One header row; three result rows and the "more lines" hint.
        await wait_until(pilot, lambda: block._header.size.height == 1 and block._result.size.height == 4)
        block.toggle()
        await wait_until(pilot, lambda: block._result.size.height > 20)


def test_summarize_args_puts_the_display_keys_first_in_their_formats() -> None:
    assert summarize_args({"path": "app/", "pattern": "bash_timeout"}, GREP) == "bash_timeout  in app/"
    assert summarize_args({"glob": "*.py", "path": "app", "pattern": "x"}, GREP) == "x  in app  files *.py"
    assert summarize_args({"pattern": "x"}, GREP) == "x"
    assert summarize_args({"path": "src", "pattern": "**/*.py"}, LIST_FILES) == "**/*.py  in src"
    assert summarize_args({"path": "src"}, LIST_FILES) == "src"  # no dangling "in"
    assert summarize_args({"limit": 20, "path": "a.py", "offset": 5}, PATH) == "a.py  limit=20  offset=5"
    assert summarize_args(
        {"replace_all": True, "new_string": "b", "old_string": "a", "path": "x.py"}, PATH
    ) == ("x.py  replace_all=true  new_string: 1 line  old_string: 1 line")
    assert summarize_args({"timeout": 30, "command": "make test"}, COMMAND) == "make test  timeout=30"
    assert summarize_args({"prompt": "a\nb", "description": "look"}, DESCRIPTION) == "look  prompt: 2 lines"
    # No keys: the generic order (a command before a path), every other input after.
    assert summarize_args({"path": "a", "command": "ls"}) == "ls  a"


BASH_OK = "exit code: 0\n--- stdout ---\nfirst\nsecond\nthird\nfourth"
# What the shell tool structures its results as (the text stays what the model got).
OK_VIEW = ResultView("exit 0", "first\nsecond\nthird\nfourth", False)


async def test_a_bash_result_puts_the_exit_code_in_the_header_and_output_in_the_excerpt() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        ok = app.pane.add_tool("c1", "bash", display_keys=COMMAND)
        ok.set_running({"command": "make test"})
        ok.set_result(BASH_OK, is_error=False, denied=False, view=OK_VIEW)
        failed = app.pane.add_tool("c2", "bash", display_keys=COMMAND)
        failed.set_result(
            "exit code: 2\n--- stderr ---\nmake: *** no rule",
            is_error=True,
            denied=False,
            view=ResultView("exit 2", "make: *** no rule", True),
        )
        await wait_until(pilot, lambda: ok.is_mounted and failed.is_mounted)
        assert ok.header_text == "✓ bash  exit 0  make test  4 lines"
        assert ok.excerpt.startswith("first\nsecond\nthird\n… 1 more line")
        assert "exit code" not in ok.excerpt and "--- stdout ---" not in ok.excerpt
        assert failed.header_text == "✗ bash  exit 2  1 line" and failed.status == "error"
        assert failed.excerpt == "make: *** no rule"
        # Non-zero exit: the status is drawn in the error colour; a long command never hides it.
        spans = [
            s for s in failed._header.visual.spans if "exit 2" in failed._header.visual.plain[s.start : s.end]
        ]
        assert spans and all(s.style == "$text-error" for s in spans)
        long = app.pane.add_tool("c3", "bash", display_keys=COMMAND)
        long.set_running({"command": "echo " + "word " * 100})
        long.set_result(
            "exit code: 3\n(no output)", is_error=True, denied=False, view=ResultView("exit 3", "", True)
        )
        await wait_until(pilot, lambda: long.is_mounted and long._header.size.width > 0)
        row = app.screen._compositor.render_strips()[long._header.region.y].text
        assert "✗ bash  exit 3  echo word" in row


async def test_a_result_without_a_view_is_plain_text_and_a_denied_call_ignores_its_view() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 30)) as pilot:
        plain = app.pane.add_tool("c1", "bash", display_keys=COMMAND)
        plain.set_result(BASH_OK, is_error=False, denied=False)  # a replayed session: no view
        denied = app.pane.add_tool("c2", "bash")
        denied.set_result("the user denied this call", is_error=True, denied=True, view=OK_VIEW)
        hostile = app.pane.add_tool("c3", "bash")
        hostile.set_result(
            "x", is_error=False, denied=False, view=ResultView("exit\x1b[31m 0\n", "\x1b]0;t\x07out", False)
        )
        await wait_until(pilot, lambda: plain.is_mounted and denied.is_mounted and hostile.is_mounted)
        assert plain.header_text == "✓ bash  6 lines" and plain.excerpt.startswith(
            "exit code: 0\n--- stdout ---"
        )
        assert denied.header_text == "⊘ bash  denied" and denied.excerpt == "the user denied this call"
        assert hostile.header_text == "✓ bash  exit 0  1 line" and hostile.excerpt == "out"


async def test_a_bash_result_without_output_says_so_and_shows_no_excerpt() -> None:
    app = ChatHost()
    async with app.run_test() as pilot:
        block = app.pane.add_tool("c1", "bash")
        block.set_result(
            "exit code: 0\n(no output)", is_error=False, denied=False, view=ResultView("exit 0", "", False)
        )
        await wait_until(pilot, lambda: block.is_mounted)
        assert block.header_text == "✓ bash  exit 0  no output"
        assert not block.has_class("-has-result")


async def test_while_the_person_types_the_answer_is_written_less_often_and_after_a_keystroke() -> None:
    """A write lays the screen out for a few frames: while keys arrive, writes come at most every
    TYPING_FLUSH_INTERVAL and right after a key's frame; once the typing stops, what is pending
    is written by the fallback timer; nothing is lost."""
    import asyncio
    import itertools
    import time

    app = ChatHost()
    async with app.run_test() as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        writes: list[tuple[float, float]] = []  # (when, seconds since the last key)
        keys: list[float] = []
        write = answer._lines.write

        def spy(console, options, text, *, complete=False):  # type: ignore[no-untyped-def]
            now = time.monotonic()
            writes.append((now, now - keys[-1] if keys else float("inf")))
            write(console, options, text, complete=complete)

        answer._lines.write = spy  # type: ignore[method-assign]
        sent = []
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.2
        i = 0
        while loop.time() < end:
            word = f"w{i} "
            sent.append(word)
            await answer.append(word)
            if i % 6 == 0:  # a key every ~60 ms
                keys.append(time.monotonic())
                answer.typing()
            i += 1
            await asyncio.sleep(0.01)
        typing_writes = list(writes)
        assert typing_writes, "the answer must still be written while the person types"
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(typing_writes)]
        assert all(g >= answer.TYPING_FLUSH_INTERVAL - 0.01 for g in gaps), gaps
        # Each of those writes came right after a key (its frame), not at some random moment.
        assert all(since < 0.1 for _, since in typing_writes[1:]), typing_writes
        # The typing stops: the rest is written without another key.
        await wait_until(
            pilot,
            lambda: answer.source == "".join(sent).strip() or answer.source == "".join(sent),
            timeout=5,
            what="the pending words after the typing stopped",
        )


def _long_answer(sections: int) -> str:
    return (
        "".join(
            f"## Step {i}\n\nParagraph {i} explains the change in some detail, enough to wrap once or twice "
            f"at eighty columns so that the part is several rows tall.\n\n- item {i}a\n- item {i}b\n\n"
            f"```py\nvalue_{i} = {i}\n```\n\n"
            for i in range(sections)
        )
        + "The end of the answer."
    )


def _screen_text(app: App[None]) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_a_long_answer_is_one_widget_whose_finished_blocks_are_drawn_once() -> None:
    """A long answer streams into one widget's lines: a finished block is drawn once (a write
    draws only the growing last block again), scrolling back shows its start, and the text is
    whole, in order."""
    body = _long_answer(60)
    app = ChatHost()
    async with app.run_test(size=(80, 24)) as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        drawn: list[tuple[int, str]] = []
        import widgets.chat.answer_lines as answer_lines

        original = answer_lines._draw

        def counting(console, options, source, *, growing=False):  # type: ignore[no-untyped-def]
            if not growing:
                drawn.append((options.max_width, source))
            return original(console, options, source, growing=growing)

        answer_lines._draw = counting  # type: ignore[assignment]
        try:
            for k in range(0, len(body), 97):
                await answer.append(body[k : k + 97])
                await pilot.pause(0.01)  # a stream: the writes happen while it arrives
            await answer.finish()
        finally:
            answer_lines._draw = original  # type: ignore[assignment]
        await wait_until(pilot, lambda: "The end of the answer." in _screen_text(app), what="the last line")
        assert list(answer.query("*")) == []  # no widget per block
        # Each block drawn finished exactly once at the answer's width, in order: together they are
        # the whole text. (The pane's scrollbar, once the answer is taller than the view, narrows
        # it by a column: what was drawn before is drawn again, once.)
        final = [source for width, source in drawn if width == answer.size.width]
        assert "".join(final) == body
        assert len(final) == 4 * 60 + 1
        app.pane.scroll_home(animate=False)
        await wait_until(pilot, lambda: "Step 0" in _screen_text(app), what="the start on the screen")
        words = " ".join(answer.shown_lines).split()
        assert words.count("explains") == 60 and words[-1] == "answer."
        assert answer.text == body


async def test_an_answer_is_drawn_again_at_a_new_width() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 24)) as pilot:
        answer = app.pane.start_answer()
        text = "word " * 60
        await answer.append(text)
        await answer.finish()
        await wait_until(pilot, lambda: answer._ready and bool(answer.lines))
        wide = len(answer.lines)
        await pilot.resize_terminal(50, 24)
        await wait_until(pilot, lambda: answer.size.width < 50, what="the narrower layout")
        await wait_until(pilot, lambda: len(answer.lines) > wide, what="the answer drawn again")
        assert all(len(line) <= answer.size.width for line in answer.shown_lines)
        assert " ".join(answer.shown_lines).split() == text.split()


async def test_text_selected_in_an_answer_is_what_it_shows() -> None:
    from textual.geometry import Offset
    from textual.selection import Selection

    app = ChatHost()
    async with app.run_test(size=(100, 24)) as pilot:
        answer = app.pane.start_answer()
        await answer.append("First paragraph here.\n\n- one\n- two\n")
        await answer.finish()
        await wait_until(pilot, lambda: answer._ready and bool(answer.lines))
        every = answer.get_selection(Selection(None, None))
        assert every is not None
        text = every[0]
        assert text.splitlines()[0] == "First paragraph here."
        assert "one" in text and "two" in text
        part = answer.get_selection(Selection(Offset(6, 0), Offset(15, 0)))
        assert part is not None and part[0] == "paragraph"
        # The selected cells are drawn in the selection's style.
        app.screen.selections = {answer: Selection(Offset(6, 0), Offset(15, 0))}
        line = answer.render_line(0)
        style = app.screen.get_component_rich_style("screen--selection")
        marked = "".join(
            seg.text for seg in line if seg.style and style.bgcolor and seg.style.bgcolor == style.bgcolor
        )
        assert marked == "paragraph"


async def test_a_stream_faster_than_anyone_reads_is_written_less_often() -> None:
    app = ChatHost()
    async with app.run_test(size=(100, 24)) as pilot:
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        delays: list[float] = []
        set_timer = answer.set_timer

        def spy(delay, callback):  # type: ignore[no-untyped-def]
            delays.append(delay)
            return set_timer(delay, callback)

        answer.set_timer = spy  # type: ignore[method-assign]
        await answer.append("word " * 600)  # 3,000 characters within one interval
        await wait_until(pilot, lambda: bool(answer.source), what="the first write")
        await answer.append("more ")
        await wait_until(pilot, lambda: answer.source.endswith("more "), what="the second write")
        assert delays[0] == answer.FLUSH_INTERVAL
        assert delays[1] == answer.MAX_FLUSH_INTERVAL  # after a write of 3,000 characters
        await answer.append("x")
        await wait_until(pilot, lambda: answer.source.endswith("x"), what="the third write")
        assert delays[2] == answer.FLUSH_INTERVAL  # the stream slowed down: fluid again


async def test_drawn_returns_after_a_frame_that_shows_the_answers_end_was_written() -> None:
    # What follows drawn() (the turn's memory job) must not land between the flush and the frame
    # that paints it: the person sees the end first.
    app = ChatHost()
    written: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        display = app._display

        def recording(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            written.append("\n".join(strip.text for strip in app.screen._compositor.render_strips()))

        app._display = recording  # type: ignore[method-assign]
        answer = app.pane.start_answer()
        await wait_until(pilot, lambda: answer._ready)
        for i in range(12):
            await answer.append(f"word{i} ")
            await answer.append("and then the very last words.\n\n")
            await answer.drawn()
            assert written and f"word{i} and then the very last words." in written[-1], i
