"""Slash commands: parsing and completion (headless), and what each does in the running app."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from app.tui.chat import command_table as commands
from tests.support.clitools import create_op, ops_answer, system_text
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.user_block import UserBlock


def test_parse_tells_commands_from_messages() -> None:
    assert commands.parse("/model claude-x") == commands.Parsed(
        "model", "claude-x", commands.BY_NAME["model"]
    )
    assert commands.parse("  /REMEMBER  keep this  ") == commands.Parsed(
        "remember", "keep this", commands.BY_NAME["remember"]
    )
    assert commands.parse("/nope") == commands.Parsed("nope", "", None)
    # Messages: plain text, a path at the start, a doubled slash, a lone slash.
    for message in ("hello /clear", "/usr/bin is where it lives", "//not a command", "/"):
        assert commands.parse(message) is None


def test_completion_lists_matching_commands_in_table_order() -> None:
    assert [c.name for c in commands.completions("/re")] == ["remember", "resume", "rewind"]
    assert len(commands.completions("/")) == len(commands.COMMANDS)
    help_text = commands.help_text()
    for name in (
        "/help",
        "/clear",
        "/memory",
        "/pending",
        "/remember",
        "/undo",
        "/model",
        "/mode",
        "/resume",
        "/cost",
        "/compact",
        "/rewind",
        "/quit",
        "Esc",
        "Esc Esc",
        "Ctrl+Q",
        "F2",
    ):
        assert name in help_text


def test_every_command_has_one_handler_and_the_app_mixes_nothing_in(ws: Path) -> None:
    """The commands are an object the chat screen holds (its table covers the command list), and
    the memory screens handle their own messages: no handler names of theirs are on the App."""
    from textual.app import App

    from app.tui.app import PseudoClaudeApp

    slash = PseudoClaudeApp({}, ws).chat_screen.commands
    assert slash is not None and list(slash.handlers) == [c.name for c in commands.COMMANDS]
    assert PseudoClaudeApp.__bases__ == (App,)
    prefixes = (
        "on_card_browser_",
        "on_card_editor_",
        "on_pending_screen_",
        "on_editor_",
        "on_cards_",
        "cmd_",
    )
    assert [n for n in dir(PseudoClaudeApp) if n.startswith(prefixes)] == []


async def test_the_prompt_completes_slash_commands_and_workspace_files(make_app, ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("print('hi')\n")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "src/main.py" in app.chat_screen.files)
        assert [s.insert for s in app.chat_screen.complete("/mo", 3)] == ["/model ", "/mode "]
        assert app.chat_screen.complete("hello /mo", 9) == []  # a command only at the start
        assert next(s.insert for s in app.chat_screen.complete("look at @mainpy", 15)) == "@src/main.py "


async def test_unknown_commands_and_help_answer_in_the_chat(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/frobnicate now")
        await wait_until(pilot, lambda: any("unknown command /frobnicate" in t for t in chat_texts(app)))
        assert not any(isinstance(b, UserBlock) for b in app.chat.blocks)  # not sent as a message
        await send(pilot, "/help")
        await wait_until(pilot, lambda: any("/remember TEXT" in t for t in chat_texts(app)))


async def test_clear_starts_a_new_session_that_keeps_memory(make_app, server: FakeAnthropic) -> None:
    server.script(MODEL, text("Use make build."), text("Still make build."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run make build."))))
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        first_session = app.services.session.id
        await send(pilot, "How do I build?")
        await wait_until(pilot, lambda: any(c.title == "Build with make" for c in app.panel.state.project))
        await send(pilot, "/clear")
        await wait_until(pilot, lambda: app.services.session.id != first_session, what="a new session")
        await wait_until(pilot, lambda: not any(isinstance(b, UserBlock) for b in app.chat.blocks))
        await send(pilot, "and again?")
        await wait_until(pilot, lambda: "Still make build." in chat_texts(app))
        second = server.requests_for(MODEL)[1]
        assert "Build with make" in system_text(second)  # the new session's prompt has the full index
        assert len(second.body["messages"]) == 1  # and none of the old conversation


async def test_model_switches_the_next_request_and_mode_switches_memory(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script("claude-other-1", text("from the other model"))
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/model claude-other-1")
        await wait_until(pilot, lambda: app.bridge.settings.model == "claude-other-1")
        await send(pilot, "/mode off")
        await wait_until(pilot, lambda: app.bridge.runtime.memory_mode == "off")
        assert app.bridge.runtime.manager.mode == "off"
        await send(pilot, "hello")
        await wait_until(pilot, lambda: "from the other model" in chat_texts(app))
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
        assert len(server.requests_for("claude-other-1")) == 1 and not server.requests_for(MODEL)
        assert not server.requests_for(MEMORY_MODEL)  # memory off: no extraction request
        await send(pilot, "/mode sometimes")
        await wait_until(pilot, lambda: any("usage: /mode auto|review|off" in t for t in chat_texts(app)))
        assert "memory mode: off" in chat_texts(app)


async def test_undo_reverts_the_last_batch_and_says_when_there_is_none(make_app, ws: Path) -> None:
    app = make_app()
    store = ws / ".PseudoClaude" / "memory"
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        await asyncio.to_thread(
            app.bridge.stores.create_card,
            "project",
            "project_knowledge",
            "Releases",
            "",
            "Releases are tagged from main only",
        )
        await send(pilot, "/undo")
        await wait_until(pilot, lambda: any("undid the last memory batch" in t for t in chat_texts(app)))
        await wait_until(pilot, lambda: not list(store.glob("project_knowledge_*.md")))
        await send(pilot, "/undo")
        await wait_until(pilot, lambda: any("nothing to undo" in t for t in chat_texts(app)))


async def test_an_at_path_attaches_the_file_to_the_message(make_app, server: FakeAnthropic, ws: Path) -> None:
    (ws / "notes.txt").write_text("the secret word is pineapple\n")
    server.script(MODEL, text("It says pineapple."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "notes.txt" in app.chat_screen.files)
        await send(pilot, "what does @notes.txt say?")
        await wait_until(pilot, lambda: "It says pineapple." in chat_texts(app))
        sent = server.requests_for(MODEL)[0].body["messages"][-1]["content"]
        assert "pineapple" in str(sent)


async def test_resume_picks_an_earlier_session_and_shows_its_history(make_app, server: FakeAnthropic) -> None:
    server.script(MODEL, text("First session answer."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "first session question")
        await wait_until(pilot, lambda: "First session answer." in chat_texts(app))
        first = app.services.session.id
        await send(pilot, "/clear")
        await wait_until(pilot, lambda: app.services.session.id != first)
        await send(pilot, "/resume")
        from app.tui.chat.session_picker import SessionPicker

        await wait_until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        # The current session has no prompt yet: it is not offered, so the first row is the earlier one.
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen is not picker)
        await wait_until(pilot, lambda: app.services.session.id == first)
        await wait_until(pilot, lambda: "First session answer." in chat_texts(app))
        assert "first session question" in chat_texts(app)


def _block_lines(app, block) -> list[str]:
    """The rows of a chat block as drawn on the screen (its content region only)."""
    region = block.content_region
    strips = app.screen._compositor.render_strips()
    return [strips[y].text[region.x : region.right] for y in range(region.y, region.bottom)]


@pytest.mark.parametrize("size", [(100, 90), (140, 90)], ids=["chat-58-cols", "chat-about-100-cols"])
async def test_help_wraps_descriptions_under_their_own_column_at_58_and_100_columns(make_app, size) -> None:
    # 100 columns: the chat beside the panel is 58 wide; 140: the chat is about 100 wide. 90 rows: the
    # whole /help block is on the screen.
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/help")
        await wait_until(pilot, lambda: any("/remember TEXT" in t for t in chat_texts(app)))
        block = app.chat.blocks[-1]
        await wait_until(pilot, lambda: block.content_region.height > 10)
        await pilot.pause()
        lines = _block_lines(app, block)
        indent = next(line.index("list the commands") for line in lines if line.startswith("/help"))
        assert indent > len("/help")
        usages = {c.usage for c in commands.COMMANDS}
        keys = {k for k, _ in commands.KEYS}
        for line in lines:
            head = line[:indent].rstrip()
            # Every row starts with a command or key, or continues under the descriptions.
            assert head in usages or head in keys or head == "", line
        continued = {right for left, right in commands.KEYS if not left}  # rows going on from the one above
        wrapped = [
            line for line in lines if not line[:indent].strip() and line.strip() not in ("", *continued)
        ]
        # At 58 columns the longest descriptions wrap, and stay indented (a hanging indent).
        assert bool(wrapped) == (size[0] == 100), wrapped
        assert "automatic near the context limit" in " ".join(" ".join(lines).split())


def _help_keys(rows: list[str]) -> set[str]:
    """The keys /help's rows name: the first word of each "key what" item, "1-4" a range,
    "e/Enter" two keys."""
    found: set[str] = set()
    for item in "·".join(rows).split("·"):
        key = item.split()[0].lower()
        if re.fullmatch(r"\d-\d", key):
            found |= {str(d) for d in range(int(key[0]), int(key[2]) + 1)}
        else:
            found |= {key} if key == "/" else set(key.split("/"))
    return found


async def test_help_shows_the_paste_placeholder_as_the_readme_does_and_every_card_browser_key(
    make_app,
) -> None:
    from widgets.cards.browser import CardBrowser

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    [placeholder] = re.findall(r"`(\[pasted [^`]*\])`", readme)
    app = make_app()
    async with app.run_test(size=(160, 80)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/help")
        await wait_until(pilot, lambda: any("/remember TEXT" in t for t in chat_texts(app)))
        block = app.chat.blocks[-1]
        await wait_until(pilot, lambda: block.content_region.height > 20)
        await pilot.pause()
        lines = _block_lines(app, block)
        assert f"collapsed to {placeholder}, sent whole" in " ".join(lines)  # drawn, not taken for markup
        indent = next(line.index("list the commands") for line in lines if line.startswith("/help"))
        first = next(i for i, line in enumerate(lines) if line.startswith("in /memory"))
        last = next(i for i, line in enumerate(lines) if line.startswith("in the editor"))
        shown = _help_keys([line[indent:] for line in lines[first:last]])
        names = {"slash": "/", "escape": "esc"}
        bound = {names.get(key, key) for binding in CardBrowser.BINDINGS for key in binding.key.split(",")}  # type: ignore[union-attr]
        assert bound - shown == set(), f"browser keys /help does not name: {sorted(bound - shown)}"


# -- the focus comes back to the prompt --------------------------------------------------------------


async def _type(pilot, text: str) -> None:
    await pilot.press(*[("space" if c == " " else c) for c in text])


async def test_after_the_card_browser_opened_from_the_panel_closes_typing_reaches_the_prompt(
    make_app,
) -> None:
    from widgets.cards.browser import CardBrowser

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _type(pilot, "a")  # Tab on an empty prompt turns thinking on: with a word it moves on
        await pilot.press("tab")
        await wait_until(
            pilot,
            lambda: app.focused is not None and app.panel in app.focused.ancestors_with_self,
            what="the panel focused",
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser), what="the card browser")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="back to the chat")
        await wait_until(pilot, lambda: app.focused is app.prompt, what="the prompt focused")
        await _type(pilot, " hi there")
        await wait_until(pilot, lambda: app.prompt.text == "a hi there", what="the text in the prompt")


async def test_text_typed_or_pasted_after_tabbing_away_from_the_prompt_reaches_the_prompt(make_app) -> None:
    from textual import events

    from widgets.cards.browser import CardBrowser

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _type(pilot, "a")  # Tab on an empty prompt turns thinking on: with a word it moves on
        await pilot.press("tab", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser), what="the card browser")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="back to the chat")
        landed = []
        for tabs in (1, 2):  # one Tab: the panel's cards; two: on round to the chat pane
            await pilot.press(*["tab"] * tabs)
            await pilot.pause()
            landed.append(app.focused)
            assert app.focused is not app.prompt
            await _type(pilot, "ab")
            await wait_until(pilot, lambda: app.prompt.text.endswith("ab"), what="the keys in the prompt")
            assert app.focused is app.prompt
        assert app.prompt.text == "aabab" and landed[0] is not landed[1]
        await pilot.press("tab")
        await wait_until(pilot, lambda: app.focused is not app.prompt)
        app.post_message(events.Paste(" pasted"))
        await wait_until(pilot, lambda: app.prompt.text == "aabab pasted", what="the paste in the prompt")
        await pilot.pause()
        assert app.prompt.text == "aabab pasted"  # once, not twice


async def test_model_typed_after_tabbing_to_the_jobs_line_switches_the_model_and_does_not_open_pending(
    make_app, server: FakeAnthropic
) -> None:
    from widgets.pending.screen import PendingScreen

    server.script(MODEL, text("Noted."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Zeta fact", "Zeta body."))))
    app = make_app(server, memory_mode="review")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "remember zeta")
        await wait_until(
            pilot,
            lambda: any(j.line.startswith("held") for j in app.panel.state.jobs),
            what="the held job in the panel",
        )
        jobs_line = app.panel._jobs
        await wait_until(
            pilot, lambda: jobs_line.display and jobs_line.region.height > 0, what="the jobs line"
        )
        # Tab to the cards, Enter (the browser), Esc, then two Tabs: the jobs line has the focus
        # (from a prompt with a draft: Tab on an empty one turns thinking on).
        app.prompt.text = "draft"
        await pilot.press("tab", "enter")
        await wait_until(pilot, lambda: app.screen is not app.screen_stack[0], what="the card browser")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.focused is app.prompt, what="the prompt focused")
        await pilot.press("tab", "tab")
        await wait_until(pilot, lambda: app.focused is jobs_line, what="the jobs line focused")
        app.prompt.text = ""  # the draft goes: what is typed on the jobs line is the whole prompt
        await _type(pilot, "/model claude-other-1")
        await wait_until(pilot, lambda: app.prompt.text == "/model claude-other-1")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: app.bridge.settings.model == "claude-other-1", what="the model switched"
        )
        await pilot.pause()
        assert not isinstance(app.screen, PendingScreen) and app.screen is app.screen_stack[0]


@pytest.mark.parametrize("opener", ["/memory", "/pending", "/remember a note", "a modal"])
async def test_whichever_way_a_screen_was_opened_its_closing_gives_the_focus_to_the_prompt(
    make_app, opener
) -> None:
    from widgets.dialogs.confirm import ConfirmModal

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        if opener.startswith("/"):
            app.prompt.text = opener
            assert app.prompt.submit()
        else:
            app.push_screen(ConfirmModal("Sure?", "a question from the app"))
        await wait_until(pilot, lambda: app.screen is not app.screen_stack[0], what="the screen")
        app.screen_stack[0].set_focus(app.chat)  # the focus was elsewhere below it
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="back to the chat")
        await wait_until(pilot, lambda: app.focused is app.prompt, what="the prompt focused")


def test_the_names_a_custom_command_may_not_take_are_the_apps_own_commands() -> None:
    from app.agent.extensions.extensions import APP_COMMANDS
    from app.tui.chat.command_table import COMMANDS

    assert sorted(APP_COMMANDS) == sorted(c.name for c in COMMANDS)
