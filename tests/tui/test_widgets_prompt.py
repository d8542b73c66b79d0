"""The prompt in a tiny host App: send, newline keys, history, completion, disabled_reason."""

from __future__ import annotations

from textual import events
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Static

from tests.tui.conftest import wait_until
from widgets.chat.prompt import (
    LARGE_PASTE_CHARS,
    LARGE_PASTE_LINES,
    CompletionDropdown,
    PromptInput,
    Suggestion,
    expand_pastes,
    is_large_paste,
)

COMMANDS = ["help", "clear", "memory", "model", "mode", "quit"]
FILES = ["src/app.py", "src/util.py", "README.md"]


def completer(text: str, cursor: int) -> list[Suggestion]:
    start = cursor
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:cursor]
    if word.startswith("/"):
        return [
            Suggestion(label=f"/{c}", insert=f"/{c}", kind="command", detail=f"the {c} command")
            for c in COMMANDS
            if c.startswith(word[1:])
        ]
    if word.startswith("@"):
        return [Suggestion(label=f, insert=f"@{f}", kind="file") for f in FILES if word[1:] in f]
    return []


class PromptHost(App[None]):
    CSS = ".fill { height: 1fr; }"

    def __init__(self) -> None:
        super().__init__()
        self.submitted: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("chat", id="chat", classes="fill")
        yield PromptInput(id="prompt")

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.submitted.append(message.text)


async def type_text(pilot: Pilot, text: str) -> None:
    await pilot.press(*[("space" if c == " " else c) for c in text])


async def test_enter_submits_the_text_and_clears_the_prompt() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await type_text(pilot, "hello there")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == ["hello there"])
        assert app.prompt.text == ""


async def test_enter_on_an_empty_prompt_sends_nothing() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await pilot.press("space", "enter", "x", "enter")
        await wait_until(pilot, lambda: app.submitted == ["x"])


async def test_shift_enter_and_ctrl_j_insert_newlines_instead_of_sending() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        await wait_until(pilot, lambda: app.prompt.text == "a\nb\nc")
        assert app.submitted == []
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == ["a\nb\nc"])


async def test_a_large_paste_shows_as_one_placeholder_and_is_submitted_whole() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await type_text(pilot, "explain ")
        big = "\n".join(f"line {i} " + "x" * 80 for i in range(3000))
        app.post_message(events.Paste(big))  # as the driver does: the App forwards it to the focus
        label = f"[pasted 3,000 lines, {len(big.encode()) / 1024:.1f} KiB]"
        await wait_until(pilot, lambda: app.prompt.text == f"explain {label}")
        assert app.prompt.expanded_text() == f"explain {big}"
        await type_text(pilot, " please")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == [f"explain {big} please"])
        assert app.prompt.text == ""


async def test_a_large_paste_with_cr_line_ends_counts_its_lines_and_is_sent_with_lf() -> None:
    # What a terminal sends: each line ended by CR (tmux paste-buffer -p turns every LF into CR).
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        pasted = "".join(f"line {i} " + "x" * 60 + "\r" for i in range(3000))
        app.post_message(events.Paste(pasted))
        lf = pasted.replace("\r", "\n")
        label = f"[pasted 3,000 lines, {len(lf.encode()) / 1024:.1f} KiB]"
        await wait_until(pilot, lambda: app.prompt.text == label)
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(app.submitted) == 1)
        [sent] = app.submitted
        assert "\r" not in sent and sent.count("\n") == 2999
        assert sent == lf.rstrip("\n")


async def test_a_small_paste_with_cr_or_crlf_line_ends_is_inserted_with_lf() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        app.post_message(events.Paste("one\rtwo\r\nthree"))
        await wait_until(pilot, lambda: app.prompt.text == "one\ntwo\nthree")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == ["one\ntwo\nthree"])


async def test_pastes_up_to_the_thresholds_are_inserted_as_they_are() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        ten_lines = "\n".join(f"row {i}" for i in range(LARGE_PASTE_LINES))
        app.post_message(events.Paste(ten_lines))
        await wait_until(pilot, lambda: app.prompt.text == ten_lines)
        app.prompt.text = ""
        one_line = "y" * LARGE_PASTE_CHARS
        app.post_message(events.Paste(one_line))
        await wait_until(pilot, lambda: app.prompt.text == one_line)
        assert not is_large_paste(ten_lines) and not is_large_paste(one_line)
        assert is_large_paste(ten_lines + "\nrow 10") and is_large_paste(one_line + "y")


async def test_two_pastes_of_one_size_get_distinct_placeholders_and_both_go_whole() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        first = "\n".join("a" * 20 for _ in range(12))
        second = "\n".join("b" * 20 for _ in range(12))
        app.post_message(events.Paste(first))
        await wait_until(pilot, lambda: "[pasted 12 lines" in app.prompt.text)
        app.post_message(events.Paste(second))
        await wait_until(pilot, lambda: "[pasted #2 · 12 lines" in app.prompt.text)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == [first + second])


