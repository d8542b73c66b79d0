"""The chat is one screen: only app/tui/chat draws in the chat pane, the chat's messages reach that
screen whoever posts them (in the order they were posted), a turn's end bubbles on to the App, and
the App composes and routes without describing itself to its flows."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from app.tui.chat.chat_screen import ChatScreen
from app.tui.messages import ChatNote, TurnDone
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until

ROOT = Path(__file__).resolve().parents[2]
DRAWS = frozenset({"add_user", "add_note", "add_error", "add_tool", "start_answer", "clear_blocks"})


def _drawing_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DRAWS
    ]


def test_only_the_chat_screen_and_its_parts_draw_in_the_chat_pane() -> None:
    chat = ROOT / "app" / "tui" / "chat"
    outside = [
        call
        for path in sorted((ROOT / "app").rglob("*.py"))
        if chat not in path.parents
        for call in _drawing_calls(path)
    ]
    assert outside == []


def test_the_app_composes_and_routes_in_at_most_250_lines_and_no_module_describes_it() -> None:
    app_module = ROOT / "app" / "tui" / "app.py"
    assert len(app_module.read_text(encoding="utf-8").splitlines()) <= 250
    assert not (ROOT / "app" / "tui" / "host.py").exists()
    for path in sorted((ROOT / "app" / "tui").rglob("*.py")):
        if path == app_module:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "app.tui.app" not in imported or path.name == "run_app.py", path


async def test_notes_posted_to_the_app_from_a_thread_reach_the_chat_screen_in_order(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert isinstance(app.screen, ChatScreen) and app.screen is app.chat_screen
        lines = [f"note {i}" for i in range(20)]

        def post_all() -> None:  # a worker's thread: half through the App, half to the screen itself
            for i, line in enumerate(lines):
                (app if i % 2 else app.chat_screen).post_message(ChatNote(line))

        thread = threading.Thread(target=post_all)
        thread.start()
        thread.join()
        await wait_until(pilot, lambda: lines[-1] in chat_texts(app), what="the last note")
        assert [t for t in chat_texts(app) if t.startswith("note ")] == lines


async def test_a_turns_end_is_drawn_by_the_chat_screen_then_bubbles_on_to_the_app(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("An answer."))
    app = make_app(server, memory_mode="off")
    # The message hook sees each dispatch, the chat screen's and then the App's; ``shown`` is set
    # by the chat screen's handler.
    shown: list[bool] = []

    def hook(message: object) -> None:
        if isinstance(message, TurnDone):
            shown.append(message.shown)

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await wait_ready(pilot)
        await send(pilot, "a question")
        await wait_until(pilot, lambda: len(shown) == 2, what="the turn's end, drawn and passed on")
        assert app.prompt.disabled_reason is None
    assert shown == [False, True]
