"""Snapshot tests (pytest-textual-snapshot): what the full-screen app looks like, frame by frame.

The real App runs against the local fake Messages API (the real SDK) or with no credentials; small
hosts (tests/tui/snapshot_apps/hosts.py) show one widget in a state that is awkward to reach
through a conversation. Every frame is deterministic: a fixed terminal size, the prompt's cursor
not blinking, the workspace shown under a fixed name (its tmp path differs per run), and every
wait is on a condition of the app, with a deadline, never on time.

Regenerate after a deliberate visual change with
``.venv/bin/python -m pytest tests/tui/test_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.agent.config.settings import load_settings
from app.tui.app import PseudoClaudeApp
from memory.constants import Level, NoteType
from memory.store.stores import MemoryStores
from tests.support.clitools import create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.memtools import create, write_note
from tests.tui.conftest import MEMORY_MODEL, MODEL, build_app, chat_texts, send, wait_ready, wait_until
from tests.tui.snapshot_apps.hosts import (
    ANSWER,
    BASH_REQUEST,
    PANEL_STATE,
    QUESTION,
    ChatHost,
    PanelHost,
    PermissionHost,
    ToolHost,
)
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.status import StatusInfo, StatusLine
from widgets.dialogs.permission import PermissionModal
from widgets.dialogs.trust_modal import TrustModal

pytestmark = pytest.mark.timeout(90)

SnapCompare = Callable[..., bool]
WIDE = (120, 34)
DEFAULT = (100, 30)
SMALL = (80, 24)
SHOWN_WORKSPACE = "~/projects/demo"
BUILD_ANSWER = """\
The README says builds go through `make`. To cut a release:

```sh
make test          # the whole suite must pass
make release       # tags vX.Y.Z and uploads the build
```

I'll remember that releases go through `make release`.
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "demo"
    (w / ".git").mkdir(parents=True)
    (w / "README.md").write_text("# demo\nThe build command is `make build`.\n")
    (w / "app").mkdir()
    (w / "app" / "settings.py").write_text(
        "class Settings:\n    model = 'claude-sonnet-5-5'\n    timeout = 120.0\n    max_tokens = 16000\n"
    )
    return Path(os.path.realpath(w))


@pytest.fixture
def stores(ws: Path) -> MemoryStores:
    return MemoryStores(ws, Path(os.environ["PSEUDOCLAUDE_HOME"]))


@pytest.fixture
def make_app(ws: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., PseudoClaudeApp]:
    """The real App on ``ws`` (with ``server``: credentials pointing at it; without: none)."""
    original = StatusLine.show

    def show_masked(self: StatusLine, info: StatusInfo) -> None:
        # The workspace's tmp path changes per run: the status line and the trust modal show a fixed one.
        original(self, dataclasses.replace(info, workspace=info.workspace.replace(str(ws), SHOWN_WORKSPACE)))

    monkeypatch.setattr(StatusLine, "show", show_masked)
    trust_init = TrustModal.__init__

    def trust_masked(self: TrustModal, cards: Any, *, where: str = "") -> None:
        trust_init(self, cards, where=where.replace(str(ws), SHOWN_WORKSPACE))

    monkeypatch.setattr(TrustModal, "__init__", trust_masked)
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0")

    def factory(server: FakeAnthropic | None = None, **flags: Any) -> PseudoClaudeApp:
        if server is not None:
            for key, value in server.env().items():
                monkeypatch.setenv(key, value)
        return build_app(load_settings(flags), ws)

    return factory


def app_of(pilot: Pilot[Any]) -> PseudoClaudeApp:
    app = pilot.app
    assert isinstance(app, PseudoClaudeApp)
    return app


async def settle(pilot: Pilot[Any]) -> None:
    """A still frame: no blinking cursor, no memory job or turn still moving."""
    app = app_of(pilot)
    app.prompt.cursor_blink = False
    # The panel and the status line's pending count come from the same refresh.
    await wait_until(pilot, lambda: not app.panel.state.jobs, what="memory jobs to finish")
    await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the prompt to be free")


def answers_rendered(app: PseudoClaudeApp) -> bool:
    """Every answer in the chat is complete and on screen (its Markdown holds all it received)."""
    answers = [b for b in app.chat.blocks if isinstance(b, AnswerBlock)]
    return bool(answers) and all(b.finished and b.source == b.text and not b.lock.is_locked for b in answers)


def panel_titles(app: PseudoClaudeApp) -> set[str]:
    state = app.panel.state
    return {c.title for c in (*state.project, *state.user)}


