"""The memory model's completion function: the SDK plugged into ``memory.completion.Completion``.

The client runs with the SDK's retries off: the memory worker retries with its own backoff and
bound (DESIGN.md §7). Every request is streamed: the SDK refuses a non-streaming request whose
``max_tokens`` could take longer than its ten-minute bound (≈ 21,333 tokens), and a merge of
several notes may need more (DESIGN.md §5). Structured output is asked for where the endpoint supports it; an endpoint
that rejects ``output_config`` (compatible servers such as Ollama) gets plain text from then on,
remembered for the process, and the text parser reads the answer either way.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from memory.completion import CompletionError, CompletionRequest

from .provider import NO_CREDENTIALS, Usage, describe_error, has_credentials
from .provider import _usage as usage_of

log = logging.getLogger(__name__)

# (base URL, model) pairs whose endpoint refused structured output in this process.
_NO_STRUCTURED: set[tuple[str, str]] = set()


def _mentions_output_config(err: Exception) -> bool:
    text = f"{getattr(err, 'api_message', '')} {getattr(err, 'message', '')} {err}".lower()
    return any(k in text for k in ("output_config", "output_format", "json_schema", "structured", "format"))


class AnthropicCompletion:
    """``share``: returns the main model's SDK client, which this one is then a copy of (retries
    off) sharing its connection pool: building a client loads the TLS certificates (20–30 ms), and a
    process that answers one turn (print mode) would otherwise pay that twice before its answer."""

    def __init__(
        self,
        model: str,
        client: Any | None = None,
        *,
        on_usage: Callable[[str, Usage], None] | None = None,
        share: Callable[[], Any] | None = None,
    ) -> None:
        self.model = model
        self._client = client
        self._share = share
        # Told (model, usage) after each answered request: the app counts memory calls in the cost.
        self.on_usage = on_usage

    @property
    def client(self) -> Any:
        if self._client is None:
            if self._share is not None:
                self._client = self._share().with_options(max_retries=0)
            else:
                import anthropic

                self._client = anthropic.AsyncAnthropic(max_retries=0)
        return self._client

    async def aclose(self) -> None:
        """Close this client's connections on the loop that used them (a shared client is the
        main model's to close). Left open, the SDK closes them when collected, after the loop
        has ended, and a traceback ("Event loop is closed") lands on the terminal."""
        client, self._client = self._client, None
        if client is not None and self._share is None:
            with contextlib.suppress(Exception):
                await client.close()

    async def __call__(self, request: CompletionRequest) -> str:
        import anthropic

        if self._client is None and not has_credentials():
            raise CompletionError(NO_CREDENTIALS, retryable=False)
        key = (str(self.client.base_url), self.model)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": request.system,
            "messages": [{"role": "user", "content": request.prompt}],
        }
        structured = request.json_schema is not None and key not in _NO_STRUCTURED
        if structured:
            params["output_config"] = {"format": {"type": "json_schema", "schema": request.json_schema}}
        try:
            message = await self._send(params)
        except anthropic.BadRequestError as e:
            if not (structured and _mentions_output_config(e)):
                raise CompletionError(describe_error(e, model=self.model)[0], retryable=False) from None
            _NO_STRUCTURED.add(key)
            params.pop("output_config")
            try:
                message = await self._send(params)
            except Exception as e2:
                msg, retryable = describe_error(e2, model=self.model)
                raise CompletionError(msg, retryable=retryable) from None
        except Exception as e:
            msg, retryable = describe_error(e, model=self.model)
            raise CompletionError(msg, retryable=retryable) from None
        return "".join(b.text for b in message.content if getattr(b, "type", "") == "text")

    async def _send(self, params: dict[str, Any]) -> Any:
        """One streamed request, read to its final message (errors surface as SDK exceptions)."""
        async with self.client.messages.stream(**params) as stream:
            message = await stream.get_final_message()
        if self.on_usage is not None and getattr(message, "usage", None) is not None:
            try:
                self.on_usage(self.model, usage_of(message.usage))
            except Exception:
                # A cost display must never fail a memory job that has its answer.
                log.exception("memory model: the on_usage callback failed")
        return message
