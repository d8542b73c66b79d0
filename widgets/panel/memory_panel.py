"""The memory side panel: the merged index the next Run will see, and the memory jobs in flight.

Pure drawing: the App builds a :class:`PanelState` off the event loop (app/tui/panel/state.py reads
the stores) and hands it to :meth:`MemoryPanel.show`. Cards are laid out for the panel's width
at render time (a type tag, the title in bold on one line, the summary dim on at most two), so
a resize reflows them without asking the App for anything. Every string is stripped of
terminal control sequences here too: card text comes from a repository anyone could write.

However large a store, the panel stays one widget whose cost does not grow with it: each section
lists at most ``MAX_SECTION_CARDS`` cards and counts the rest, a card is laid out once per width
(a new state re-lays only the cards that changed), and only the rows on the screen are painted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len, chop_cells
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

from memory.constants import NoteType
from memory.text.lines import one_line

__all__ = ["MemoryPanel", "PanelCard", "PanelJob", "PanelState", "wrap_cells"]


@dataclass(frozen=True)
class PanelCard:
    type: str
    title: str
    summary: str
    filename: str
    new: bool = False
    untrusted: bool = False
    stale: str | None = None  # why the card is stale (a cited file changed, moved, went): one line
    author: str = ""  # who wrote it, when not this person (a card that came by git pull or merge)
    level: str = ""  # "project" | "user": set on the conflicted cards, listed apart from their level


@dataclass(frozen=True)
class PanelJob:
    job_id: str
    line: str
    failed: bool = False


@dataclass(frozen=True)
class PanelState:
    project: tuple[PanelCard, ...]
    user: tuple[PanelCard, ...]
    cut_note: str | None
    project_note: str | None
    jobs: tuple[PanelJob, ...]
    # Cards git left with conflict markers (both stores): in no index, a person resolves them.
    conflicted: tuple[PanelCard, ...] = ()
    sync_note: str | None = None  # the user store's last sync: one line
    sync_failed: bool = False


EMPTY_STATE = PanelState(project=(), user=(), cut_note=None, project_note=None, jobs=())

# Short tags keep the title on the card's first line at 32 columns.
TYPE_TAGS: dict[str, tuple[str, str]] = {
    NoteType.USER_PREFERENCE: ("pref", "magenta"),
    NoteType.CORRECTION_FEEDBACK: ("fix", "yellow"),
    NoteType.PROJECT_KNOWLEDGE: ("know", "cyan"),
    NoteType.REFERENCE_MATERIAL: ("ref", "green"),
}
SUMMARY_LINES = 2
UNTRUSTED_TAG = "untrusted"
STALE_TAG = "stale"
STALE_LINES = 2  # the reason's lines under the card: visible without hovering, bounded
CONFLICT_MARK = "⚠"
CONFLICT_TEXT = "changed on two branches — Enter or click to resolve"
CONFLICT_LINES = 3
AUTHOR_CELLS = 16
NBSP = "\u00a0"  # "by <name>" before the summary: a long name must leave room for the summary
SYNC_FAILED_LINES = 3
MAX_JOB_LINES = 4
# Cards listed per section; the rest are counted. The index a Run sees is cut far below this.
MAX_SECTION_CARDS = 300


def wrap_cells(text: str, width: int, max_lines: int) -> list[str]:
    """``text`` word-wrapped to ``width`` terminal cells, at most ``max_lines`` lines; a cut
    ends in "…". Cell-aware: wide (CJK, emoji) characters count double."""
    if width <= 0 or max_lines <= 0 or not text:
        return []
    lines: list[str] = []
    current = ""
    words = text.split(" ")
    i = 0
    while i < len(words):
        word = words[i]
        candidate = f"{current} {word}" if current else word
        if cell_len(candidate) <= width:
            current = candidate
            i += 1
            continue
        if current:
            lines.append(current)
            current = ""
        else:
            # One word wider than the line: cut it across lines.
            pieces = chop_cells(word, width)
            lines.extend(pieces[:-1])
            current = pieces[-1]
            i += 1
        if len(lines) >= max_lines:
            break
    if current and len(lines) < max_lines:
        lines.append(current)
        current = ""
    cut = i < len(words) or bool(current)
    lines = lines[:max_lines]
    if cut and lines:
        last = lines[-1]
        while last and cell_len(last) + 1 > width:
            last = last[:-1]
        lines[-1] = last.rstrip() + "…"
    return lines


def _fit(text: Text, width: int) -> Text:
    """A styled line cut to ``width`` cells with "…" (the text is already one clean line)."""
    text.truncate(width, overflow="ellipsis")
    return text


def _author_tag(author: str) -> str:
    name = one_line(author)
    if cell_len(name) > AUTHOR_CELLS:
        name = chop_cells(name, AUTHOR_CELLS - 1)[0].rstrip() + "…"
    return f"by {name}"


def _tagged_lines(tags: list[tuple[str, str]], text: str, width: int, max_lines: int) -> list[Text]:
    """``text`` after its tags ("untrusted · by Bea · text"), dim, indented two cells and wrapped;
    each tag styled where the first line shows it. An author keeps its " ·" on its line (a
    no-break space): a wrapped line does not start with the separator."""
    words = [t for t, _ in tags] + ([text] if text else [])
    whole = "".join(f"{w}{NBSP if w.startswith('by ') else ' '}· " for w in words[:-1]) + (
        words[-1] if words else ""
    )
    out = [Text("  " + line, "dim") for line in wrap_cells(whole, width - 2, max_lines)]
    if out:
        shown = len(out[0]) - 2  # the first line is a prefix of ``whole``
        at = 0
        for tag, style in tags:
            if at < shown:
                out[0].stylize(style, 2 + at, 2 + min(at + len(tag), shown))
            at += len(tag) + 3
    return out


class _CardList(Widget):
    """The two sections of cards, drawn for the current width; only the visible rows are painted."""

    DEFAULT_CSS = """
    _CardList { height: auto; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.state: PanelState = EMPTY_STATE
        # Layout asks for the height and then renders, and scrolling repaints: lay out once.
        self._laid_out: tuple[int, PanelState, list[Text]] | None = None
        self._line_cards: list[tuple[str, str] | None] = []  # line -> the (level, filename) drawn there
        self._card_lines: dict[tuple[PanelCard, int], list[Text]] = {}  # (card, width) -> its lines

    def lines(self, width: int) -> list[Text]:
        width = max(width, 8)
        if self._laid_out is not None and self._laid_out[0] == width and self._laid_out[1] is self.state:
            return self._laid_out[2]
        self._line_cards = []
        out = self._layout(width)
        self._laid_out = (width, self.state, out)
        return out

    def card_at(self, y: int) -> tuple[str, str] | None:
        """The (level, filename) of the card drawn on line ``y``, if any."""
        return self._line_cards[y] if 0 <= y < len(self._line_cards) else None

    def _layout(self, width: int) -> list[Text]:
        out = self._top(width)
        if self.state.conflicted:
            # First: they need a person, and they are in no section below (no index has them).
            self._conflicted_section(out, width)
        fresh: dict[tuple[PanelCard, int], list[Text]] = {}
        s = self.state
        for name, cards, note in (("Project", s.project, s.project_note), ("User", s.user, None)):
            self._section(out, width, name, cards, note, fresh)
        self._card_lines = fresh  # the next state most likely shows these again
        if s.cut_note:
            # Also where the cut happens, for a reader who scrolled down the list.
            out.append(Text(""))
            out.extend(Text(line, "dim yellow") for line in wrap_cells(one_line(s.cut_note), width, 3))
        return out

    def _top(self, width: int) -> list[Text]:
        """The title, the cut and the sync line."""
        s = self.state
        out = [_fit(Text.assemble(("Memory", "bold"), (" · seen by the next turn", "dim")), width)]
        if s.cut_note:
            # Up here, not only at the end: a cut below the fold was invisible without scrolling.
            out.extend(Text(line, "yellow") for line in wrap_cells(one_line(s.cut_note), width, 3))
        if s.sync_note:
            # One line, replaced by the next sync's: a failure is said, never stacked.
            sync = one_line(s.sync_note)
            if s.sync_failed:
                out.extend(
                    Text(line, "yellow")
                    for line in wrap_cells(f"{CONFLICT_MARK} {sync}", width, SYNC_FAILED_LINES)
                )
            else:
                out.append(_fit(Text(sync, "dim"), width))
        return out

    def _conflicted_section(self, out: list[Text], width: int) -> None:
        lines, conflicted = self._line_cards, self.state.conflicted
        out.append(Text(""))
        head = Text.assemble((f"{CONFLICT_MARK} Conflicted", "bold red"), (f" {len(conflicted)}", "dim"))
        out.append(_fit(head, width))
        for card in conflicted[:MAX_SECTION_CARDS]:
            lines.extend([None] * (len(out) - len(lines)))
            rows = self._conflicted(card, width)
            out.extend(rows)
            lines.extend([(card.level, card.filename)] * len(rows))

    def _section(
        self,
        out: list[Text],
        width: int,
        name: str,
        cards: tuple[PanelCard, ...],
        note: str | None,
        fresh: dict[tuple[PanelCard, int], list[Text]],
    ) -> None:
        """A level's head, its note and its cards (each drawn once per width: ``fresh``)."""
        lines = self._line_cards
        out.append(Text(""))
        new = sum(1 for c in cards if c.new)
        head = Text.assemble((name, "bold underline"), (f" {len(cards)}", "dim"))
        if new:
            head.append(f" · {new} new", "bold green")
        stale = sum(1 for c in cards if c.stale is not None)
        if stale:
            head.append(f" · {stale} stale", "bold yellow")
        out.append(_fit(head, width))
        if note:
            out.extend(Text(line, "italic yellow") for line in wrap_cells(one_line(note), width, 4))
        if not cards and not note:
            out.append(Text("no notes yet", "dim italic"))
        for card in cards[:MAX_SECTION_CARDS]:
            lines.extend([None] * (len(out) - len(lines)))
            drawn = self._card_lines.get((card, width))
            if drawn is None:
                drawn = self._card(card, width)
            fresh[(card, width)] = drawn
            out.extend(drawn)
            lines.extend([(name.lower(), card.filename)] * len(drawn))
        hidden = len(cards) - MAX_SECTION_CARDS
        if hidden > 0:
            more = f"+{hidden:,} more card{'s' if hidden != 1 else ''}: Enter or click lists them all"
            out.extend(Text(line, "dim italic") for line in wrap_cells(more, width, 2))

    @staticmethod
    def _card(card: PanelCard, width: int) -> list[Text]:
        tag, colour = TYPE_TAGS.get(card.type, (one_line(card.type)[:8] or "?", "white"))
        first = Text()
        if card.new:
            first.append("new ", "bold reverse green")
        if card.stale is not None:
            first.append(f"{STALE_TAG} ", "bold yellow")
        first.append(f"{tag} ", colour)
        first.append(one_line(card.title) or one_line(card.filename), "bold")
        out = [_fit(first, width)]
        tags: list[tuple[str, str]] = []
        if card.untrusted:
            # Each card of an untrusted store says so, not only the section note above them.
            tags.append((UNTRUSTED_TAG, "italic yellow"))
        if card.author:
            tags.append((_author_tag(card.author), "italic"))
        out.extend(_tagged_lines(tags, one_line(card.summary), width, SUMMARY_LINES))
        if card.stale is not None:
            # The reason on its own lines: what changed is the point of the mark.
            reason = one_line(card.stale) or "a cited file changed"
            out.extend(Text("  " + line, "yellow") for line in wrap_cells(reason, width - 2, STALE_LINES))
        return out

    @staticmethod
    def _conflicted(card: PanelCard, width: int) -> list[Text]:
        tag, colour = TYPE_TAGS.get(card.type, (one_line(card.type)[:8] or "?", "white"))
        first = Text.assemble(
            (f"{CONFLICT_MARK} ", "bold red"),
            (f"{tag} ", colour),
            (one_line(card.title) or one_line(card.filename), "bold"),
        )
        tags = [(UNTRUSTED_TAG, "italic yellow")] if card.untrusted else []
        tags.append((one_line(card.level) or "conflicted", "italic"))
        return [_fit(first, width), *_tagged_lines(tags, CONFLICT_TEXT, width, CONFLICT_LINES)]

    def render(self) -> Text:
        """Every line as one text (what the panel shows, scrolled or not)."""
        return Text("\n").join(self.lines(self.size.width))

    def render_line(self, y: int) -> Strip:
        # Called for the rows the screen shows only: a long list costs what a screenful does.
        width = self.size.width
        base = self.visual_style.rich_style
        if self.text_selection is not None:
            return super().render_line(y)  # whole: a selection's offsets span the whole text
        lines = self.lines(width)
        if not 0 <= y < len(lines):
            return Strip.blank(width, base)
        # The line alone through the path Textual takes for the whole widget (joined, as render()
        # joins them all: its style becomes a span), so it paints the same cells.
        line = Text("\n").join([lines[y]])
        strips = Visual.to_strips(self, visualize(self, line), width, 1, self.visual_style)
        return strips[0] if strips else Strip.blank(width, base)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self.lines(width)))

    def on_click(self, event: Click) -> None:
        # A click on a card opens the browser at that card; elsewhere, at the top.
        event.stop()
        self.post_message(MemoryPanel.OpenBrowser(self.card_at(event.y)))


