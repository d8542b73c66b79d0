"""The streaming model provider: a small event interface and its implementation over the SDK.

The provider alone speaks the wire's JSON: a request's typed messages and system blocks
(app/agent/conversation/blocks.py) become the API's JSON here, and a response's blocks come
back typed — thinking with its signature, redacted thinking, server tool blocks and blocks of
types the product does not know included, so they go back to the model unchanged. The thinking
streams as ``ThinkingDelta`` events too (shown by the app, never printed); what a request asks
of it (a budget, or adaptive for a model that refuses one) is app/agent/model/thinking.py's.

The SDK retries HTTP errors itself (for the main model). What it does not retry is a failure
*inside* a stream: an ``error`` event, a connection dropped mid-body, or a stream that ends with
no stop reason. The provider retries those, with backoff and a bound, and tells the caller to
discard the partial response (``Retrying``) so a partial turn is never stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import JsonValue

from app.agent.conversation.blocks import Block, JsonObject, Message, TextBlock, parse_blocks
from app.agent.model.thinking import refuses_budgeted_thinking, thinking_param
from memory.text.redact import redact

if TYPE_CHECKING:
    from app.agent.tools.tool import ToolParam

# -- events -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextDelta:
    text: str
    depth: int = 0  # 0: the top-level agent; n: a sub-agent n levels down (set by the Runner)


@dataclass(frozen=True)
class ThinkingDelta:
    """The model's thinking as it streams: one at a thinking block's start (its text may never
    come: a display that omits it), then one per chunk; ``redacted``: a redacted block (no text)."""

    text: str
    depth: int = 0
    redacted: bool = False


@dataclass(frozen=True)
class ToolUseStart:
    id: str
    name: str
    depth: int = 0


@dataclass(frozen=True)
class ToolUseArgs:
    id: str
    partial_json: str
    depth: int = 0


@dataclass(frozen=True)
class ToolUseComplete:
    id: str
    name: str
    input: JsonObject


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    # Searches the server tool made (``web_search``'s side request): billed per search.
    web_search_requests: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.web_search_requests += other.web_search_requests

    def describe(self) -> str:
        text = (
            f"{self.input_tokens} in, {self.output_tokens} out, "
            f"{self.cache_read_input_tokens} cache read, {self.cache_creation_input_tokens} cache write"
        )
        if self.web_search_requests:
            text += f", {self.web_search_requests} web search{'es' if self.web_search_requests > 1 else ''}"
        return text


@dataclass(frozen=True)
class UsageEvent:
    """The usage of one model request (the Runner also sums them per Run). ``model``: the model
    that answered it when it is not the Run's own (a tool's side request, ``web_search``'s)."""

    usage: Usage
    depth: int = 0
    model: str = ""


@dataclass(frozen=True)
class Retrying:
    """The response so far is void: discard its partial output; a new attempt follows."""

    reason: str
    attempt: int
    delay: float
    depth: int = 0


_OVERFLOW_HINTS = ("prompt is too long", "context window", "context length", "too many tokens")


def is_overflow(message: str) -> bool:
    """Whether an error says the request was larger than the model's context window."""
    low = message.lower()
    return any(h in low for h in _OVERFLOW_HINTS)


# Stop reasons of a response that is the model's complete answer.
COMPLETED_STOPS = frozenset({"end_turn", "stop_sequence"})


@dataclass(frozen=True)
class Stop:
    """The response is complete. ``content`` holds its blocks, every one the model sent."""

    reason: str | None
    content: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class ErrorEvent:
    """The request failed for good. ``message`` is one line, written for a person."""

    message: str
    kind: str = "error"


ProviderEvent = (
    TextDelta
    | ThinkingDelta
    | ToolUseStart
    | ToolUseArgs
    | ToolUseComplete
    | UsageEvent
    | Retrying
    | Stop
    | ErrorEvent
)


