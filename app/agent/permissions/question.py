"""The question the permission gate puts to the person about one call, and the answer it takes.

The face draws it (the app's permission window); the gate never knows how. A denial's note is the
person's reason for the model: the gate cleans it again whatever the face did.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from app.agent.tools.base import ToolInput
from app.agent.tools.tool import Preview

__all__ = ["Answer", "Ask", "Choice", "Question"]

# once: this call; session: this tool until the session changes; always: the face saved the rule the
# person confirmed, this call runs; deny: the call gets a denied result and the turn goes on.
Choice = Literal["once", "session", "always", "deny"]


class Question(BaseModel):
    """One call put to the person: which (``call_id``, ``depth``: 0 the agent, n a sub-agent),
    the tool and its validated input, the tool's own preview, and the rules an "always allow"
    would save with the parts of the call no such rule covers (each with why)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    call_id: str
    depth: int
    tool: str
    input: ToolInput
    preview: Preview
    rules: tuple[str, ...] = ()
    still_asks: tuple[str, ...] = ()


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)

    choice: Choice
    note: str = ""


# The face's window: shows the question, returns the person's answer (a cancelled turn cancels it).
Ask = Callable[[Question], Awaitable[Answer]]