async def test_a_recalled_prompt_keeps_its_placeholder_and_is_sent_whole_again() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        big = "\n".join(f"log {i}" for i in range(50))
        app.post_message(events.Paste(big))
        await wait_until(pilot, lambda: app.prompt.text.startswith("[pasted 50 lines"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == [big])
        await pilot.press("up")
        await wait_until(pilot, lambda: app.prompt.text.startswith("[pasted 50 lines"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == [big, big])


async def test_the_submitted_message_carries_the_typed_form_and_its_pastes() -> None:
    seen: list[PromptInput.Submitted] = []

    class Host(PromptHost):
        def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
            seen.append(message)

    app = Host()
    async with app.run_test() as pilot:
        app.prompt.focus()
        big = "z" * 5000
        app.post_message(events.Paste(big))
        await wait_until(pilot, lambda: app.prompt.text.startswith("[pasted 1 line"))
        label = app.prompt.text
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(seen) == 1)
        assert (seen[0].text, seen[0].typed, seen[0].pastes) == (big, label, {label: big})
        assert expand_pastes(f"<{label}>", seen[0].pastes) == f"<{big}>"


async def test_a_notice_shows_on_the_border_without_stopping_enter() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.focus()
        prompt.notice = "connecting… (Enter queues the prompt)"
        assert prompt.border_subtitle == "connecting… (Enter queues the prompt)"
        prompt.disabled_reason = "a turn is running"
        assert prompt.border_subtitle == "a turn is running"  # the reason wins while it is set
        prompt.disabled_reason = None
        assert prompt.border_subtitle == "connecting… (Enter queues the prompt)"
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == ["hi"])


async def test_disabled_reason_blocks_sending_and_shows_on_the_border() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.focus()
        prompt.disabled_reason = "connecting…"
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == []
        assert prompt.text == "hi"
        assert prompt.border_subtitle == "connecting…"
        prompt.disabled_reason = None
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == ["hi"])
        assert not prompt.border_subtitle


async def test_up_and_down_walk_the_history_and_restore_the_draft() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.set_history(["first", "second\nmulti-line"])
        prompt.focus()
        await type_text(pilot, "draft")
        await pilot.press("up")
        await wait_until(pilot, lambda: prompt.text == "second\nmulti-line")
        # The cursor is on the entry's last line: Up moves to its first line, then recalls older.
        await pilot.press("up")
        assert prompt.text == "second\nmulti-line"
        await pilot.press("up")
        await wait_until(pilot, lambda: prompt.text == "first")
        await pilot.press("up")  # the oldest: stays
        assert prompt.text == "first"
        await pilot.press("down")
        await wait_until(pilot, lambda: prompt.text == "second\nmulti-line")
        await pilot.press("down")
        await wait_until(pilot, lambda: prompt.text == "draft")


async def test_a_sent_prompt_is_recalled_by_up_at_once() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await type_text(pilot, "ls")
        await pilot.press("enter", "up")
        await wait_until(pilot, lambda: app.prompt.text == "ls")


async def test_slash_at_the_start_opens_command_completion_and_tab_accepts() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.set_completer(completer)
        prompt.focus()
        await pilot.press("slash", "m")
        await wait_until(
            pilot, lambda: [s.label for s in prompt.suggestions] == ["/memory", "/model", "/mode"]
        )
        dropdown = app.screen.query_one(CompletionDropdown)
        assert dropdown.display and dropdown.option_count == 3
        # Drawn above the prompt.
        assert dropdown.region.bottom <= prompt.region.y
        await pilot.press("down", "tab")
        await wait_until(pilot, lambda: prompt.text == "/model ")
        assert not prompt.completion_visible
        assert app.submitted == []


async def test_enter_accepts_a_suggestion_instead_of_sending() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.set_completer(completer)
        prompt.focus()
        await pilot.press("slash", "h")
        await wait_until(pilot, lambda: prompt.completion_visible)
        await pilot.press("enter")
        await wait_until(pilot, lambda: prompt.text == "/help ")
        assert app.submitted == []
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == ["/help"])


async def test_slash_inside_a_sentence_does_not_complete() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        calls: list[tuple[str, int]] = []

        def recording(text: str, cursor: int) -> list[Suggestion]:
            calls.append((text, cursor))
            return completer(text, cursor)

        prompt.set_completer(recording)
        prompt.focus()
        await type_text(pilot, "use a/b")
        await pilot.pause()
        assert calls == []
        assert not prompt.completion_visible
        await type_text(pilot, " @")  # while an @ word is completed at once
        await wait_until(pilot, lambda: calls == [("use a/b @", 9)])


