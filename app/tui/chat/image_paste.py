"""Images put into the prompt: a pasted path to an image file, and Ctrl+V's clipboard image.

A terminal gives a file dragged onto it as its path (``/home/me/My Shot.png``, quoted, with its
spaces escaped, or a ``file://`` URL). A paste whose whole text is such a path (or several) to an
existing image file attaches the image: the prompt shows its label, ``[Image #1: My Shot.png
1280×720]``, where the path would have gone, and the image goes with the prompt when it is sent
(its label stays in the words). A path to no file is pasted as the text it is; a file that is
not a readable image is one line in the chat and its path is pasted as text (nothing lost).

Ctrl+V asks the system clipboard for an image (``app.services.clipboard_image``); without one,
the app's own clipboard (text copied in the app) is pasted as before, and when that is empty too
one line says what was looked for. Both read and scale off the event loop, one after the other
(labels go in in the order they were pasted), and typing goes on meanwhile.

The images stay known by their labels for the prompt's life (as pastes do): a prompt given back
(a refused send, a rewound turn) or recalled still has them.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.screen import Screen

    from app.agent.conversation.blocks import Prompt
    from app.agent.conversation.images import Picture
    from widgets.chat.prompt import PromptInput

__all__ = ["ImagePaste", "sent_labels"]

_NUMBER = re.compile(r"\[Image #(\d+): ")
# A paste that could be an image's path: it starts as a path, a quoted one or a file URL does, and
# names an image's suffix. Anything else is text at once, without loading the attachments' modules.
_MAY_BE_PATH = re.compile(r"\s*['\"]?(?:/|~|file://)[\s\S]*\.(?:png|jpe?g|gif|webp)\b", re.IGNORECASE)
KEPT_IMAGES = 32  # pasted images kept for a recalled or given-back prompt; the oldest go first

# A line for the chat: (text, error).
Note = Callable[[str, bool], None]


class ImagePaste:
    """The prompt's images (``pictures``: label -> image) and the work that brings them in;
    ``screen`` runs that work and draws the notes (``note``)."""

    def __init__(self, screen: Screen[None], prompt: PromptInput, note: Note) -> None:
        self._screen = screen
        self._prompt = prompt
        self._note = note
        self.pictures: dict[str, Picture] = {}
        self._order = asyncio.Lock()  # one paste after the other: labels in the order pasted

    def claim(self, text: str) -> bool:
        """The prompt's paste hook: True when ``text`` reads as image paths (the work to attach
        them, or to put the text back, is started)."""
        if not _MAY_BE_PATH.match(text):
            return False
        # After the first frame: the prompt's attachments are the agent's.
        from app.agent.conversation.attachments import pasted_image_paths

        readings = pasted_image_paths(text)
        if not readings:
            return False
        self._screen.run_worker(self._from_paths(text, readings), group="image-paste", exit_on_error=False)
        return True

    def from_clipboard(self) -> None:
        """Ctrl+V: the clipboard's image, read off the loop."""
        self._screen.run_worker(self._from_clipboard(), group="image-paste", exit_on_error=False)

    async def _from_paths(self, text: str, readings: Sequence[Sequence[str]]) -> None:
        # Only once a path is pasted: the image reading (aiofiles, Pillow) is no part of start-up.
        from app.agent.conversation.attachments import read_image
        from app.agent.conversation.images import ImageError

        async with self._order:
            chosen = None
            for paths in readings:
                if all([await asyncio.to_thread(os.path.isfile, p) for p in paths]):
                    chosen = paths
                    break
            if chosen is None:
                self._prompt.insert_paste(text)  # no such files: the text it is
                return
            try:
                pictures = [await read_image(p, os.path.basename(p)) for p in chosen]
            except ImageError as e:
                self._note(f"{e}; pasted as text", True)
                self._prompt.insert_paste(text)
                return
            self._insert(pictures)

    async def _from_clipboard(self) -> None:
        # Only on Ctrl+V: the clipboard's tools and Pillow are no part of start-up.
        from app.agent.conversation.images import ImageError, prepare_image
        from app.services.clipboard_image import ClipboardError, clipboard_image

        async with self._order:
            try:
                data = await clipboard_image()
            except ClipboardError as e:
                local = self._screen.app.clipboard
                if local:
                    self._prompt.insert_paste(local)  # the text copied in the app, as before
                else:
                    self._note(str(e), False)
                return
            try:
                picture = await asyncio.to_thread(prepare_image, data, "clipboard")
            except ImageError as e:
                self._note(f"Ctrl+V: {e}", True)
                return
            self._insert([picture])

    def _insert(self, pictures: list[Picture]) -> None:
        """Each image's label into the prompt at the cursor, numbered after the images the
        prompt already names."""
        labels = []
        for picture in pictures:
            label = self._label(picture)
            self.pictures[label] = picture
            labels.append(label)
            if (note := picture.note()) is not None:
                self._note(note, False)
        self._prompt.insert_paste(" ".join(labels) + " ")
        text = self._prompt.text
        for label in [label for label in self.pictures if label not in text]:
            if len(self.pictures) <= KEPT_IMAGES:
                break
            del self.pictures[label]  # an old prompt's image: its data is let go

    def _label(self, picture: Picture) -> str:
        # After an image: its module is loaded.
        from app.agent.conversation.images import image_label

        text = self._prompt.text
        shown = [int(n) for n in _NUMBER.findall(text)]
        number = max(shown, default=0) + 1
        while True:
            label = image_label(number, picture.name, picture.width, picture.height)
            known = self.pictures.get(label)
            # A label already standing for another image (an earlier prompt's): the next number.
            if (known is None or known.sha256 == picture.sha256) and label not in text:
                return label
            number += 1


def sent_labels(prompt: Prompt, typed: str) -> list[str]:
    """The labels of the images ``prompt`` carries that its words as typed do not show (an
    ``@shot.png``'s, not a pasted image's): the chat's entry adds them under the words."""
    # With a prompt sent: the conversation's modules are loaded.
    from app.agent.conversation.blocks import ImageBlock, TextBlock
    from app.agent.conversation.images import is_label_of

    blocks = prompt.blocks
    return [
        b.text
        for b, after in itertools.pairwise(blocks)
        if isinstance(b, TextBlock) and isinstance(after, ImageBlock) and is_label_of(b, after)
        if b.text not in typed
    ]
