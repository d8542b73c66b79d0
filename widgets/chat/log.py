"""The conversation: a scrolling column of blocks (the widgets/chat/*_block.py), newest at the bottom.

``layout: stream`` keeps arranging cheap with hundreds of blocks (it reuses the placements of
unchanged blocks); ``anchor()`` keeps the view on the newest block until the user scrolls up,
and Textual re-anchors when they scroll back to the bottom. Blocks beyond ``max_blocks`` are
pruned from the top so a long session stays fast (the session log keeps everything).

An answer is one widget however long it is (see ``AnswerBlock``): a long conversation is as
many widgets as it has blocks, and ``max_blocks`` bounds them.

While the conversation is empty, one line says what to try (``EMPTY_HINT``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from textual.app import RenderResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widget import Widget

if TYPE_CHECKING:
    from widgets.chat.answer_block import AnswerBlock
    from widgets.chat.error_block import ErrorBlock
    from widgets.chat.note_block import NoteBlock
    from widgets.chat.thinking_block import ThinkingBlock
    from widgets.chat.tool_block import DisplayKeys, ToolBlock
    from widgets.chat.user_block import UserBlock

# Each block's module is imported with the first block of its kind: the answer's Markdown
# (markdown-it, pygments) is no part of the first frame, which shows an empty conversation.

__all__ = ["EMPTY_HINT", "ChatPane"]

# One line at the narrowest usual chat width (about 52 cells beside the panel at 100 columns).
EMPTY_HINT = "Type a request · /help · @file to attach · F2 memory"

_W = TypeVar("_W", bound=Widget)


class ChatPane(VerticalScroll):
    """The chat column. The ``add_*``/``start_answer`` methods mount without waiting and
    return the block at once, so the App can keep a handle and update it as events arrive."""

    # Textual lays the screen out again whenever a widget's virtual size changes, in the frame
    # after the layout that changed it; the pane's grows with every write of a streamed answer.
    # That layout is the pane's own: its scrollbars and its anchor at the bottom are already
    # updated by the first one (``_size_updated``), so the second only repaints the screen.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=False)

    DEFAULT_CSS = """
    ChatPane {
        layout: stream;
        height: 1fr;
        padding: 0 1 1 1;
        scrollbar-size-vertical: 1;
        background: $background;
    }
    """

    def __init__(self, *, max_blocks: int = 300, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.max_blocks = max_blocks
        self._tools: dict[str, ToolBlock] = {}
        # call_id -> the top-level block it is shown in (itself, or the task it nests under).
        self._top: dict[str, ToolBlock] = {}
        self._prune_due = False

    @property
    def hint_shown(self) -> bool:
        """The empty conversation's hint is drawn (nothing else is in the pane)."""
        return not self.blocks

    def render(self) -> RenderResult:
        # Drawn under the blocks, so only seen while there are none (not a block itself).
        if self.blocks:
            return super().render()
        return Content.assemble("\n ", (EMPTY_HINT, "$foreground-muted"))

    def on_mount(self) -> None:
        self.anchor()

    # -- adding blocks --

    def add_user(self, text: str, pastes: dict[str, str] | None = None) -> UserBlock:
        """``text`` as the prompt showed it; ``pastes``: its paste placeholders -> pasted text."""
        # The user just spoke: follow the conversation again even if they had scrolled up.
        from widgets.chat.user_block import UserBlock

        self.anchor()
        return self._add(UserBlock(text, pastes))

    def start_answer(self, depth: int = 0) -> AnswerBlock:
        from widgets.chat.answer_block import AnswerBlock

        return self._add(AnswerBlock(depth))

    def add_thinking(
        self, text: str = "", *, redacted: bool = False, streaming: bool = True, expanded: bool = False
    ) -> ThinkingBlock:
        """A thinking block, collapsed unless ``expanded`` (see ``ThinkingBlock``)."""
        from widgets.chat.thinking_block import ThinkingBlock

        return self._add(ThinkingBlock(text, redacted=redacted, streaming=streaming, expanded=expanded))

    def thinking_blocks(self) -> list[ThinkingBlock]:
        """The thinking blocks shown, oldest first."""
        from widgets.chat.thinking_block import ThinkingBlock

        return [b for b in self.blocks if isinstance(b, ThinkingBlock)]

    def add_tool(
        self,
        call_id: str,
        name: str,
        depth: int = 0,
        parent_id: str | None = None,
        *,
        display_keys: DisplayKeys = (),
    ) -> ToolBlock:
        """A tool call block; with ``parent_id`` (a sub-agent's call) it nests under that
        call's block when it is still shown, else it is added at the bottom. ``display_keys``:
        the call's telling inputs with their formats (see ``summarize_args``)."""
        from widgets.chat.tool_block import ToolBlock

        parent = self.tool(parent_id) if parent_id is not None else None
        if parent is not None:
            block = parent.add_child(call_id, name, display_keys=display_keys)
            self._top[call_id] = self._top.get(parent.call_id, parent)
        else:
            block = self._add(ToolBlock(call_id, name, depth=depth, display_keys=display_keys))
            self._top[call_id] = block
        self._tools[call_id] = block
        return block

    def tool(self, call_id: str | None) -> ToolBlock | None:
        if call_id is None:
            return None
        block = self._tools.get(call_id)
        if block is not None:
            return block
        for top in self._tools.values():  # a child added through ToolBlock.add_child directly
            found = top.find(call_id)
            if found is not None:
                return found
        return None

    def add_error(self, text: str) -> ErrorBlock:
        from widgets.chat.error_block import ErrorBlock

        return self._add(ErrorBlock(text))

    def add_note(self, text: str) -> NoteBlock:
        from widgets.chat.note_block import NoteBlock

        return self._add(NoteBlock(text))

    def clear_blocks(self) -> None:
        self._tools.clear()
        self._top.clear()
        self.remove_children()
        self.anchor()
        self.refresh()

    @property
    def blocks(self) -> list[Widget]:
        """The top-level blocks, oldest first (not those being pruned or cleared)."""
        return [child for child in self.children if not child._pruning]

    # -- internals --

    def _add(self, block: _W) -> _W:
        if not self.blocks:
            self.refresh()  # the hint goes
        self.mount(block)
        if not self._prune_due:
            # After the refresh: the new blocks have started, and a burst (a resumed history)
            # is pruned once.
            self._prune_due = True
            self.call_after_refresh(self._prune)
        return block

    def _prune(self) -> None:
        self._prune_due = False
        # Blocks already being removed stay children until their removal completes: skip them.
        live = self.blocks
        excess = len(live) - self.max_blocks
        if excess <= 0:
            return
        old = live[:excess]
        dropped = {id(block) for block in old}
        for call_id, top in list(self._top.items()):
            if id(top) in dropped:
                del self._top[call_id]
                self._tools.pop(call_id, None)
        self.remove_children(old)
