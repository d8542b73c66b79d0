"""The prompt's completer: slash commands at the start of the prompt, ``@path`` anywhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.tui.chat.command_table import completions
from widgets.chat.prompt import Suggestion

if TYPE_CHECKING:
    from app.services.extensions import CommandView


def complete(
    text: str, cursor: int, files: list[str], custom: Sequence[CommandView] = ()
) -> list[Suggestion]:
    """What the word before ``cursor`` may become; ``files``: the workspace's, as listed;
    ``custom``: the custom commands and MCP prompts, after the app's own."""
    before = text[:cursor]
    word = before.split()[-1] if before and not before[-1].isspace() else ""
    if word.startswith("/") and before.lstrip() == word:
        prefix = word.lower()
        return [
            *(
                Suggestion(label=c.usage, insert=f"/{c.name} ", kind="command", detail=c.help)
                for c in completions(word)
            ),
            *(
                Suggestion(
                    label=f"{c.name} {c.hint}".rstrip(),
                    insert=f"{c.name} ",
                    kind="command",
                    detail=c.description,
                )
                for c in custom
                if c.name.lower().startswith(prefix)
            ),
        ]
    if word.startswith("@"):
        # Loaded at the first "@": the module brings the file tools' path rules, not needed for
        # the first frame.
        from app.tui.chat.filecomplete import fuzzy

        return [Suggestion(label=p, insert=f"@{p} ", kind="file") for p in fuzzy(word[1:], files)]
    return []
