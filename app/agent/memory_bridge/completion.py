"""The memory model's completion function: the SDK plugged into ``memory.extract.completion.Completion``.

The client runs with the SDK's retries off: the memory worker retries with its own backoff and
bound (a failed job waits and is tried again, a bounded number of times). Every request is
streamed: the SDK refuses a non-streaming request whose ``max_tokens`` could take longer than its
ten-minute bound (≈ 21,333 tokens), and a merge of several notes may need more. Structured output
is asked for where the endpoint supports it; an endpoint that refuses ``output_config``
(compatible servers such as Ollama) gets plain text from then on, and the text parser reads the
answer either way.

The refusal is remembered per endpoint (base URL without credentials, and model) in
``$PSEUDOCLAUDE_HOME/capabilities.json`` (0600, replaced atomically), so a process that makes one
request (print mode) pays the refused request once, not on every run. A damaged file counts as
knowing nothing and is written anew with the next refusal; a person deletes it to try structured
output again. A refusal is recognised from the error's structure only: a 400 (or 422)
``invalid_request_error`` whose ``param`` or message names the ``output_config`` parameter — never
from a word such as "format" in an unrelated message.

A stream that sends nothing (no headers, no event, no ping: no bytes) for ``idle_timeout``
seconds is a failed, retryable attempt: the request's read timeout is the idle timeout, so
idleness is measured between reads and a slow but steadily streaming answer is never cut. The
pipeline's whole-request bound (``REQUEST_TIMEOUT``) stays the outer limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.agent.model.capabilities import (
    CAPABILITIES_FILE,
    Capabilities,
    CapabilitiesRecord,
    RefusedEndpoint,
    endpoint_url,
    refusal_naming,
)
from app.agent.model.provider import NO_CREDENTIALS, Usage, describe_error, has_credentials
from app.agent.model.provider import _usage as usage_of
from memory.extract.completion import CompletionError, CompletionRequest

log = logging.getLogger(__name__)

# The file and its record live with the model (web_search remembers its refusals there too);
# named here as well, where the memory model's callers have always found them.
__all__ = [
    "CAPABILITIES_FILE",
    "MEMORY_MODEL_SWITCH",
    "AnthropicCompletion",
    "Capabilities",
    "CapabilitiesRecord",
    "RefusedEndpoint",
    "endpoint_url",
    "refuses_structured_output",
]

# The memory model is chosen by flag or setting in both faces (the app's /model is the main model's).
MEMORY_MODEL_SWITCH = "--memory-model (or memory_model in config.toml)"
STRUCTURED_PARAM = "output_config"
# The parameter named as such: "output_config: Extra inputs…", "output_config.format: …",
# "Unknown parameter 'output_config'" — not "output_configuration" nor a word like "format".
_PARAM_NAMED = re.compile(r"(?<![\w.])output_config(?:\.[\w.]+)?(?!\w)")


def refuses_structured_output(err: BaseException) -> bool:
    """Whether an API error says the endpoint does not take ``output_config``.

    Only a 400 (or a validator's 422) whose error type, when given, is ``invalid_request_error``
    and whose ``param`` field, validation ``loc`` or message names the parameter itself. Any other
    refusal (a bad message, "invalid date format in messages") is the request's own error.
    """
    return refusal_naming(err, _PARAM_NAMED, STRUCTURED_PARAM)


class AnthropicCompletion:
    """``share``: returns the main model's SDK client, which this one is then a copy of (retries
    off) sharing its connection pool: building a client loads the TLS certificates (20–30 ms), and a
    process that answers one turn (print mode) would otherwise pay that twice before its answer.

    ``home``: where ``capabilities.json`` lives (default: ``$PSEUDOCLAUDE_HOME`` as it is at the
    first request).

    ``idle_timeout``: seconds a stream may send nothing before the attempt fails (setting
    ``memory_idle_timeout``)."""

    def __init__(
        self,
        model: str,
        client: Any | None = None,
        *,
        on_usage: Callable[[str, Usage], None] | None = None,
        share: Callable[[], Any] | None = None,
        home: Path | None = None,
        idle_timeout: float = 60.0,
    ) -> None:
        if isinstance(idle_timeout, bool) or not (0 < idle_timeout < float("inf")):
            raise ValueError(f"idle_timeout must be a positive number of seconds, not {idle_timeout!r}")
        self.model = model
        self.idle_timeout = float(idle_timeout)
        self._client = client
        self._share = share
        # Told (model, usage) after each answered request: the app counts memory calls in the cost.
        self.on_usage = on_usage
        self.home = home
        self._capabilities: Capabilities | None = None

    @property
    def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            self._capabilities = Capabilities.in_home(self.home)
        return self._capabilities

    @property
    def client(self) -> Any:
        if self._client is None:
            if self._share is not None:
                self._client = self._share().with_options(max_retries=0)
            else:
                # The SDK takes seconds to load: only when the memory model is first asked.
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
        # The SDK takes seconds to load: only when the memory model is asked.
        import anthropic

        if self._client is None and not has_credentials():
            raise CompletionError(NO_CREDENTIALS, retryable=False)
        base_url = str(self.client.base_url)
        structured = request.json_schema is not None and not await asyncio.to_thread(
            self.capabilities.refuses_structured, base_url, self.model
        )
        try:
            message = await self._send(request, structured)
        except anthropic.APIStatusError as e:
            if not (structured and refuses_structured_output(e)):
                raise self._failure(e) from None
            await asyncio.to_thread(self.capabilities.remember_refusal, base_url, self.model)
            try:
                message = await self._send(request, False)
            except Exception as e2:
                raise self._failure(e2) from None
        except Exception as e:
            raise self._failure(e) from None
        return "".join(b.text for b in message.content if getattr(b, "type", "") == "text")

    def _timeout(self) -> Any:
        # The SDK takes seconds to load: only when the memory model is asked.
        import anthropic

        # Connecting keeps the SDK's own bound (5 s) when the idle timeout is longer.
        connect = min(self.idle_timeout, anthropic.DEFAULT_TIMEOUT.connect or self.idle_timeout)
        return anthropic.Timeout(self.idle_timeout, connect=connect)

    def _failure(self, err: Exception) -> CompletionError:
        """The one-line reason of a failed attempt; an idle stream's names the idle timeout."""
        # The SDK and its HTTP client take seconds to load: only after a request to the model failed.
        import anthropic
        import httpx2

        # Before the headers the SDK wraps the transport's timeout; mid-stream it surfaces bare.
        cause = err.__cause__ if isinstance(err, anthropic.APITimeoutError) else err
        if isinstance(cause, httpx2.ConnectTimeout | httpx2.PoolTimeout):
            within = self._timeout().connect or self.idle_timeout
            return CompletionError(f"no connection to the memory model within {within:g} s", retryable=True)
        if isinstance(cause, httpx2.TimeoutException):
            return CompletionError(
                f"no data from the memory model for {self.idle_timeout:g} s", retryable=True
            )
        if isinstance(err, httpx2.TransportError):
            # A connection dropped mid-stream surfaces bare too: a failed attempt, tried again.
            detail = " ".join(str(err).split())[:200] or type(err).__name__
            return CompletionError(f"the memory model's stream broke: {detail}", retryable=True)
        msg, retryable = describe_error(err, model=self.model, model_switch=MEMORY_MODEL_SWITCH)
        return CompletionError(msg, retryable=retryable)

    async def _send(self, request: CompletionRequest, structured: bool) -> Any:
        """One streamed request, read to its final message (errors surface as SDK exceptions);
        ``structured``: with the request's JSON schema as the output format.

        Every read (the headers, then each chunk of the body) waits at most ``idle_timeout``: a
        read timeout, not a bound on the whole request."""
        schema = {"format": {"type": "json_schema", "schema": request.json_schema}}
        output = {STRUCTURED_PARAM: schema} if structured else {}
        async with self.client.messages.stream(
            model=self.model,
            max_tokens=request.max_tokens,
            system=request.system,
            messages=[{"role": "user", "content": request.prompt}],
            **output,
            timeout=self._timeout(),
        ) as stream:
            message = await stream.get_final_message()
        if self.on_usage is not None and getattr(message, "usage", None) is not None:
            try:
                self.on_usage(self.model, usage_of(message.usage))
            except Exception:
                # A cost display must never fail a memory job that has its answer.
                log.exception("memory model: the on_usage callback failed")
        return message