def seed_cards(stores: MemoryStores, project: int, user: int, *, long: bool = False) -> None:
    """Cards created through the stores (so the project store is ours, hence trusted)."""
    summary = "A summary of what this card says, written for the index. " * (4 if long else 1)
    ops = [
        create("project", f"Project fact {n:03d}", f"Body {n}.", summary=summary[:200].strip())
        for n in range(project)
    ]
    ops += [
        create(
            "user",
            f"User preference {n:02d}",
            f"Body {n}.",
            type_="user_preference",
            summary=summary[:200].strip(),
        )
        for n in range(user)
    ]
    result = stores.apply(list(enumerate(ops)), source="snapshot seed")
    assert not result.rejected, result.rejected


def seed_few(stores: MemoryStores) -> None:
    ops = [
        create(
            "project",
            "Build with make",
            "Run `make build`.",
            summary="make build builds; make test runs the suite",
        ),
        create(
            "project",
            "Config is TOML",
            "Settings live in config.toml.",
            summary="settings are read from config.toml",
        ),
        create(
            "user",
            "Prefers short answers",
            "Keep answers short.",
            type_="user_preference",
            summary="answer briefly, code first",
        ),
    ]
    assert not stores.apply(list(enumerate(ops)), source="snapshot seed").rejected


def seed_few_user(stores: MemoryStores) -> None:
    op = create(
        "user",
        "Prefers short answers",
        "Keep answers short.",
        type_="user_preference",
        summary="answer briefly, code first",
    )
    assert not stores.apply([(0, op)], source="snapshot seed").rejected


def run(*steps: Callable[[Pilot[Any]], Awaitable[None]]) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        for step in steps:
            await step(pilot)

    return run_before


# -- the real App ------------------------------------------------------------------------------------