async def test_at_completes_a_file_mid_sentence_and_esc_closes_the_dropdown() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.set_completer(completer)
        prompt.focus()
        await type_text(pilot, "read @util")
        await wait_until(pilot, lambda: [s.label for s in prompt.suggestions] == ["src/util.py"])
        await pilot.press("escape")
        await wait_until(pilot, lambda: not prompt.completion_visible)
        assert prompt.text == "read @util"
        await pilot.press("backspace", "backspace", "backspace", "backspace")
        await wait_until(pilot, lambda: len(prompt.suggestions) == 3)
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: prompt.text == "read @README.md ")


async def test_a_completer_that_raises_does_not_break_typing() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt

        def broken(text: str, cursor: int) -> list[Suggestion]:
            raise RuntimeError("boom")

        prompt.set_completer(broken)
        prompt.focus()
        await pilot.press("slash", "x", "enter")
        await wait_until(pilot, lambda: app.submitted == ["/x"])


async def test_suggestion_labels_are_stripped_of_terminal_escapes() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.set_completer(
            lambda text, cursor: [Suggestion(label="evil\x1b[2J.py", insert="@evil.py", kind="file")]
        )
        prompt.focus()
        await pilot.press("at")
        await wait_until(pilot, lambda: prompt.completion_visible)
        dropdown = app.screen.query_one(CompletionDropdown)
        option = dropdown.get_option_at_index(0)
        assert "\x1b" not in str(option.prompt)
        assert "evil.py" in str(option.prompt)


async def test_clicking_a_suggestion_accepts_it_and_keeps_the_focus_in_the_prompt() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.set_completer(completer)
        prompt.focus()
        await pilot.press("slash", "m")
        await wait_until(pilot, lambda: prompt.completion_visible)
        await pilot.click(CompletionDropdown, offset=(3, 2))  # the second row: /model
        await wait_until(pilot, lambda: prompt.text == "/model ")
        assert app.focused is prompt


async def test_the_dropdown_closes_when_the_prompt_loses_focus() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.set_completer(completer)
        prompt.focus()
        await pilot.press("slash", "h")
        await wait_until(pilot, lambda: prompt.completion_visible)
        prompt.blur()
        await wait_until(pilot, lambda: not prompt.completion_visible)


async def _completing(pilot: Pilot, app: PromptHost, text: str) -> PromptInput:
    """``text`` typed with the completer on, once the list offers /model and /mode."""
    prompt = app.prompt
    prompt.set_completer(completer)
    prompt.focus()
    await type_text(pilot, text)
    await wait_until(pilot, lambda: [s.label for s in prompt.suggestions] == ["/model", "/mode"])
    return prompt


async def test_enter_sends_a_command_typed_in_full_even_with_the_list_open() -> None:
    app = PromptHost()
    async with app.run_test() as pilot:
        await _completing(pilot, app, "/mode")
        assert app.screen.query_one(CompletionDropdown).highlighted == 1  # the exact match
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.submitted == ["/mode"])


async def test_keys_that_arrive_in_one_burst_complete_the_text_they_typed() -> None:
    """The rest of a command and Enter arrive together (a paste, a slow machine): the keys are
    handled before the Changed messages they cause, yet Enter sends what was typed instead of
    replacing the stale "/mo" span ("/model del" was what a stale list made of it)."""
    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = await _completing(pilot, app, "/mo")
        for key, char in (("d", "d"), ("e", "e"), ("enter", None)):
            prompt.post_message(events.Key(key, char))
        await wait_until(pilot, lambda: app.submitted == ["/mode"])
        assert prompt.text == ""


def test_a_paste_placeholder_names_megabytes_in_mib() -> None:
    from widgets.chat.prompt import paste_label

    token = paste_label("x" * (5 * 1024 * 1024 - 1) + "\n")
    assert "5.0 MiB" in token and "KiB" not in token


async def test_an_enter_typed_ahead_of_raw_mode_arrives_as_ctrl_j_and_sends_until_the_grace_ends() -> None:
    """Before the app sets raw mode the terminal turns Enter's CR into LF (Ctrl+J): typed ahead,
    it must send, not add a line; once the grace is over Ctrl+J is a new line again."""
    import time

    app = PromptHost()
    async with app.run_test() as pilot:
        prompt = app.prompt
        prompt.focus()
        prompt.typeahead_enter_until = time.monotonic() + 3600
        await type_text(pilot, "typed ahead")
        await pilot.press("ctrl+j")
        await wait_until(pilot, lambda: app.submitted == ["typed ahead"])
        prompt.typeahead_enter_until = 0.0
        await type_text(pilot, "a")
        await pilot.press("ctrl+j")
        await type_text(pilot, "b")
        assert prompt.text == "a\nb" and app.submitted == ["typed ahead"]