class _CardScroll(VerticalScroll, can_focus=True):
    """The cards' scroll area: focusable (Tab, a click) so the arrow and page keys scroll it, and
    Enter opens the card browser (on the first conflicted card, when one waits). It comes after
    the prompt in the focus chain and the App focuses the prompt at start."""

    DEFAULT_CSS = """
    _CardScroll:focus { background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "open_browser", "Cards", show=False)]

    def action_open_browser(self) -> None:
        # A conflicted card waits for a person: Enter opens the browser on the first of them.
        conflicted = self.query_one(_CardList).state.conflicted
        card = (conflicted[0].level, conflicted[0].filename) if conflicted else None
        self.post_message(MemoryPanel.OpenBrowser(card))


class _JobsLine(Widget, can_focus=True):
    """One compact line per memory job in flight; Enter or a click opens the pending screen."""

    DEFAULT_CSS = """
    _JobsLine { height: auto; border-top: hkey $secondary; }
    _JobsLine:focus { background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "open_pending", "Pending", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self.jobs: tuple[PanelJob, ...] = ()

    def lines(self, width: int) -> list[Text]:
        width = max(width, 8)
        jobs = self.jobs
        out: list[Text] = []
        for job in jobs[:MAX_JOB_LINES]:
            style = "bold red" if job.failed else "cyan"
            line = Text.assemble(
                ("✗ " if job.failed else "• ", style), (one_line(job.line), "red" if job.failed else "")
            )
            out.append(_fit(line, width))
        if len(jobs) > MAX_JOB_LINES:
            out.append(Text(f"+{len(jobs) - MAX_JOB_LINES} more", "dim"))
        out.append(_fit(Text("Enter or click: /pending", "dim italic"), width))
        return out

    def render(self) -> Text:
        return Text("\n").join(self.lines(self.size.width))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def action_open_pending(self) -> None:
        self.post_message(MemoryPanel.OpenPending())

    def on_click(self, event: Click) -> None:
        event.stop()
        self.post_message(MemoryPanel.OpenPending())


class MemoryPanel(Widget):
    """The side panel. ``show(state)`` replaces what it shows; F2 (the App's key) hides it."""

    DEFAULT_CSS = """
    MemoryPanel {
        width: 32;
        height: 1fr;
        layout: vertical;
        border-left: vkey $secondary;
        padding: 0 0 0 1;
    }
    MemoryPanel > _CardScroll { height: 1fr; scrollbar-size-vertical: 1; }
    MemoryPanel > _JobsLine.-empty { display: none; }
    """

    @dataclass
    class OpenPending(Message):
        """The user asked for the pending screen (Enter or a click on the jobs line)."""

    @dataclass
    class OpenBrowser(Message):
        """The user asked for the card browser (Enter on the cards, or a click: ``card`` is the
        (level, filename) clicked, to select there)."""

        card: tuple[str, str] | None = None

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.state: PanelState = EMPTY_STATE
        self._cards = _CardList()
        self._jobs = _JobsLine()
        self._jobs.add_class("-empty")

    def compose(self) -> ComposeResult:
        with _CardScroll():
            yield self._cards
        yield self._jobs

    def show(self, state: PanelState) -> None:
        """Show ``state`` (posted by the App after each refresh of the stores or the jobs).

        A layout pass (of the whole screen, a chat of hundreds of widgets included) only when a
        height changes; a job's line that only changed its words is a repaint. The panel is
        refreshed at each memory event, often while an answer streams."""
        if state == self.state:
            return
        cards_height = len(self._cards.lines(self._cards.size.width))
        jobs_height = len(self._jobs.lines(self._jobs.size.width))
        self.state = state
        self._cards.state = state
        self._jobs.jobs = state.jobs
        self._jobs.set_class(not state.jobs, "-empty")  # shown or hidden: Textual lays out itself
        self._cards.refresh(layout=len(self._cards.lines(self._cards.size.width)) != cards_height)
        self._jobs.refresh(layout=len(self._jobs.lines(self._jobs.size.width)) != jobs_height)