def test_first_start_without_credentials_says_how_to_configure(
    snap_compare: SnapCompare, make_app: Any
) -> None:
    app = make_app()

    async def configure_note_shown(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        await wait_until(
            pilot,
            lambda: any("ANTHROPIC_API_KEY" in t for t in chat_texts(app)),
            what="the configuration note",
        )

    assert snap_compare(app, terminal_size=DEFAULT, run_before=run(configure_note_shown, settle))


def streamed_answer_app(make_app: Any, server: FakeAnthropic, stores: MemoryStores) -> tuple[Any, Any]:
    """The app of a streamed answer with a code block whose turn creates a card, and the
    conversation that ends with both on the screen."""
    seed_few(stores)
    server.script(MODEL, text(ANSWER, chunk_size=5))
    server.script(
        MEMORY_MODEL,
        text(
            ops_answer(
                create_op(
                    "Config via tomllib",
                    "Use tomllib (3.11+).",
                    summary="config.toml is read with the stdlib tomllib",
                )
            )
        ),
    )
    app = make_app(server)

    async def converse(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        await send(pilot, QUESTION)
        await wait_until(pilot, lambda: answers_rendered(app), what="the answer on screen")
        await wait_until(
            pilot, lambda: "Config via tomllib" in panel_titles(app), what="the new card in the panel"
        )

    return app, converse


def test_streamed_answer_with_code_block_and_the_card_it_created(
    snap_compare: SnapCompare, make_app: Any, server: FakeAnthropic, stores: MemoryStores
) -> None:
    app, converse = streamed_answer_app(make_app, server, stores)
    assert snap_compare(app, terminal_size=WIDE, run_before=run(converse, settle))


def test_tool_call_then_answer_in_the_app_the_readme_screenshot(
    snap_compare: SnapCompare, make_app: Any, server: FakeAnthropic, stores: MemoryStores
) -> None:
    """The README's screenshot (assets/screenshot.svg is a copy of this snapshot)."""
    seed_few(stores)
    server.script(
        MODEL,
        tool_use("read_file", {"path": "README.md"}, text_before="Let me check the README first."),
        text(BUILD_ANSWER, chunk_size=6),
    )
    server.script(
        MEMORY_MODEL,
        text(
            ops_answer(
                create_op(
                    "Release with make",
                    "Run `make release`.",
                    summary="make release tags and uploads a build",
                )
            )
        ),
    )
    app = make_app(server)

    async def converse(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        await send(pilot, "How do I cut a release?")
        await wait_until(
            pilot,
            lambda: (
                len(server.requests_for(MODEL)) == 2
                and answers_rendered(app)
                and "make release" in "".join(chat_texts(app))
            ),
            what="the answer on screen",
        )
        await wait_until(
            pilot, lambda: "Release with make" in panel_titles(app), what="the new card in the panel"
        )

    assert snap_compare(app, terminal_size=WIDE, run_before=run(converse, settle))


def test_permission_modal_shows_the_edit_as_a_diff(
    snap_compare: SnapCompare, make_app: Any, server: FakeAnthropic
) -> None:
    server.script(
        MODEL,
        tool_use(
            "edit_file",
            {
                "path": "app/settings.py",
                "old_string": "    timeout = 120.0",
                "new_string": "    bash_timeout = 120.0",
            },
            text_before="I'll rename the setting.",
        ),
    )
    server.script(MEMORY_MODEL, text("[]"))
    app = make_app(server)

    async def asked(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        await send(pilot, "Rename timeout to bash_timeout in app/settings.py")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission modal")
        await wait_until(pilot, lambda: answers_rendered(app), what="the text before the call")
        app.prompt.cursor_blink = False

    assert snap_compare(app, terminal_size=DEFAULT, run_before=asked)


def test_trust_modal_lists_the_cards_of_a_cloned_project_store(
    snap_compare: SnapCompare, make_app: Any, server: FakeAnthropic, stores: MemoryStores
) -> None:
    # Written by hand, as a `git clone` would bring them: not created by our code, so untrusted.
    write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_deploy.md",
        "Deploy with make release",
        "Releases are cut by `make release` from main.",
        summary="releases: make release from main",
    )
    write_note(
        stores,
        Level.PROJECT,
        "correction_feedback_no_force_push.md",
        "Never force-push main",
        "Never force-push.",
        type_=NoteType.CORRECTION_FEEDBACK,
        summary="main is protected; open a PR",
    )
    stores.rebuild_indexes()
    assert not stores.project_trusted
    seed_few_user(stores)
    app = make_app(server)

    async def asked(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, TrustModal) and app.screen.cards is not None,
            what="the trust modal's cards",
        )
        app.prompt.cursor_blink = False

    assert snap_compare(app, terminal_size=DEFAULT, run_before=asked)


def test_side_panel_with_both_levels_and_a_cut_index(
    snap_compare: SnapCompare, make_app: Any, stores: MemoryStores
) -> None:
    seed_cards(stores, project=150, user=3, long=True)
    app = make_app()

    async def cut_shown(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.panel.state.cut_note is not None, what="the cut note")
        # The cut note ends the card list: scroll the panel to it (the user section is just above).
        app.panel.query_one("VerticalScroll").scroll_end(animate=False, immediate=True)

    assert snap_compare(app, terminal_size=WIDE, run_before=run(cut_shown, settle))


def test_80x24_terminal_hides_the_panel_and_keeps_chat_and_prompt(
    snap_compare: SnapCompare, make_app: Any, server: FakeAnthropic, stores: MemoryStores
) -> None:
    seed_few(stores)
    server.script(MODEL, text(ANSWER, chunk_size=5))
    server.script(MEMORY_MODEL, text("[]"))
    app = make_app(server)

    async def converse(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        await send(pilot, QUESTION)
        await wait_until(pilot, lambda: answers_rendered(app), what="the answer on screen")
        await wait_until(
            pilot, lambda: len(server.requests_for(MEMORY_MODEL)) == 1, what="the memory request"
        )

    assert snap_compare(app, terminal_size=SMALL, run_before=run(converse, settle))


def test_80x24_terminal_with_the_panel_toggled_by_f2(
    snap_compare: SnapCompare, make_app: Any, stores: MemoryStores
) -> None:
    seed_few(stores)
    app = make_app()

    async def toggled(pilot: Pilot[Any]) -> None:
        await wait_ready(pilot)
        assert not app.panel.display
        await pilot.press("f2")
        await wait_until(pilot, lambda: app.panel.display and app.panel.state.project, what="the panel")

    assert snap_compare(app, terminal_size=SMALL, run_before=run(toggled, settle))


# -- widgets in a host -------------------------------------------------------------------------------


def test_chat_pane_streamed_answer_with_code_block(snap_compare: SnapCompare) -> None:
    app = ChatHost()

    async def stream(pilot: Pilot[Any]) -> None:
        await app.stream_answer()

    assert snap_compare(app, terminal_size=DEFAULT, run_before=stream)


def test_tool_blocks_in_every_status_with_nested_sub_agent_calls(snap_compare: SnapCompare) -> None:
    app = ToolHost()

    async def fill(pilot: Pilot[Any]) -> None:
        await app.fill_tools()

    assert snap_compare(app, terminal_size=DEFAULT, run_before=fill)


def test_permission_modal_for_a_command_at_80x24(snap_compare: SnapCompare) -> None:
    app = PermissionHost(BASH_REQUEST)

    async def ask(pilot: Pilot[Any]) -> None:
        await app.ask()
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the modal")

    assert snap_compare(app, terminal_size=SMALL, run_before=ask)


def test_panel_with_new_cards_an_untrusted_note_and_job_lines(snap_compare: SnapCompare) -> None:
    assert snap_compare(PanelHost(PANEL_STATE), terminal_size=DEFAULT)