@dataclass
class ModelRequest:
    model: str
    system: list[TextBlock]
    messages: list[Message]
    tools: list[ToolParam] = field(default_factory=list)
    max_tokens: int = 16000
    thinking_budget: int = 0  # tokens of extended thinking (below max_tokens); 0: none


class Provider(Protocol):
    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...


# -- errors -------------------------------------------------------------------------------------


class _StreamBroken(Exception):
    """A failure inside a stream that a new attempt may fix."""


NO_CREDENTIALS = (
    "no credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), and ANTHROPIC_BASE_URL for "
    "another Anthropic-compatible endpoint"
)


def has_credentials() -> bool:
    env = os.environ
    return bool(
        env.get("ANTHROPIC_API_KEY")
        or env.get("ANTHROPIC_AUTH_TOKEN")
        or env.get("ANTHROPIC_PROFILE")
        or env.get("ANTHROPIC_IDENTITY_TOKEN")
        or env.get("ANTHROPIC_IDENTITY_TOKEN_FILE")
    )


def _api_message(err: Any) -> str:
    msg = getattr(err, "api_message", None) or getattr(err, "message", None) or str(err)
    return " ".join(str(msg).split())[:300]


# How a person picks another main model: the flag from the shell, the slash command in the app.
MODEL_FLAG = "--model"
MODEL_COMMAND = "/model"


def describe_error(
    err: BaseException, *, model: str = "", base_url: str = "", model_switch: str = MODEL_FLAG
) -> tuple[str, bool]:
    """(one-line message, retryable) for an exception raised by the SDK.

    An unknown model (404) names ``model_switch``, what this face offers to choose another one.
    Credentials are redacted (a base URL may carry ``user:password@``): the message is shown
    on the terminal and kept in the session log.
    """
    msg, retryable = _describe_error(err, model=model, base_url=base_url, model_switch=model_switch)
    return redact(msg), retryable


def _describe_error(err: BaseException, *, model: str, base_url: str, model_switch: str) -> tuple[str, bool]:
    # The SDK takes seconds to load: only once a model was asked (its error is in hand).
    import anthropic

    where = base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    if isinstance(err, anthropic.AuthenticationError):
        return (f"the API refused the credentials (401): {_api_message(err)}; check ANTHROPIC_API_KEY", False)
    if isinstance(err, anthropic.PermissionDeniedError):
        return (f"permission denied (403): {_api_message(err)}", False)
    if isinstance(err, anthropic.NotFoundError):
        return (f"unknown model {model!r} (404): {_api_message(err)}; choose one with {model_switch}", False)
    if isinstance(err, anthropic.RateLimitError):
        return (f"rate limited (429): {_api_message(err)}; wait a moment and try again", True)
    if isinstance(err, anthropic.InternalServerError) and getattr(err, "status_code", 0) == 529:
        return (f"the API is overloaded (529): {_api_message(err)}; try again shortly", True)
    if isinstance(err, anthropic.BadRequestError):
        return (f"the API refused the request (400): {_api_message(err)}", False)
    if isinstance(err, anthropic.APIStatusError):
        status = getattr(err, "status_code", 0)
        kind = getattr(err, "type", None) or "api_error"
        if status == 200:  # an error event inside a stream
            return (f"the stream failed ({kind}): {_api_message(err)}", True)
        return (f"API error ({status}, {kind}): {_api_message(err)}", status >= 500 or status in (408, 409))
    if isinstance(err, anthropic.APITimeoutError):
        return (f"the request to {where} timed out", True)
    if isinstance(err, anthropic.APIConnectionError):
        cause = err.__cause__ or err.__context__
        detail = (
            "connection refused"
            if "refused" in str(cause).lower() or "refused" in str(err).lower()
            else str(cause or err)
        )
        return (f"cannot connect to {where}: {' '.join(detail.split())[:200]}", True)
    if isinstance(err, TypeError) and "authentication" in str(err).lower():
        return (NO_CREDENTIALS, False)
    return (f"{type(err).__name__}: {' '.join(str(err).split())[:300]}", False)


