"""Prompts and commands sent before they can go, and the sending itself.

The prompt works from the first frame: a prompt sent while the runtime connects (or while a turn,
a session switch or the trust question runs) is queued — shown as such in the chat — and sent in
order once nothing it waits for runs. Commands that need the session wait in the same line;
commands that need only the memory stores wait for the runtime object (``after_built``). Esc takes
back what is queued: the prompts' text goes back to an empty prompt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.tui.chat.command_table import Parsed
from app.tui.phase import Phase

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from widgets.chat.log import ChatPane
    from widgets.chat.prompt import PromptInput
    from widgets.chat.user_block import UserBlock

CONNECTING = "connecting… (Enter queues the prompt)"
QUEUED_NOTE = "queued: sent once the model is connected (Esc cancels)"
# Workers that the next queued prompt or command waits for: a turn (or /compact), a session
# switch (/clear, /resume), the trust question's outcome.
WAIT_GROUPS = frozenset({"turn", "session", "trust"})


@dataclass
class Queued:
    """A prompt sent before it could go: shown in the chat (``block``), sent in its turn."""

    text: str  # as sent to the model (pastes expanded)
    typed: str  # as the prompt showed it
    pastes: dict[str, str] = field(default_factory=dict)
    block: UserBlock | None = None


class SendQueue:
    """The chat's line of waiting prompts and commands (``items``, oldest first), drawn in its
    ``chat`` pane and said in its ``prompt``. ``node`` runs the drain (its workers are the app's);
    ``phase`` is where start-up is, ``built`` whether the runtime object exists;
    ``trust_pending`` says whether the trust question waits for its answer; ``run_command`` runs
    a slash command, ``start_turn`` sends a prompt, ``remember`` keeps one in the prompt history;
    ``configure_help`` shows how to configure a model."""

    def __init__(
        self,
        node: DOMNode,
        chat: ChatPane,
        prompt: PromptInput,
        *,
        phase: Callable[[], Phase],
        built: Callable[[], bool],
        trust_pending: Callable[[], bool],
        run_command: Callable[..., Awaitable[None]],
        start_turn: Callable[[str, UserBlock], Any],
        remember: Callable[[str], None],
        configure_help: Callable[[], None],
    ) -> None:
        self._node = node
        self._chat = chat
        self._prompt = prompt
        self._phase = phase
        self._built = built
        self._trust_pending = trust_pending
        self._run_command = run_command
        self._start_turn = start_turn
        self._remember = remember
        self._configure_help = configure_help
        self.items: list[Queued | Parsed] = []  # wait for the session, in order with the prompts
        self.after_built: list[Parsed] = []  # wait for the runtime object (the stores)
        self._draining = False

    def can_send(self) -> bool:
        """Nothing that a queued prompt or command waits for: start-up, the trust question, a
        turn, a session switch."""
        phase = self._phase()
        if phase.connecting or phase is Phase.QUITTING or self._trust_pending():
            return False
        return not any(w.group in WAIT_GROUPS and not w.is_finished for w in self._node.workers)

    def submit(self, text: str, typed: str, pastes: dict[str, str]) -> None:
        """A prompt: sent now, or queued (never dropped) behind what it waits for."""
        connecting = self._phase().connecting
        item = Queued(text, typed or text, dict(pastes))
        if connecting or self.items or not self.can_send():
            item.block = self._chat.add_user(item.typed, item.pastes)
            item.block.set_note(
                QUEUED_NOTE if connecting else "queued: sent after what runs now (Esc cancels)"
            )
            self.items.append(item)
            self.show_notice()
            self.drain_soon()
            return
        self._send(item)

    def defer(self, parsed: Parsed, needs: str) -> None:
        """Run ``parsed`` once what it needs is there: "stores" (the runtime object) or
        "session" (in order with the queued prompts, once the runtime is open)."""
        chat = self._chat
        if needs == "stores":
            self.after_built.append(parsed)
            chat.add_note(f"/{parsed.name} runs in a moment (the memory stores are being opened)")
        else:
            self.items.append(parsed)
            when = (
                "once the model is connected"
                if self._phase().connecting
                else "after what runs or waits before it"
            )
            chat.add_note(f"/{parsed.name} runs {when} (Esc cancels)")
            self.drain_soon()
        self.show_notice()

    def drain_soon(self) -> None:
        if self.items and self.can_send():
            self._node.call_later(self.drain)

    async def drain(self) -> None:
        """Send the queued prompts and run the queued commands, oldest first, each when nothing
        it waits for runs (a prompt starts a turn: the next waits for its end)."""
        if self._draining:
            return
        self._draining = True
        try:
            while self.items and self.can_send():
                item = self.items.pop(0)
                if isinstance(item, Parsed):
                    await self._run_command(item, queued=True)
                else:
                    self._send(item)
        finally:
            self._draining = False
            self.show_notice()

    def run_after_built(self) -> None:
        """The runtime object exists: the commands typed meanwhile run, in order."""
        waiting, self.after_built = self.after_built, []
        for parsed in waiting:
            self._node.call_later(self._run_command, parsed)

    def _send(self, item: Queued) -> None:
        if item.block is not None:
            item.block.remove()  # drawn again below what came meanwhile (notes, a resumed history)
            item.block = None
        if not self._phase().ready:
            # No model (or no connection): the prompt is kept — in the chat, and in the history.
            self.not_sent(item, "not sent: no model is configured (see the setup note below)")
            self._configure_help()
            return
        self._remember(item.text)
        self._start_turn(item.text, self._chat.add_user(item.typed, item.pastes))

    def not_sent(self, item: Queued, why: str) -> None:
        block = item.block if item.block is not None else self._chat.add_user(item.typed, item.pastes)
        item.block = block
        block.set_note(why)
        self._remember(item.text)

    def fail_all(self) -> None:
        """Start-up failed: what was waiting cannot run, said on each (prompts stay in the history)."""
        for item in [*self.items, *([] if self._built() else self.after_built)]:
            if isinstance(item, Parsed):
                self._chat.add_note(f"/{item.name} not run: the app could not start (see the error above)")
            else:
                self.not_sent(item, "not sent: the app could not connect (see the error below)")
        self.items.clear()
        self.after_built.clear()
        self.show_notice()

    def cancel(self) -> None:
        """Esc / Ctrl+C: nothing queued is sent; the queued prompts' text goes back to an
        empty prompt (and stays in the history)."""
        prompt = self._prompt
        items = list(self.items)
        self.items.clear()
        prompts = [item for item in items if isinstance(item, Queued)]
        back = bool(prompts) and not prompt.text.strip()
        for item in items:
            if isinstance(item, Parsed):
                self._chat.add_note(f"/{item.name} not run: cancelled")
            elif item.block is not None:
                item.block.set_note("not sent: cancelled" + (" (back in the prompt)" if back else ""))
        if back:
            prompt.text = "\n\n".join(item.typed for item in prompts)
            prompt.move_cursor(prompt.document.end)
        self.show_notice()

    def show_notice(self) -> None:
        connecting = self._phase().connecting
        prompts = sum(1 for item in self.items if isinstance(item, Queued))
        if prompts:
            when = "once connected" if connecting else "in turn"
            self._prompt.notice = f"{prompts} queued: sent {when} (Esc cancels)"
        else:
            self._prompt.notice = CONNECTING if connecting else None
