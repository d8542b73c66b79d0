"""The small protocol the memory worker needs from a model. The runtime plugs in the SDK."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel


class CompletionRequest(BaseModel):
    """One request to the memory model: a system text and a single user message."""

    purpose: Literal["extract", "merge", "consolidate"]
    system: str
    prompt: str
    # JSON schema for structured output; a provider that cannot use it sends the text alone
    # (the answer is parsed by the text parser either way).
    json_schema: dict[str, Any] | None = None
    max_tokens: int = 4096


class CompletionError(Exception):
    """A provider failure. ``retryable`` is False for errors no retry can fix (401, bad model)."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class Completion(Protocol):
    async def __call__(self, request: CompletionRequest) -> str: ...