def _is_transport_error(err: BaseException) -> bool:
    mod = type(err).__module__
    return mod.startswith(("httpx2", "httpcore2", "httpx", "httpcore", "h11")) or isinstance(
        err, ConnectionError | asyncio.IncompleteReadError
    )


def _usage(u: Any) -> Usage:
    if isinstance(u, dict):
        usage = Usage(**{name: _count(u.get(name)) for name in _USAGE_FIELDS})
        usage.web_search_requests = _count(_obj(u.get("server_tool_use")).get("web_search_requests"))
        return usage
    return Usage(
        input_tokens=getattr(u, "input_tokens", 0) or 0,
        output_tokens=getattr(u, "output_tokens", 0) or 0,
        cache_read_input_tokens=getattr(u, "cache_read_input_tokens", 0) or 0,
        cache_creation_input_tokens=getattr(u, "cache_creation_input_tokens", 0) or 0,
        web_search_requests=_count(getattr(getattr(u, "server_tool_use", None), "web_search_requests", 0)),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _obj(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


# Blocks whose input the stream sends as ``input_json_delta`` chunks.
_INPUT_BLOCKS = ("tool_use", "server_tool_use")
# Blocks whose text the stream sends in deltas: the delta's type and the field it fills.
_TEXT_DELTAS = {"text_delta": "text", "thinking_delta": "thinking"}


class _Accumulated:
    """One response built from its raw stream events, decoded JSON (what the SDK's MessageStream
    keeps, without its per-event snapshot or typed objects): the events the Runner needs, then
    the blocks, usage and stop reason. Every block is kept as the start event gave it, with its
    text, thinking, signature, citations and input filled from the deltas. The server's JSON is
    not trusted to have its shape: a field of the wrong type is treated as absent."""

    def __init__(self) -> None:
        self.started = False
        self.stop_reason: str | None = None
        self.usage = Usage()
        self.notes: list[str] = []
        self._blocks: dict[int, JsonObject] = {}  # each block's JSON, as its start event gave it
        self._calls: dict[int, tuple[str, str]] = {}  # the tool calls' (id, name), by block
        self._parts: dict[int, list[str]] = {}  # text, thinking or input JSON per block, joined once

    def take(self, ev: JsonObject) -> list[ProviderEvent]:
        t = ev.get("type")
        raw_index = ev.get("index")
        index = raw_index if isinstance(raw_index, int) else -1
        if t == "content_block_delta":
            return self._delta(index, _obj(ev.get("delta")))
        if t == "content_block_start":
            return self._start(index, _obj(ev.get("content_block")))
        if t == "content_block_stop":
            return self._stop(index)
        if t == "message_start":
            self.started = True
            self.usage = _usage(_obj(_obj(ev.get("message")).get("usage")))
        elif t == "message_delta":
            reason = _obj(ev.get("delta")).get("stop_reason")
            self.stop_reason = reason if isinstance(reason, str) and reason else self.stop_reason
            u = _obj(ev.get("usage"))
            for name in _USAGE_FIELDS:
                if name in u and u[name] is not None:  # a field the delta carries replaces the start's
                    setattr(self.usage, name, _count(u[name]))
        return []

    def _delta(self, index: int, d: JsonObject) -> list[ProviderEvent]:
        kind = d.get("type")
        block = self._blocks.get(index)
        if kind == "text_delta" or kind == "thinking_delta":
            text = d.get(_TEXT_DELTAS[kind])
            if isinstance(text, str) and text:
                self._parts.setdefault(index, []).append(text)
                return [TextDelta(text)] if kind == "text_delta" else [ThinkingDelta(text)]
        elif kind == "input_json_delta":
            part = d.get("partial_json")
            part = part if isinstance(part, str) else ""
            self._parts.setdefault(index, []).append(part)
            if index in self._calls:
                return [ToolUseArgs(self._calls[index][0], part)]
        elif kind == "signature_delta" and block is not None and isinstance(d.get("signature"), str):
            block["signature"] = d["signature"]
        elif kind == "citations_delta" and block is not None and "citation" in d:
            cited = block.get("citations")
            block["citations"] = [*(cited if isinstance(cited, list) else []), d["citation"]]
        return []

    def _start(self, index: int, b: JsonObject) -> list[ProviderEvent]:
        kind = b.get("type")
        if not isinstance(kind, str):
            return []
        block = dict(b)
        self._blocks[index] = block
        field_name = "text" if kind == "text" else "thinking" if kind == "thinking" else None
        if field_name is not None and isinstance(text := b.get(field_name), str) and text:
            self._parts.setdefault(index, []).append(text)
        if kind in ("thinking", "redacted_thinking"):
            # Shown from its start: a thinking block's text may never come (an omitting display).
            start = "".join(self._parts.get(index, []))
            return [ThinkingDelta(start, redacted=kind == "redacted_thinking")]
        if kind == "tool_use":
            call_id, name = str(b.get("id", "")), str(b.get("name", ""))
            block["id"], block["name"] = call_id, name
            self._calls[index] = (call_id, name)
            return [ToolUseStart(call_id, name)]
        return []

    def _stop(self, index: int) -> list[ProviderEvent]:
        block = self._blocks.get(index)
        if block is None or block.get("type") not in _INPUT_BLOCKS:
            return []
        if index in self._parts or not isinstance(block.get("input"), dict):
            block["input"] = _tool_input("".join(self._parts.pop(index, [])))
        if index not in self._calls:
            return []
        call_id, name = self._calls[index]
        tool_input = block["input"]
        return [ToolUseComplete(call_id, name, dict(tool_input) if isinstance(tool_input, dict) else {})]

    def blocks(self) -> list[Block]:
        out: list[JsonValue] = []
        for index in sorted(self._blocks):
            block = dict(self._blocks[index])
            kind = str(block["type"])
            if kind in ("text", "thinking"):
                block[kind] = "".join(self._parts.get(index, []))
            elif kind == "tool_use" and not isinstance(block.get("input"), dict):
                block["input"] = {}
            out.append(block)
        return parse_blocks(out, self.notes)


async def _sse_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str, str]]:
    """``(event, data)`` of each server-sent event in a byte stream (lines end in LF, CRLF or CR;
    a data field over several lines is joined by LF; comments and other fields are skipped)."""
    buf = b""
    async for chunk in chunks:
        buf += chunk
        if b"\r" in buf:
            # A CR at the very end may be the first half of a CRLF: it waits for the next chunk.
            head, tail = (buf[:-1], buf[-1:]) if buf.endswith(b"\r") else (buf, b"")
            buf = head.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + tail
        *blocks, buf = buf.split(b"\n\n")
        for block in blocks:
            if event := _sse_event(block):
                yield event
    if buf.strip() and (event := _sse_event(buf.replace(b"\r", b""))):
        yield event


