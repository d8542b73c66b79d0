"""The rewind service (app/services/rewind.py) over a real session log, its checkpoints (the real
file tools writing through the Recorder) and real memory stores: the list with +/- lines, the
preview, the rewind and the Runner rebuilt, and the undo of exactly the rewound turns' batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from app.agent.conversation.blocks import Message, TextBlock
from app.agent.conversation.session import Session
from app.agent.conversation.session_store import SessionStore
from app.agent.tools import ToolContext, run_tool
from app.agent.undo.checkpoints import CheckpointStore, Recorder
from app.services.cards import CardsService
from app.services.rewind import FileStat, RewindProblem, RewindService, span, typed_prompt
from memory.model import Operation
from memory.store.stores import MemoryStores

ORIGINAL = b"alpha\nbeta\ngamma\n"


class FakeRunner:
    running = False


class Runtime:
    """The runtime's parts the service reads: a real session, checkpoints and stores; reopening
    the session is what ``Runtime.open_session(resume=…)`` does to it (closed, read again)."""

    def __init__(self, ws: Path) -> None:
        self.workspace = ws
        self.sessions = SessionStore()
        self.session: Session | None = self.sessions.create(ws)
        self.checkpoints = CheckpointStore()
        self.stores = MemoryStores(ws)
        self.runner: Any = FakeRunner()
        self.reopened: list[str] = []
        assert self.session is not None
        cp = self.checkpoints.session(self.session.id, ws)
        self.ctx = ToolContext(
            workspace=ws, checkpoints=Recorder(cp, lambda: self.session.turns if self.session else 0)
        )

    async def open_session(self, *, resume: str | None = None) -> str | None:
        assert self.session is not None and resume == self.session.id
        self.session.close()
        self.session = self.sessions.open(resume)
        self.reopened.append(resume)
        return f"resumed session {resume}"

    def turn(
        self,
        prompt: str,
        *calls: tuple[str, dict[str, Any]],
        answer: str = "done",
        job: str | None = None,
        bash: bool = False,
    ) -> None:
        session = self.session
        assert session is not None
        session.begin_turn(prompt)
        session.append(Message(role="user", content=prompt))
        for name, inp in calls:
            result = asyncio.run(run_tool(name, inp, self.ctx))
            assert not result.is_error, result.content
        if bash:
            self.ctx.checkpoints.ran_bash()  # type: ignore[union-attr]
        session.append(Message(role="assistant", content=answer))
        session.end_turn("completed", **({"job": job} if job else {}))


@pytest.fixture
def rt(ws: Path) -> Runtime:
    (ws / "a.txt").write_bytes(ORIGINAL)
    return Runtime(ws)


def _service(rt: Runtime) -> RewindService:
    return RewindService(rt, CardsService(rt.stores, None))  # type: ignore[arg-type]


def _edits(rt: Runtime) -> None:
    rt.turn(
        'rework a.txt\nand add a file\n\n<attached-file path="README.md">\n# demo\n</attached-file>',
        ("edit_file", {"path": "a.txt", "old_string": "beta", "new_string": "BETA"}),
        ("write_file", {"path": "a.txt", "content": "alpha\nBETA\ngamma\ndelta\n"}),
        ("write_file", {"path": "made/new.txt", "content": "one\ntwo\n"}),
    )
    rt.turn("run the tests", bash=True)


def test_the_list_is_newest_first_with_each_files_lines_and_the_bash_mark(rt: Runtime) -> None:
    _edits(rt)
    rows = asyncio.run(_service(rt).turns())
    assert [r.turn for r in rows] == [2, 1]
    assert rows[0].bash and rows[0].files == () and rows[0].text == "run the tests"
    assert rows[1].files == (FileStat("a.txt", 2, 1), FileStat("made/new.txt", 2, 0)) and not rows[1].bash
    assert rows[1].text == "rework a.txt" and rows[1].in_conversation and not rows[1].rewound


def test_the_preview_says_what_a_rewind_does_and_keeps_the_whole_prompt_as_typed(rt: Runtime) -> None:
    _edits(rt)
    (rt.workspace / "a.txt").write_bytes(b"typed by hand\n")
    p = asyncio.run(_service(rt).preview(1))
    assert p.prompt == "rework a.txt\nand add a file"  # the attached file cut off
    assert [(f.path, f.action) for f in p.files] == [("a.txt", "restore"), ("made/new.txt", "delete")]
    [conflict] = p.conflicts
    assert conflict.path == "a.txt" and "+typed by hand" in conflict.diff
    assert p.rewound == (1, 2) and p.bash_turns == (2,) and p.batches == () and p.unapplied == ()
    assert (rt.workspace / "a.txt").read_bytes() == b"typed by hand\n"  # nothing changed


def test_a_conflict_is_refused_in_one_line_unless_forced_then_the_rewind_is_an_entry(rt: Runtime) -> None:
    _edits(rt)
    service = _service(rt)
    (rt.workspace / "a.txt").write_bytes(b"typed by hand\n")
    p = asyncio.run(service.preview(1))
    with pytest.raises(RewindProblem) as refused:
        asyncio.run(service.rewind(p, files=True, conversation=False))
    assert "\n" not in str(refused.value) and "a.txt changed since" in str(refused.value)
    assert (rt.workspace / "made" / "new.txt").exists()
    done = asyncio.run(service.rewind(p, files=True, conversation=False, force=True))
    assert (rt.workspace / "a.txt").read_bytes() == ORIGINAL and not (rt.workspace / "made").joinpath(
        "new.txt"
    ).exists()
    assert done.entry == 3 and "turn 2 ran bash: files it changed are not restored" in done.lines
    assert done.lines[-1] == "recorded as turn 3: /rewind of it undoes this rewind"
    [entry, *_] = asyncio.run(service.turns())
    assert entry.kind == "rewind" and entry.text == "[rewind to before turn 1: files]"


def test_a_conflict_that_came_after_the_preview_is_refused_even_forced(rt: Runtime) -> None:
    _edits(rt)
    service = _service(rt)
    p = asyncio.run(service.preview(1))
    (rt.workspace / "a.txt").write_bytes(b"typed after the preview\n")
    with pytest.raises(RewindProblem):
        asyncio.run(service.rewind(p, files=True, conversation=False, force=True))
    assert (rt.workspace / "a.txt").read_bytes() == b"typed after the preview\n"


def test_a_conversation_rewind_then_reopen_leaves_the_turns_out(rt: Runtime) -> None:
    rt.turn("alpha question", answer="alpha answer")
    rt.turn("bravo question", answer="bravo answer")
    service = _service(rt)
    p = asyncio.run(service.preview(2))
    done = asyncio.run(service.rewind(p, files=False, conversation=True))
    assert "conversation: back to before turn 2 (turn 2 left out of the next request)" in done.lines
    messages = asyncio.run(service.reopen())
    assert rt.reopened and [m.content for m in messages] == [
        [TextBlock(text="alpha question")],
        [TextBlock(text="alpha answer")],
    ]
    rows = asyncio.run(service.turns())
    assert [(r.turn, r.rewound) for r in rows] == [(3, False), (2, True), (1, False)]


def _job_batch(rt: Runtime, tmp: Path, job: str, title: str, *, took_over: tuple[str, ...] = ()) -> str:
    spooled = tmp / f"{job}.json"
    spooled.write_text("{}")
    op = Operation(action="create", level="user", type="user_preference", title=title, content=title)
    return rt.stores.apply(
        [(0, op)], source="memory-model", jobs=[spooled], kind="turn", took_over=took_over
    ).txid


def test_the_rewound_turns_batches_are_found_by_job_and_by_coalesced_job(rt: Runtime, tmp_path: Path) -> None:
    rt.turn("first", job="job-1")
    rt.turn("second", job="job-2")
    rt.turn("third", job="job-3")
    _job_batch(rt, tmp_path, "job-1", "One")
    tx3 = _job_batch(rt, tmp_path, "job-3", "Three", took_over=("job-2",))
    p = asyncio.run(_service(rt).preview(2))
    assert [(b.txid, b.turn, b.undone, b.changes) for b in p.batches] == [(tx3, 2, False, 1)]
    assert p.undoable == (tx3,) and p.unapplied == ()


def test_undo_takes_exactly_those_batches_newest_first_and_refuses_when_another_came_after(
    rt: Runtime,
) -> None:
    service = _service(rt)
    a = rt.stores.create_card("user", "user_preference", "A", "a", "a").txid
    b = rt.stores.create_card("user", "user_preference", "B", "b", "b").txid
    c = rt.stores.create_card("user", "user_preference", "C", "c", "c").txid
    with pytest.raises(RewindProblem) as refused:
        asyncio.run(service.undo_batches((a, b)))
    assert f"batch {c} came after them" in str(refused.value)
    assert [e.undone_by for e in rt.stores.history()] == [None, None, None]
    assert asyncio.run(service.undo_batches((b, c))) == f"undid memory batches {c}, {b}"
    undone = {e.txid: e.undone_by for e in rt.stores.history() if e.kind != "undo"}
    assert undone[a] is None and undone[b] and undone[c]
    with pytest.raises(RewindProblem, match="undone already"):
        asyncio.run(service.undo_batches((b, c)))


def test_with_no_session_open_the_service_says_so(rt: Runtime) -> None:
    rt.session = None
    with pytest.raises(RewindProblem, match="no session is open"):
        asyncio.run(_service(rt).turns())


def test_the_prompt_as_typed_and_the_spans() -> None:
    assert typed_prompt('fix it\n\n<attached-file path="x">\nbody\n</attached-file>') == "fix it"
    assert typed_prompt("no attachment") == "no attachment"
    assert (span([3]), span([3, 4, 5]), span([1, 4])) == ("turn 3", "turns 3–5", "turns 1, 4")
