"""The trust window and the side panel with ten thousand cards: one widget each, a bounded list
with a count of the rest, and a layout that does not grow with the store."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from tests.tui.conftest import wait_until
from widgets.dialogs.trust_modal import TRUST_SHOWN, TrustCard, TrustModal
from widgets.panel import memory_panel
from widgets.panel.memory_panel import MAX_SECTION_CARDS, MemoryPanel, PanelCard, PanelState

_UNSET = object()
BIG = 10_001


class Host(App[None]):
    def __init__(self, modal: TrustModal | None = None) -> None:
        super().__init__()
        self.modal = modal
        self.result: object = _UNSET

    def compose(self) -> ComposeResult:
        yield Static("behind")
        yield MemoryPanel(id="panel")

    def on_mount(self) -> None:
        if self.modal is not None:
            self.push_screen(self.modal, self._done)

    def _done(self, result: object) -> None:
        self.result = result


def _trust_cards(n: int, broken: int = 0) -> list[TrustCard]:
    cards = [
        TrustCard("project_knowledge", f"Card {i}", f"summary {i}", f"project_knowledge_card-{i:05d}.md")
        for i in range(n - broken)
    ]
    cards += [
        TrustCard("", f"bad-{i}.md", "", f"bad-{i}.md", problem=f"unknown type 'x{i}' in the front matter")
        for i in range(broken)
    ]
    return cards


def _listing(modal: TrustModal) -> str:
    return str(modal.query_one("#cards", Static).content.plain)  # type: ignore[union-attr]


async def test_the_trust_window_lists_ten_thousand_cards_in_one_widget_with_a_count_of_the_rest() -> None:
    modal = TrustModal(_trust_cards(BIG, broken=2), where="/src/clone")
    app = Host(modal)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal)
        # The whole window is a handful of widgets, not one per card.
        assert len(list(modal.query("*"))) < 12
        listing = _listing(modal)
        # The two a prompt would leave out come first, with why; then the rest, counted.
        assert listing.startswith(
            "[left out] bad-0.md\n  unknown type 'x0' in the front matter\n\n[left out] bad-1.md\n"
        )
        assert listing.count("\n  ") == TRUST_SHOWN
        assert listing.endswith(
            f"… and {BIG - TRUST_SHOWN:,} more cards (the card browser, /memory, lists them all)"
        )
        summary = str(modal.query_one("#summary", Static).content.plain)  # type: ignore[union-attr]
        assert "Its 10,001 cards are not put into any prompt" in summary
        assert "2 of them do not parse and would be left out even then" in summary
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result is True


async def test_the_trust_window_is_up_before_the_cards_are_read_and_y_waits_for_them() -> None:
    modal = TrustModal(None)
    app = Host(modal)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal)
        assert _listing(modal) == "reading the cards…"
        await pilot.press("y")  # nobody trusts what they could not see
        await pilot.pause()
        assert app.result is _UNSET and app.screen is modal
        modal.show_cards(_trust_cards(3))
        await wait_until(pilot, lambda: _listing(modal).startswith("[project_knowledge] Card 0"))
        assert "Its 3 cards are not put" in str(modal.query_one("#summary", Static).content.plain)  # type: ignore[union-attr]
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result is True


async def test_the_trust_window_that_could_not_read_the_cards_says_why_and_still_answers_not_now() -> None:
    modal = TrustModal(None)
    app = Host(modal)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal)
        modal.show_error("the cards could not be read: PermissionError: denied")
        await wait_until(pilot, lambda: "PermissionError" in _listing(modal))
        await pilot.press("y")
        await pilot.pause()
        assert app.result is _UNSET
        await pilot.press("n")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result is False


def _panel_cards(n: int, *, untrusted: bool = False) -> tuple[PanelCard, ...]:
    return tuple(
        PanelCard(
            "project_knowledge",
            f"Card {i}",
            f"summary {i}",
            f"project_knowledge_card-{i:05d}.md",
            untrusted=untrusted,
        )
        for i in range(n)
    )


def _state(project: tuple[PanelCard, ...]) -> PanelState:
    return PanelState(project=project, user=(), cut_note=None, project_note=None, jobs=())


@pytest.fixture
def laid_out(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The filenames of the cards the panel lays out, in order (each call of its card layout)."""
    seen: list[str] = []
    original: Any = memory_panel._CardList._card

    def counting(card: PanelCard, width: int) -> Any:
        seen.append(card.filename)
        return original(card, width)

    monkeypatch.setattr(memory_panel._CardList, "_card", staticmethod(counting))
    return seen


async def test_the_panel_with_ten_thousand_cards_lays_out_a_bounded_list_and_counts_the_rest(
    laid_out: list[str],
) -> None:
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state(_panel_cards(10_000, untrusted=True)))
        more = f"+{10_000 - MAX_SECTION_CARDS:,} more cards: Enter or click lists them all"
        await wait_until(pilot, lambda: more in " ".join(line.plain for line in panel._cards.lines(60)))
        assert len(set(laid_out)) == MAX_SECTION_CARDS
        assert len(panel._cards.lines(60)) < 4 * MAX_SECTION_CARDS
        assert "Project 10000" in panel._cards.render().plain  # the section still says how many


async def test_a_new_panel_state_lays_out_only_the_cards_that_changed(laid_out: list[str]) -> None:
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(MemoryPanel)
        cards = _panel_cards(200)
        panel.show(_state(cards))
        await wait_until(pilot, lambda: "Card 0" in panel._cards.render().plain)
        laid_out.clear()
        changed = PanelCard("project_knowledge", "Card 7 renamed", "summary 7", cards[7].filename)
        panel.show(_state((*cards[:7], changed, *cards[8:])))
        await wait_until(pilot, lambda: "Card 7 renamed" in panel._cards.render().plain)
        assert laid_out == [cards[7].filename]
