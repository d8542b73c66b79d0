"""The rewind view's presenters: the rewind service's data (app/services/rewind.py) as the
widgets' states (widgets/rewind/state.py), and the lines the chat says. Plain functions."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memory.text.lines import one_line
from widgets.rewind.state import FileLine, PlanFile, PlanState, TurnItem

if TYPE_CHECKING:
    from app.services.rewind import RewindPreview, TurnRow

__all__ = ["conflict_question", "memory_line", "plan_state", "turn_items", "when"]

_QUIET_STATUS = frozenset({"completed", "rewind", ""})


def when(rfc3339: str, today: datetime | None = None) -> str:
    """A turn's local time: ``16:09`` today, ``2026-12-05 16:09`` before."""
    try:
        t = datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return "--:--"
    now = today or datetime.now().astimezone()
    return t.strftime("%H:%M") if t.date() == now.date() else t.strftime("%Y-%m-%d %H:%M")


def turn_items(rows: list[TurnRow], today: datetime | None = None) -> list[TurnItem]:
    """The list's items, in the rows' order (newest first)."""
    out = []
    for r in rows:
        notes = ["rewound: not in the conversation"] if r.rewound else []
        if r.status not in _QUIET_STATUS:
            notes.append(r.status)
        out.append(
            TurnItem(
                turn=r.turn,
                when=when(r.time, today),
                text=r.text,
                kind=r.kind,
                files=tuple(FileLine(f.path, f.added, f.removed) for f in r.files),
                bash=r.bash,
                note=", ".join(notes),
            )
        )
    return out


def _span(turns: tuple[int, ...]) -> str:
    if len(turns) == 1:
        return f"turn {turns[0]}"
    return f"turns {turns[0]}–{turns[-1]}"


def memory_line(p: RewindPreview) -> tuple[str, bool]:
    """The line about memory (never rewound) and whether the memory key can undo the batches."""
    live = p.undoable
    undone = [b.txid for b in p.batches if b.undone]
    parts = []
    if live:
        which = ", ".join(f"{b.txid} (turn {b.turn})" for b in p.batches if b.txid in live)
        parts.append(
            f"memory is not rewound: {_span(p.rewound)} produced memory batch"
            f"{'es' if len(live) != 1 else ''} {which}; m undoes {'them' if len(live) != 1 else 'it'}"
        )
    else:
        parts.append(f"memory is not rewound: {_span(p.rewound)} left no memory batch to undo")
    if undone:
        parts.append(f"undone already: {', '.join(undone)}")
    if p.unapplied:
        parts.append(f"the memory job of {_span(p.unapplied)} is not applied yet")
    return one_line("; ".join(parts), 600), bool(live)


def plan_state(p: RewindPreview) -> PlanState:
    """The plan window's state for a preview."""
    if p.kind == "rewind":
        conversation = f"back to before rewind entry {p.to_turn} (as that rewind found it)"
    else:
        later = p.rewound[1:]
        also = f" and {_span(later)}" if later else ""
        conversation = (
            f"turn {p.to_turn}{also} leave{'s' if not later else ''} the conversation; "
            f"turn {p.to_turn}'s prompt goes back into the input"
        )
    line, can_undo = memory_line(p)
    return PlanState(
        to_turn=p.to_turn,
        text=p.text,
        files=tuple(PlanFile(f.path, f.action, f.conflict, f.diff) for f in p.files),
        bash_turns=p.bash_turns,
        conversation=conversation,
        memory=line,
        memory_undo=can_undo,
    )


def conflict_question(p: RewindPreview) -> tuple[str, str, str]:
    """The conflict window's title, summary and body (the diffs of the files changed since)."""
    names = [f.path for f in p.conflicts]
    shown = ", ".join(one_line(n, 120) for n in names[:5]) + (
        f" and {len(names) - 5} more" if len(names) > 5 else ""
    )
    n = len(names)
    title = f"Overwrite {n} file{'s' if n != 1 else ''} changed since?"
    summary = (
        f"{shown} changed since the agent last wrote {'them' if n != 1 else 'it'} (a hand edit, a git "
        f"checkout?). y puts {'them' if n != 1 else 'it'} back as before turn {p.to_turn} too; the rewind "
        "is recorded, so /rewind of it brings these changes back. n rewinds nothing."
    )
    body = "\n".join(f.diff.rstrip("\n") for f in p.conflicts)
    return title, summary, body