def _sse_event(block: bytes) -> tuple[str, str] | None:
    name, data = "message", []
    for line in block.decode("utf-8", "replace").split("\n"):
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return (name, "\n".join(data)) if data else None


def _tool_input(raw: str) -> JsonObject:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def retry_base_delay() -> float:
    # Seconds before the first in-stream retry; tests shorten it through the environment.
    try:
        return max(0.0, float(os.environ.get("PSEUDOCLAUDE_RETRY_DELAY", "1")))
    except ValueError:
        return 1.0


class AnthropicProvider:
    """``AsyncAnthropic(...).messages.stream(...)`` with the runtime's own in-stream retries.

    ``model_switch``: what an unknown-model error tells the person to use (``--model`` from the
    shell; the app passes ``/model``)."""

    def __init__(
        self,
        client: Any | None = None,
        *,
        max_stream_attempts: int = 3,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        base_delay: float | None = None,
        model_switch: str = MODEL_FLAG,
    ) -> None:
        self._client = client
        self.model_switch = model_switch
        self.max_stream_attempts = max_stream_attempts
        self.sleep = sleep
        self.base_delay = retry_base_delay() if base_delay is None else base_delay
        self._adaptive: set[str] = set()  # models that refused a thinking budget (app.agent.model.thinking)

    @property
    def client(self) -> Any:
        if self._client is None:
            # The SDK takes seconds to load: only when a model is first asked, not at start-up.
            import anthropic

            # The SDK's own environment handling (key, token, base URL) stays in charge.
            self._client = anthropic.AsyncAnthropic()
        return self._client

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self._client is None and not has_credentials():
            yield ErrorEvent(NO_CREDENTIALS, kind="credentials")
            return
        if self._client is None:
            # Building the client loads TLS certificates from disk: not on the event loop.
            await asyncio.to_thread(lambda: self.client)
        attempt = 0
        while True:
            attempt += 1
            try:
                async for event in self._one_attempt(request):
                    yield event
                return
            except _StreamBroken as e:
                reason = str(e)
            except Exception as e:
                if self._thinks_adaptively(request, e):
                    continue  # nothing was streamed: the same request, with adaptive thinking
                if _is_transport_error(e):
                    reason = f"connection dropped mid-response ({type(e).__name__})"
                else:
                    msg, retryable = describe_error(
                        e, model=request.model, base_url=self._base_url(), model_switch=self.model_switch
                    )
                    # The SDK takes seconds to load: loaded here only after a request was made.
                    import anthropic

                    in_stream = (
                        isinstance(e, anthropic.APIStatusError) and getattr(e, "status_code", 0) == 200
                    )
                    if not (retryable and in_stream):
                        # HTTP errors were already retried by the SDK: this one is final.
                        yield ErrorEvent(msg)
                        return
                    reason = msg
            if attempt >= self.max_stream_attempts:
                yield ErrorEvent(redact(f"{reason}; gave up after {attempt} attempts"))
                return
            delay = self.base_delay * (2 ** (attempt - 1))
            yield Retrying(redact(reason), attempt, delay)
            await self.sleep(delay)

    async def aclose(self) -> None:
        """Close the SDK client's connections (on the loop that used them)."""
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    def _thinks_adaptively(self, request: ModelRequest, err: Exception) -> bool:
        """Whether ``err`` is the model refusing a thinking budget the first time: it gets
        adaptive thinking from now on."""
        if not request.thinking_budget or request.model in self._adaptive:
            return False
        if not refuses_budgeted_thinking(err):
            return False
        self._adaptive.add(request.model)
        return True

    def _base_url(self) -> str:
        try:
            return str(self.client.base_url)
        except Exception:
            return ""

    async def _one_attempt(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        # The one place the conversation becomes the wire's JSON.
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "system": [b.model_dump(mode="json") for b in request.system],
            "messages": [m.model_dump(mode="json") for m in request.messages],
        }
        if request.tools:
            params["tools"] = request.tools
        thinking = thinking_param(request.thinking_budget, request.model in self._adaptive)
        if thinking is not None:
            params["thinking"] = thinking
        # The raw event stream, decoded and accumulated here: the SDK's MessageStream helper
        # rebuilds a snapshot of the whole message on every event, and its plain stream builds a
        # typed object per event (together most of the CPU per token at 2,000 tokens/s).
        message = _Accumulated()
        async with self.client.messages.with_streaming_response.create(**params, stream=True) as response:
            async for name, data in _sse_events(response.iter_bytes()):
                if name == "ping":
                    continue
                try:
                    ev = json.loads(data)
                except ValueError:
                    raise _StreamBroken("the stream sent an event that is not JSON") from None
                if name == "error":
                    # As the SDK's own stream raises it: a status error of the 200 response.
                    raise self.client._make_status_error(str(ev), body=ev, response=response.http_response)
                if isinstance(ev, dict):
                    for out in message.take(ev):
                        yield out
        if not message.started:
            raise _StreamBroken("the stream ended before the message started")
        if message.stop_reason is None:
            raise _StreamBroken("the stream ended without a stop reason")
        yield UsageEvent(message.usage)
        yield Stop(message.stop_reason, message.blocks())
