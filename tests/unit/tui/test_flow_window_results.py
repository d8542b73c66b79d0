"""A window returns its answer, typed, and the flow that opened it acts on that answer and
nothing else: no window's answer is read back from the App's state.

The flows run here with a stand-in for Textual's App whose ``push_screen_wait`` answers each
window from a script (as the person's keys would dismiss it), and a recorder for what they post.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, cast

import pytest
from textual.message import Message
from textual.screen import Screen

from app.services.cards import CardChange, CardText, EditBack, EditCopy
from app.services.rewind import FileAction, RewindDone, RewindPreview, TurnRow
from app.tui.flows.rewind_flow import RewindFlow
from app.tui.messages import ChatNote, PromptBack, SessionSwitched
from app.tui.screens.external import ExternalEdits
from widgets.cards.card_list import CardRow
from widgets.cards.edit_problem import EditProblemModal
from widgets.dialogs.confirm import ConfirmModal
from widgets.rewind.plan import RewindPlanScreen
from widgets.rewind.state import RewindChoice
from widgets.rewind.turns import RewindTurns


class ScriptedApp:
    """Textual's App as the flows use it: workers run as tasks, and each window pushed with
    ``push_screen_wait`` is answered by ``answers`` (by the window's class), in order."""

    def __init__(self, answers: dict[type[Screen[Any]], list[object]]) -> None:
        self.answers = answers
        self.asked: list[Screen[Any]] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.workers: list[Any] = []
        self.is_headless = True

    def run_worker(self, work: Callable[[], Coroutine[Any, Any, Any]], **_: object) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(work())
        self.tasks.append(task)
        return task

    async def push_screen_wait(self, screen: Screen[Any]) -> object:
        self.asked.append(screen)
        for kind, answers in self.answers.items():
            if isinstance(screen, kind):
                return answers.pop(0)
        raise AssertionError(f"no answer scripted for {type(screen).__name__}")

    async def settle(self) -> None:
        while pending := [t for t in self.tasks if not t.done()]:
            await asyncio.gather(*pending)


# -- /rewind ---------------------------------------------------------------------------------------

ROW = TurnRow(
    turn=2, time="2026-01-05T10:00:00Z", text="rework a.txt", kind="turn", files=(), bash=False,
    in_conversation=True, rewound=False, status="completed",
)  # fmt: skip
HISTORY: list[Any] = [object()]  # the conversation as the session log now says it
CONFLICT = FileAction("a.txt", "restore", "changed since the agent wrote it", "-x\n+y\n")


def _preview(files: tuple[FileAction, ...]) -> RewindPreview:
    return RewindPreview(
        to_turn=2, kind="turn", text="rework a.txt", prompt="rework a.txt\nand add a file", files=files,
        rewound=(2,), bash_turns=(), batches=(), unapplied=(), plan=cast(Any, None),
    )  # fmt: skip


class FakeRewind:
    def __init__(self, preview: RewindPreview) -> None:
        self._preview = preview
        self.rewinds: list[dict[str, bool]] = []

    async def turns(self) -> list[TurnRow]:
        return [ROW]

    async def preview(self, turn: int) -> RewindPreview:
        assert turn == 2
        return self._preview

    async def rewind(
        self, preview: RewindPreview, *, files: bool, conversation: bool, force: bool
    ) -> RewindDone:
        self.rewinds.append({"files": files, "conversation": conversation, "force": force})
        restored = ("a.txt",) if files else ()
        lines = ("rewound to before turn 2",)
        return RewindDone(entry=3, restored=restored, deleted=(), conversation=conversation, lines=lines)

    async def reopen(self) -> list[Any]:
        return HISTORY


def _rewind(app: ScriptedApp, service: FakeRewind, posted: list[Message], notes: list[str]) -> RewindFlow:
    services = type("Services", (), {"rewind": service})()
    return RewindFlow(
        cast(Any, app),
        post=posted.append,
        services=lambda: cast(Any, services),
        turn_running=lambda: False,
        switching=asyncio.Lock(),
        start_notes=lambda: notes.append("start notes again"),
        memory_changed=lambda: None,
    )


def _run_rewind(answers: dict[type[Screen[Any]], list[object]], files: tuple[FileAction, ...]) -> Any:
    app, service = ScriptedApp(answers), FakeRewind(_preview(files))
    posted: list[Message] = []
    notes: list[str] = []

    async def go() -> None:
        _rewind(app, service, posted, notes).open()
        await app.settle()

    asyncio.run(go())
    return app, service, posted, notes


def test_the_plan_windows_choice_is_what_is_rewound_and_a_yes_to_the_conflict_forces_it() -> None:
    app, service, posted, notes = _run_rewind(
        {
            RewindTurns: [2],
            RewindPlanScreen: [RewindChoice(files=True, conversation=True)],
            ConfirmModal: [True],
        },
        (CONFLICT,),
    )
    assert [type(s) for s in app.asked] == [RewindTurns, type(app.asked[1]), ConfirmModal]
    assert service.rewinds == [{"files": True, "conversation": True, "force": True}]
    switched = [m for m in posted if isinstance(m, SessionSwitched)]
    assert len(switched) == 1 and switched[0].messages is HISTORY
    assert [m.text for m in posted if isinstance(m, PromptBack)] == ["rework a.txt\nand add a file"]
    assert [m.text for m in posted if isinstance(m, ChatNote)] == ["rewound to before turn 2"]
    assert notes == ["start notes again"]


def test_a_no_to_the_conflict_rewinds_nothing_and_says_which_files_were_kept() -> None:
    app, service, posted, _ = _run_rewind(
        {
            RewindTurns: [2],
            RewindPlanScreen: [RewindChoice(files=True, conversation=False)],
            ConfirmModal: [False],
        },
        (CONFLICT,),
    )
    assert isinstance(app.asked[-1], ConfirmModal) and service.rewinds == []
    assert [m.text for m in posted if isinstance(m, ChatNote)] == ["nothing was rewound: a.txt kept as it is"]


def test_the_conversation_alone_asks_nothing_about_files_and_leaves_them_alone() -> None:
    app, service, posted, _ = _run_rewind(
        {RewindTurns: [2], RewindPlanScreen: [RewindChoice(files=False, conversation=True)]}, (CONFLICT,)
    )
    assert not any(isinstance(s, ConfirmModal) for s in app.asked)
    assert service.rewinds == [{"files": False, "conversation": True, "force": False}]
    assert [m.text for m in posted if isinstance(m, PromptBack)] == ["rework a.txt\nand add a file"]


def test_back_from_the_plan_shows_the_list_again_and_esc_there_rewinds_nothing() -> None:
    app, service, posted, _ = _run_rewind({RewindTurns: [2, None], RewindPlanScreen: [None]}, ())
    assert [type(s).__name__ for s in app.asked] == ["RewindTurns", "_PlanScreen", "RewindTurns"]
    assert service.rewinds == [] and posted == []


# -- a card out in $EDITOR -------------------------------------------------------------------------


class FakeCards:
    """The card service's editor rounds: each finished copy comes back as ``backs`` says."""

    def __init__(self, folder: Path, backs: list[EditBack]) -> None:
        self.copy = EditCopy("project", "tabs.md", folder, folder / "tabs.md", "0" * 64, b"")
        self.backs = backs
        self.finished = 0
        self.discarded = 0

    async def start_external_edit(self, level: str, filename: str) -> EditCopy:
        return self.copy

    async def finish_external_edit(self, edit: EditCopy, *, refuse: str | None) -> EditBack:
        assert refuse is None
        self.finished += 1
        return self.backs.pop(0)

    async def discard_external_edit(self, edit: EditCopy) -> None:
        self.discarded += 1


class FakeMemory:
    """The memory screens' controller as the editor rounds use it."""

    def __init__(self, app: ScriptedApp, cards: FakeCards) -> None:
        self.app = app
        self.services = type("Services", (), {"cards": cards})()
        self.said: list[str] = []
        self.flashed: list[str] = []
        self.changed: list[tuple[str, str] | None] = []

    def run(self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any, group: str, **_: object) -> Any:
        return self.app.run_worker(lambda: work(*args))

    def flash(self, text: object, *, error: bool = False, where: str = "cards") -> None:
        self.flashed.append(str(text))

    def say(self, text: str) -> None:
        self.said.append(text)

    def after_change(self, select: tuple[str, str] | None = None) -> None:
        self.changed.append(select)


ROW_TABS = CardRow(
    level="project", filename="tabs.md", type="project_knowledge", title="Tabs", summary="", updated="",
    source="manual", body="Use tabs.", sha256="0" * 64,
)  # fmt: skip
INVALID = EditBack(status="invalid", problem="title: must not be empty", text="---\ntitle:\n---\n")
APPLIED = EditBack(
    status="applied",
    fields=CardText("project", "project_knowledge", "Tabs", "", "Use tabs."),
    result=CardChange(status="applied", level="project", filename="tabs.md"),
)


def _run_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[object], backs: list[EditBack]
) -> tuple[ScriptedApp, FakeCards, FakeMemory]:
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c pass")  # an editor that exits at once, 0
    app, cards = ScriptedApp({EditProblemModal: answers}), FakeCards(tmp_path, backs)
    memory = FakeMemory(app, cards)
    edits = ExternalEdits(cast(Any, memory))

    async def go() -> None:
        edits.open(ROW_TABS)
        await app.settle()

    asyncio.run(go())
    assert not edits.busy
    return app, cards, memory


def test_edit_again_in_the_problem_window_opens_the_editor_again_on_the_same_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, cards, memory = _run_editor(tmp_path, monkeypatch, ["edit"], [INVALID, APPLIED])
    assert [type(s) for s in app.asked] == [EditProblemModal]
    assert cards.finished == 2  # the second round is the answer's
    editor = Path(sys.executable).name
    assert memory.said == [f"saved project card tabs.md from {editor} (u undoes)"]
    assert memory.changed == [("project", "tabs.md")]


def test_discard_in_the_problem_window_ends_the_edit_and_drops_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, cards, memory = _run_editor(tmp_path, monkeypatch, ["discard"], [INVALID])
    assert [type(s) for s in app.asked] == [EditProblemModal]
    assert cards.finished == 1
    assert memory.said == ["discarded your edit: project/tabs.md is unchanged"]
    assert cards.discarded == 1 and memory.changed == []
