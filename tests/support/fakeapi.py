"""A local fake of the Anthropic Messages API that speaks the real wire format.

The real ``anthropic`` SDK (httpx2 underneath, which respx/pytest-httpx cannot intercept) talks to
it over a real socket, so tests exercise the SDK end to end: request building, SSE decoding, error
mapping, retries. The server runs in its own threads (``http.server`` + ``socketserver``), so it is
independent of a test's event loop and equally usable by a CLI started in a subprocess with
``ANTHROPIC_BASE_URL`` pointing at it.

Usage::

    with FakeAnthropic() as server:
        server.script("claude-sonnet-5-5", text("Hello there"), tool_use("read_file", {"path": "a"}))
        client = anthropic.AsyncAnthropic(api_key="test", base_url=server.base_url, max_retries=0)
        ...
        assert server.requests_for("claude-sonnet-5-5")[0].headers["authorization"] == "Bearer test"

Wire format (matching the SDK's ``types`` and ``_streaming``):

* ``POST /v1/messages`` with ``"stream": true`` answers ``text/event-stream`` with chunked transfer
  encoding (so a dropped connection is a detectable protocol error, not a clean end of body), one
  ``event: <type>\\ndata: <json>\\n\\n`` per event, in the order ``message_start``,
  ``content_block_start``, ``ping`` (after the first block start, like the real API),
  ``content_block_delta``..., ``content_block_stop`` (repeated per block), ``message_delta``,
  ``message_stop``. Without ``stream`` it answers one ``Message`` JSON object with Content-Length.
* Errors are ``{"type": "error", "error": {"type": ..., "message": ...}, "request_id": ...}`` with a
  ``request-id`` header, like the real API.
* Every scripted response is consumed by the first ``/v1/messages`` request whose body ``model``
  equals the scripted model (``"*"`` scripts for any model, used after the model's own queue). A
  request with nothing scripted gets HTTP 500 ``api_error`` "fake server: no scripted response for
  model X" with ``x-should-retry: false`` (so SDK retries do not hide it) and is recorded with
  ``outcome="unscripted"``.
* ``validate=True`` (the default) makes the server refuse, like the real API, with a 400
  ``invalid_request_error`` a body that lacks ``model``/``max_tokens``/``messages`` or whose
  conversation has a ``tool_use`` without a matching ``tool_result`` in the next message (or a
  ``tool_result`` without its ``tool_use``), or whose roles do not alternate starting with
  ``user``. Such requests consume no scripted response.
* ``context_window=N`` reports each request's estimated size (:func:`request_tokens`) as its
  ``input_tokens`` and refuses one above ``N`` tokens with the real API's 400 "prompt is too long".

Event indices (for ``hold_at`` / ``after_events``) count every SSE event written, pings included:
for ``text("a b")`` they are 0 message_start, 1 content_block_start, 2 ping, 3 delta "a",
4 delta " b", 5 content_block_stop, 6 message_delta, 7 message_stop. ``None`` (the default for
holds and faults) means "right after the first content_block_delta"; for ``truncated`` it means
"everything before message_delta". A non-streaming request honours ``hold_before`` and
``hold_after`` alike by holding before its JSON is written.

:meth:`Reply.paced` makes a slow model: a wait before each streamed event after the first, and
optionally extra pings after the first one (a model that thinks, keeping its stream alive).

Tests that run the SDK in their own event loop wait with the ``*_async`` helpers
(:meth:`Gate.wait_reached_async`, :meth:`FakeAnthropic.wait_for_requests_async`) so the loop keeps
sending the request being waited for. Nothing here sleeps: every wait is on an event with a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import re
import socket
import threading
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self
from urllib.parse import urlsplit

__all__ = [
    "ERROR_STATUS",
    "CitedTextBlock",
    "Conditional",
    "FakeAnthropic",
    "Fault",
    "Gate",
    "HttpError",
    "RawBlock",
    "Recorded",
    "Reply",
    "Response",
    "ServerToolUseBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "cited_text_block",
    "drop_connection",
    "http_error",
    "message",
    "raw_block",
    "reject_param",
    "request_tokens",
    "server_tool_block",
    "stream_error",
    "text",
    "text_block",
    "thinking_block",
    "tool_block",
    "tool_use",
    "truncated",
    "web_citation",
    "web_search_error_block",
    "web_search_reply",
    "web_search_results_block",
    "when_param",
]

StopReason = Literal[
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
]

#: The API's error types and the HTTP status each one comes with.
ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_STATUS_TYPE = {status: type_ for type_, status in ERROR_STATUS.items()}
_DEFAULT_MESSAGES = {
    "invalid_request_error": "Invalid request",
    "authentication_error": "invalid x-api-key",
    "billing_error": "Your credit balance is too low",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "timeout_error": "Request timed out",
    "overloaded_error": "Overloaded",
}
_REASONS = {429: "Too Many Requests", 529: "Overloaded"}


# --------------------------------------------------------------------------------------------------
# Gates
# --------------------------------------------------------------------------------------------------


class Gate:
    """A barrier a scripted response waits at until the test calls :meth:`release`.

    One-shot: once released it stays open, so later responses using it pass straight through. A
    hold never outlasts ``timeout`` seconds (then the response goes on and ``timed_out`` is set), and
    :meth:`FakeAnthropic.stop` releases every gate, so a forgotten gate cannot hang a test run.
    """

    def __init__(self, name: str = "gate", *, timeout: float = 30.0) -> None:
        self.name = name
        self.timeout = timeout
        self.timed_out = False
        self._reached = threading.Event()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._hits = 0

    def __repr__(self) -> str:
        return f"Gate({self.name!r}, reached={self.reached}, released={self.released})"

    @property
    def reached(self) -> bool:
        """True once a response has arrived at this gate's hold point.

        For ``hold_after`` it is set just before the last event ahead of the hold is written, so a
        client that has received that event can rely on it being true already.
        """
        return self._reached.is_set()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    @property
    def hits(self) -> int:
        """How many responses have arrived at this gate."""
        with self._lock:
            return self._hits

    def release(self) -> None:
        self._released.set()

    def wait_reached(self, timeout: float = 5.0) -> bool:
        """Block until a response is held here (True) or ``timeout`` passes (False).

        Do not call this from an event loop that also runs the SDK client whose request must reach
        the gate: use :meth:`wait_reached_async` there.
        """
        return self._reached.wait(timeout)

    async def wait_reached_async(self, timeout: float = 5.0) -> bool:
        """Like :meth:`wait_reached`, without blocking the running event loop."""
        return await asyncio.to_thread(self._reached.wait, timeout)

    def _arrive(self) -> None:
        with self._lock:
            self._hits += 1
        self._reached.set()

    def _wait(self) -> None:
        if not self._released.wait(self.timeout):
            self.timed_out = True


# --------------------------------------------------------------------------------------------------
# Scripted responses
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextBlock:
    """A ``text`` content block, streamed as one ``text_delta`` per chunk."""

    text: str
    chunks: tuple[str, ...]


@dataclass(frozen=True)
class ToolUseBlock:
    """A ``tool_use`` content block, its input streamed as ``input_json_delta`` chunks."""

    id: str
    name: str
    input: Mapping[str, Any]
    json_chunks: tuple[str, ...]


@dataclass(frozen=True)
class ThinkingBlock:
    """A ``thinking`` block, streamed as one ``thinking_delta`` per chunk, then its signature in one
    ``signature_delta`` (as the real API sends it)."""

    thinking: str
    signature: str
    chunks: tuple[str, ...]


@dataclass(frozen=True)
class RawBlock:
    """Any other block, sent whole in its ``content_block_start`` with no delta: a
    ``redacted_thinking`` block, a server tool's blocks, or a type no client knows yet."""

    block: Mapping[str, Any]


@dataclass(frozen=True)
class CitedTextBlock:
    """A ``text`` block with citations (a web search's answer): its citations streamed first, one
    ``citations_delta`` each, then its text as one ``text_delta`` per chunk."""

    text: str
    chunks: tuple[str, ...]
    citations: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ServerToolUseBlock:
    """A ``server_tool_use`` block (the API's own tool, e.g. ``web_search``), its input streamed
    as ``input_json_delta`` chunks like a ``tool_use`` block's."""

    id: str
    name: str
    input: Mapping[str, Any]
    json_chunks: tuple[str, ...]


Block = TextBlock | ToolUseBlock | ThinkingBlock | RawBlock | CitedTextBlock | ServerToolUseBlock


@dataclass(frozen=True)
class Fault:
    """How a streamed reply goes wrong after ``after_events`` events (``None``: after the first delta).

    * ``error_event``: an SSE ``error`` event, then the body ends cleanly. A non-streaming request
      gets an HTTP error of the status that goes with ``error_type`` instead.
    * ``drop``: the socket is shut down mid-body (a non-streaming request gets half its JSON).
    * ``truncate``: the body ends cleanly without ``message_delta``/``message_stop`` (a
      non-streaming request gets the message with ``stop_reason: null``).
    """

    kind: Literal["error_event", "drop", "truncate"]
    after_events: int | None = None
    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass(frozen=True)
class Reply:
    """A scripted assistant message. Build it with :func:`text`, :func:`tool_use` or :func:`message`."""

    blocks: tuple[Block, ...]
    stop_reason: StopReason | None = "end_turn"
    stop_sequence: str | None = None
    stop_details: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] | None = None
    fault: Fault | None = None
    hold_before: Gate | None = None
    hold_after: Gate | None = None
    hold_at: int | None = None
    ping: bool = True
    headers: Mapping[str, str] = field(default_factory=dict)
    # A slow model: seconds waited before each event after the first (the server's stop cuts it
    # short), and extra pings after the first one (a model that thinks a while, keeping the
    # stream alive). Both off by default, so event indices stay as documented above.
    pace: float = 0.0
    extra_pings: int = 0

    def with_usage(self, **usage: Any) -> Reply:
        """A copy whose usage has these keys overridden (on top of earlier overrides)."""
        return replace(self, usage={**(self.usage or {}), **usage})

    def paced(self, seconds: float, *, extra_pings: int = 0) -> Reply:
        """A copy that waits ``seconds`` before each event after the first and sends
        ``extra_pings`` more pings right after the first ping (counted in event indices)."""
        if seconds < 0 or extra_pings < 0:
            raise ValueError("pace and extra_pings must not be negative")
        return replace(self, pace=seconds, extra_pings=extra_pings)

    def held(self, *, before: Gate | None = None, after: Gate | None = None, at: int | None = None) -> Reply:
        """A copy held at ``before`` (nothing sent) and/or after event ``at`` by ``after``."""
        return replace(
            self,
            hold_before=before or self.hold_before,
            hold_after=after or self.hold_after,
            hold_at=at if at is not None else self.hold_at,
        )


@dataclass(frozen=True)
class HttpError:
    """An HTTP error response with the API's JSON error body."""

    status: int
    type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    hold_before: Gate | None = None


@dataclass(frozen=True)
class Conditional:
    """``response`` answers a request only if its body has ``param`` (a dotted path such as
    ``"output_config.format"``). When it does not, the entry falls through: the next scripted
    response is used, and this entry is dropped from the queue unless ``sticky`` (a sticky entry
    stays in place and also keeps applying to every later matching request, which emulates an
    endpoint that never supports the parameter).
    """

    param: str
    response: Reply | HttpError
    sticky: bool = False

    def matches(self, body: Mapping[str, Any]) -> bool:
        node: Any = body
        for part in self.param.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return True


Response = Reply | HttpError | Conditional


def _split_words(value: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\s*\S+|\s+$", value))


def _split_size(value: str, size: int) -> tuple[str, ...]:
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    return tuple(value[i : i + size] for i in range(0, len(value), size))


def text_block(
    value: str, *, chunks: Sequence[str] | None = None, chunk_size: int | None = None
) -> TextBlock:
    """A text block. Default chunking: one delta per word (with its leading whitespace)."""
    if chunks is not None:
        if chunk_size is not None:
            raise ValueError("give chunks or chunk_size, not both")
        if "".join(chunks) != value:
            raise ValueError(f"chunks {list(chunks)!r} do not join to {value!r}")
        return TextBlock(value, tuple(chunks))
    if chunk_size is not None:
        return TextBlock(value, _split_size(value, chunk_size))
    words = _split_words(value)
    assert "".join(words) == value
    return TextBlock(value, words)


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def tool_block(
    name: str,
    input: Mapping[str, Any],
    *,
    id: str | None = None,
    json_chunks: Sequence[str] | None = None,
    json_chunk_size: int | None = None,
) -> ToolUseBlock:
    """A tool_use block. Its input goes out as ``input_json_delta`` chunks: an empty first chunk
    (as the real API sends), then the JSON cut into about three pieces (or ``json_chunk_size``
    characters each). ``json_chunks`` are sent as given and may be invalid JSON on purpose."""
    tool_id = id or f"toolu_fake_{uuid.uuid4().hex[:20]}"
    if json_chunks is not None:
        return ToolUseBlock(tool_id, name, dict(input), tuple(json_chunks))
    # Like a real server, a lone surrogate goes out as its JSON escape (the wire stays UTF-8),
    # so the SDK hands the client the lone surrogate a hostile or broken server can produce.
    encoded = _SURROGATE_RE.sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(dict(input), ensure_ascii=False)
    )
    size = json_chunk_size or max(1, math.ceil(len(encoded) / 3))
    return ToolUseBlock(tool_id, name, dict(input), ("", *_split_size(encoded, size)))


def thinking_block(thinking: str, signature: str, *, chunk_size: int | None = None) -> ThinkingBlock:
    """A thinking block. Default chunking: one delta per word (with its leading whitespace)."""
    chunks = _split_size(thinking, chunk_size) if chunk_size is not None else _split_words(thinking)
    return ThinkingBlock(thinking, signature, chunks)


def raw_block(block: Mapping[str, Any]) -> RawBlock:
    """A block sent as it is (it must have a ``type``)."""
    if not isinstance(block.get("type"), str):
        raise ValueError("a block needs a type")
    return RawBlock(dict(block))


def web_citation(url: str, title: str, cited_text: str = "cited words") -> dict[str, Any]:
    """A ``web_search_result_location`` citation of a web search's answer."""
    return {
        "type": "web_search_result_location",
        "url": url,
        "title": title,
        "cited_text": cited_text,
        "encrypted_index": f"enc-{uuid.uuid4().hex[:12]}",
    }


def cited_text_block(value: str, *citations: Mapping[str, Any]) -> CitedTextBlock:
    """A text block citing ``citations`` (see :func:`web_citation`); one delta per word."""
    words = _split_words(value)
    return CitedTextBlock(value, words, tuple(dict(c) for c in citations))


def server_tool_block(name: str, input: Mapping[str, Any], *, id: str | None = None) -> ServerToolUseBlock:
    """A ``server_tool_use`` block; its input goes out in about three ``input_json_delta`` chunks
    after an empty one, as a ``tool_use`` block's does."""
    block_id = id or f"srvtoolu_fake_{uuid.uuid4().hex[:20]}"
    encoded = json.dumps(dict(input), ensure_ascii=False)
    size = max(1, math.ceil(len(encoded) / 3))
    return ServerToolUseBlock(block_id, name, dict(input), ("", *_split_size(encoded, size)))


def web_search_results_block(
    tool_use_id: str, results: Sequence[tuple[str, str]] | Sequence[tuple[str, str, str | None]]
) -> RawBlock:
    """A ``web_search_tool_result`` block answering ``tool_use_id`` with pages given as
    ``(url, title)`` or ``(url, title, page_age)``; sent whole, as the API sends it."""
    pages = []
    for result in results:
        url, title, *rest = result
        page: dict[str, Any] = {
            "type": "web_search_result",
            "url": url,
            "title": title,
            "encrypted_content": f"enc-{uuid.uuid4().hex[:16]}",
        }
        page["page_age"] = rest[0] if rest else None
        pages.append(page)
    return RawBlock({"type": "web_search_tool_result", "tool_use_id": tool_use_id, "content": pages})


def web_search_error_block(tool_use_id: str, error_code: str) -> RawBlock:
    """A ``web_search_tool_result`` block whose search failed (``max_uses_exceeded``,
    ``too_many_requests``, ``invalid_tool_input``, ``query_too_long``, ``unavailable``)."""
    content = {"type": "web_search_tool_result_error", "error_code": error_code}
    return RawBlock({"type": "web_search_tool_result", "tool_use_id": tool_use_id, "content": content})


def web_search_reply(
    query: str,
    results: Sequence[tuple[str, str]] | Sequence[tuple[str, str, str | None]],
    answer: str,
    *,
    cite: int | None = 0,
    stop_reason: StopReason | None = "end_turn",
    usage: Mapping[str, Any] | None = None,
) -> Reply:
    """A web model's answer to ``web_search``'s side request, as the API gives it: a sentence
    before the search, the search (``server_tool_use``), its results, then ``answer`` citing the
    result at index ``cite`` (None: no citation). Its usage counts one search."""
    call = server_tool_block("web_search", {"query": query})
    cited: list[Mapping[str, Any]] = []
    if cite is not None and results:
        url, title, *_ = results[cite]
        cited.append(web_citation(url, title))
    return message(
        text_block("I'll search for that."),
        call,
        web_search_results_block(call.id, results),
        cited_text_block(answer, *cited),
        stop_reason=stop_reason,
        usage={"server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0}, **(usage or {})},
    )


def message(
    *blocks: Block,
    stop_reason: StopReason | None = "end_turn",
    stop_sequence: str | None = None,
    stop_details: Mapping[str, Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    hold_before: Gate | None = None,
    hold_after: Gate | None = None,
    hold_at: int | None = None,
    ping: bool = True,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """A reply made of any blocks (e.g. text, then two tool calls).

    ``usage`` overrides keys of the default usage (``input_tokens`` 10, ``output_tokens`` = number
    of deltas, ``cache_creation_input_tokens`` 0, ``cache_read_input_tokens`` 0); extra keys such as
    ``service_tier`` are passed through in ``message_start`` and the non-streaming message.
    """
    if stop_sequence is not None and stop_reason == "end_turn":
        stop_reason = "stop_sequence"
    return Reply(
        blocks=tuple(blocks),
        stop_reason=stop_reason,
        stop_sequence=stop_sequence,
        stop_details=stop_details,
        usage=usage,
        hold_before=hold_before,
        hold_after=hold_after,
        hold_at=hold_at,
        ping=ping,
        headers=dict(headers or {}),
    )


def text(
    value: str,
    *,
    chunks: Sequence[str] | None = None,
    chunk_size: int | None = None,
    stop_reason: StopReason | None = "end_turn",
    stop_sequence: str | None = None,
    stop_details: Mapping[str, Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    hold_before: Gate | None = None,
    hold_after: Gate | None = None,
    hold_at: int | None = None,
) -> Reply:
    """A one-text-block reply (``stop_reason`` end_turn unless overridden)."""
    return message(
        text_block(value, chunks=chunks, chunk_size=chunk_size),
        stop_reason=stop_reason,
        stop_sequence=stop_sequence,
        stop_details=stop_details,
        usage=usage,
        hold_before=hold_before,
        hold_after=hold_after,
        hold_at=hold_at,
    )


def tool_use(
    name: str,
    input: Mapping[str, Any],
    *,
    id: str | None = None,
    text_before: str | None = None,
    json_chunk_size: int | None = None,
    stop_reason: StopReason | None = "tool_use",
    usage: Mapping[str, Any] | None = None,
    hold_before: Gate | None = None,
    hold_after: Gate | None = None,
    hold_at: int | None = None,
) -> Reply:
    """A reply calling one tool (optionally after some text), ``stop_reason`` tool_use.

    The tool id (given or generated) is ``reply.blocks[-1].id``.
    """
    blocks: list[Block] = []
    if text_before is not None:
        blocks.append(text_block(text_before))
    blocks.append(tool_block(name, input, id=id, json_chunk_size=json_chunk_size))
    return message(
        *blocks,
        stop_reason=stop_reason,
        usage=usage,
        hold_before=hold_before,
        hold_after=hold_after,
        hold_at=hold_at,
    )


def http_error(
    status: int,
    type: str | None = None,
    message: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    retry_after: float | None = None,
    retry_after_ms: int | None = None,
    should_retry: bool | None = None,
    hold_before: Gate | None = None,
) -> HttpError:
    """An HTTP error. ``type`` defaults from the status (429 rate_limit_error, 529 overloaded_error…).

    ``retry_after``/``retry_after_ms`` set the ``retry-after``/``retry-after-ms`` headers the SDK
    honours when retrying; ``should_retry`` sets ``x-should-retry`` (which overrides the SDK's
    status-based retry decision).
    """
    error_type = (
        type or _STATUS_TYPE.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    )
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = (
            str(int(retry_after)) if float(retry_after).is_integer() else str(retry_after)
        )
    if retry_after_ms is not None:
        all_headers["retry-after-ms"] = str(retry_after_ms)
    if should_retry is not None:
        all_headers["x-should-retry"] = "true" if should_retry else "false"
    return HttpError(
        status=status,
        type=error_type,
        message=message if message is not None else _DEFAULT_MESSAGES.get(error_type, error_type),
        headers=all_headers,
        hold_before=hold_before,
    )


def stream_error(
    after_events: int | None = None,
    type: str = "overloaded_error",
    message: str | None = None,
    *,
    reply: Reply | None = None,
) -> Reply:
    """``reply`` (default: a short text) streamed up to ``after_events``, then an SSE ``error`` event."""
    base = reply if reply is not None else text("This answer is cut short by an error")
    fault = Fault("error_event", after_events, type, message or _DEFAULT_MESSAGES.get(type, type))
    return replace(base, fault=fault)


def drop_connection(after_events: int | None = None, *, reply: Reply | None = None) -> Reply:
    """``reply`` streamed up to ``after_events``, then the socket is shut down mid-body."""
    base = reply if reply is not None else text("This answer is cut short by a dropped connection")
    return replace(base, fault=Fault("drop", after_events))


def truncated(after_events: int | None = None, *, reply: Reply | None = None) -> Reply:
    """``reply`` streamed up to ``after_events`` (default: all but message_delta/message_stop), then
    a clean end of body: no stop reason ever arrives."""
    base = reply if reply is not None else text("This answer never gets a stop reason")
    return replace(base, fault=Fault("truncate", after_events))


def when_param(param: str, response: Reply | HttpError, *, sticky: bool = False) -> Conditional:
    """``response`` only for requests whose body has ``param``; see :class:`Conditional`."""
    if isinstance(response, Conditional):
        raise TypeError("conditions do not nest")
    return Conditional(param, response, sticky)


def reject_param(
    param: str,
    status: int = 400,
    type: str = "invalid_request_error",
    message: str | None = None,
    *,
    sticky: bool = False,
) -> Conditional:
    """Refuse a request that carries ``param`` (e.g. ``"output_config"``), as an endpoint without
    that feature does; a request without it falls through to the next scripted response."""
    return when_param(
        param,
        http_error(status, type, message or f"{param}: Extra inputs are not permitted"),
        sticky=sticky,
    )


# --------------------------------------------------------------------------------------------------
# Rendering replies to the wire format
# --------------------------------------------------------------------------------------------------

Event = tuple[str, dict[str, Any]]


def _deltas(block: Block) -> list[dict[str, Any]]:
    """The ``content_block_delta`` payloads that stream ``block``."""
    if isinstance(block, TextBlock):
        return [{"type": "text_delta", "text": chunk} for chunk in block.chunks]
    if isinstance(block, ToolUseBlock):
        return [{"type": "input_json_delta", "partial_json": chunk} for chunk in block.json_chunks]
    if isinstance(block, ThinkingBlock):
        thinking = [{"type": "thinking_delta", "thinking": chunk} for chunk in block.chunks]
        return [*thinking, {"type": "signature_delta", "signature": block.signature}]
    if isinstance(block, CitedTextBlock):
        cites = [{"type": "citations_delta", "citation": dict(c)} for c in block.citations]
        return [*cites, *({"type": "text_delta", "text": chunk} for chunk in block.chunks)]
    if isinstance(block, ServerToolUseBlock):
        return [{"type": "input_json_delta", "partial_json": chunk} for chunk in block.json_chunks]
    return []


def _usage(reply: Reply) -> dict[str, Any]:
    deltas = sum(len(_deltas(b)) for b in reply.blocks)
    usage: dict[str, Any] = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": max(1, deltas),
    }
    usage.update(reply.usage or {})
    return usage


def _block_json(block: Block, *, final: bool) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text if final else ""}
    if isinstance(block, ThinkingBlock):
        return {
            "type": "thinking",
            "thinking": block.thinking if final else "",
            "signature": block.signature if final else "",
        }
    if isinstance(block, RawBlock):
        return dict(block.block)
    if isinstance(block, CitedTextBlock):
        cited = [dict(c) for c in block.citations] if final else []
        return {"type": "text", "text": block.text if final else "", "citations": cited}
    if isinstance(block, ServerToolUseBlock):
        server_input = dict(block.input) if final else {}
        return {"type": "server_tool_use", "id": block.id, "name": block.name, "input": server_input}
    tool_input: Any = dict(block.input)
    if final:
        with contextlib.suppress(ValueError):
            tool_input = json.loads("".join(block.json_chunks) or "{}")
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input if final else {}}


def _message_json(reply: Reply, model: str, msg_id: str, *, stop: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_block_json(b, final=True) for b in reply.blocks],
        "stop_reason": reply.stop_reason if stop else None,
        "stop_sequence": reply.stop_sequence if stop else None,
        "usage": _usage(reply),
    }
    if reply.stop_details is not None and stop:
        body["stop_details"] = dict(reply.stop_details)
    return body


def _stream_events(reply: Reply, model: str, msg_id: str) -> tuple[list[Event], int]:
    """The SSE events of ``reply`` and the index just after its first content delta."""
    usage = _usage(reply)
    start_usage = {**usage, "output_tokens": 1}
    events: list[Event] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
    ]
    after_first_delta: int | None = None
    for index, block in enumerate(reply.blocks):
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": _block_json(block, final=False),
                },
            )
        )
        if index == 0 and reply.ping:
            events.extend([("ping", {"type": "ping"})] * (1 + reply.extra_pings))
        for delta in _deltas(block):
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
            if after_first_delta is None:
                after_first_delta = len(events)
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta: dict[str, Any] = {"stop_reason": reply.stop_reason, "stop_sequence": reply.stop_sequence}
    if reply.stop_details is not None:
        delta["stop_details"] = dict(reply.stop_details)
    delta_usage = {
        key: usage[key]
        for key in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
            "server_tool_use",
        )
        if key in usage
    }
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": delta_usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    if after_first_delta is None:
        after_first_delta = min(2, len(events))
    return events, after_first_delta


def _error_body(error_type: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": message}}
    if request_id is not None:
        body["request_id"] = request_id
    return body


# --------------------------------------------------------------------------------------------------
# Request validation (what the real API refuses)
# --------------------------------------------------------------------------------------------------


def _blocks_of(msg: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = msg.get("content")
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def request_tokens(body: Mapping[str, Any]) -> int:
    """The fake's token estimate of a request: what the model reads (system, tools, messages) as
    compact JSON characters / 4."""
    seen = {k: body.get(k) for k in ("system", "tools", "messages") if body.get(k) is not None}
    return max(1, len(json.dumps(seen, ensure_ascii=False, separators=(",", ":"))) // 4)


def _validate_messages_body(body: Any) -> str | None:
    if not isinstance(body, Mapping):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or isinstance(body["max_tokens"], bool):
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "messages: Field required"
    if not messages:
        return "messages: at least one message is required"
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping) or msg.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not isinstance(msg.get("content"), (str, list)):
            return f"messages.{i}.content: Field required"
        # Stricter than the API (which merges consecutive turns): the app must send a valid,
        # alternating conversation that starts with the user, also after a compaction.
        if i == 0 and msg["role"] != "user":
            return 'messages.0.role: the first message must use the "user" role'
        if i > 0 and msg["role"] == messages[i - 1].get("role"):
            return f'messages.{i}.role: roles must alternate between "user" and "assistant"'
    for i, msg in enumerate(messages):
        uses = [b.get("id") for b in _blocks_of(msg) if b.get("type") == "tool_use"]
        if msg["role"] == "user":
            results = [b.get("tool_use_id") for b in _blocks_of(msg) if b.get("type") == "tool_result"]
            prev = messages[i - 1] if i > 0 else None
            prev_uses = (
                {b.get("id") for b in _blocks_of(prev) if b.get("type") == "tool_use"}
                if prev is not None and prev.get("role") == "assistant"
                else set()
            )
            stray = [r for r in results if r not in prev_uses]
            if stray:
                return (
                    f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{', '.join(map(str, stray))}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
        if msg["role"] == "assistant" and uses:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = (
                {b.get("tool_use_id") for b in _blocks_of(nxt) if b.get("type") == "tool_result"}
                if nxt is not None and nxt.get("role") == "user"
                else set()
            )
            missing = [u for u in uses if u not in answered]
            if missing:
                return (
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(map(str, missing))}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message."
                )
    output_config = body.get("output_config")
    if output_config is not None:
        fmt = output_config.get("format") if isinstance(output_config, Mapping) else None
        if fmt is not None and (
            not isinstance(fmt, Mapping)
            or fmt.get("type") != "json_schema"
            or not isinstance(fmt.get("schema"), Mapping)
        ):
            return "output_config.format: expected {'type': 'json_schema', 'schema': {...}}"
    return None


# --------------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it. ``headers`` keys are lower-cased."""

    index: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    model: str | None
    outcome: str
    connection: int

    @property
    def stream(self) -> bool:
        return isinstance(self.body, Mapping) and self.body.get("stream") is True

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class _Dropped(Exception):
    """The handler shut the connection down on purpose."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeAnthropic


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    connection_id = 0

    def setup(self) -> None:
        super().setup()
        self.connection_id = self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.fake._track(self.connection, add=False)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (OSError, _Dropped):
            self.close_connection = True

    def _dispatch(self) -> None:
        try:
            self.server.fake._handle(self)
        except (OSError, _Dropped):
            raise
        except Exception:
            # A bug in the fake itself: keep it visible (FakeAnthropic.errors) and drop the connection.
            self.server.fake._note_error(traceback.format_exc())
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FakeAnthropic:
    """The fake API server. Use as a context manager, or call :meth:`start` and :meth:`stop`."""

    def __init__(
        self, *, host: str = "127.0.0.1", validate: bool = True, context_window: int | None = None
    ) -> None:
        self.host = host
        self.validate = validate
        # Set: each request's size is estimated (JSON characters / 4, as count_tokens does here),
        # reported as its input_tokens (unless a reply sets its own), and a request above the
        # window is refused like the real API ("prompt is too long").
        self.context_window = context_window
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queues: dict[str, deque[Response]] = {}
        self._responders: list[tuple[str, Callable[[Mapping[str, Any]], bool], Any]] = []
        self._requests: list[Recorded] = []
        self._gates: set[Gate] = set()
        self._connections: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._connection_ids = itertools.count(1)
        self._errors: list[str] = []
        self._stopping = False
        self._stopped = threading.Event()  # cuts a paced stream's waits short
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            return self
        server = _Server((self.host, 0), _Handler)
        server.fake = self
        self._server = server
        self._stopping = False
        self._stopped.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving: release every gate, close live connections, join the server thread."""
        server, thread = self._server, self._thread
        if server is None:
            return
        with self._lock:
            self._stopping = True
            self._stopped.set()
            gates = list(self._gates)
            connections = list(self._connections)
        for gate in gates:
            gate.release()
        server.shutdown()
        server.server_close()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if thread is not None:
            thread.join(timeout)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self, api_key: str = "test") -> dict[str, str]:
        """Environment variables pointing an SDK (e.g. in a subprocess) at this server."""
        return {
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": api_key,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    # -- scripting ---------------------------------------------------------------------------------

    def script(self, model: str, *responses: Response) -> None:
        """Queue ``responses`` for requests whose body ``model`` is ``model`` (``"*"``: any model)."""
        for response in responses:
            if not isinstance(response, (Reply, HttpError, Conditional)):
                raise TypeError(f"not a scripted response: {response!r}")
        with self._lock:
            self._queues.setdefault(model, deque()).extend(responses)

    def respond(
        self,
        model: str,
        when: Callable[[Mapping[str, Any]], bool],
        reply: Response | Callable[[Mapping[str, Any]], Response],
    ) -> None:
        """Answer every request for ``model`` (``"*"``: any) whose body satisfies ``when`` with
        ``reply`` (or ``reply(body)``), before the scripted queue and without consuming it — e.g. a
        summary request (a body without ``tools``) in the middle of a scripted conversation."""
        with self._lock:
            self._responders.append((model, when, reply))

    def gate(self, name: str = "gate", *, timeout: float = 30.0) -> Gate:
        gate = Gate(name, timeout=timeout)
        with self._lock:
            self._gates.add(gate)
        return gate

    def remaining(self, model: str | None = None) -> int:
        """How many scripted responses are still queued (for ``model``, or in all)."""
        with self._lock:
            if model is not None:
                return len(self._queues.get(model, ()))
            return sum(len(q) for q in self._queues.values())

    def reset(self) -> None:
        """Forget scripted responses and recorded requests."""
        with self._lock:
            self._queues.clear()
            self._requests.clear()
            self._responders.clear()

    # -- recorded requests -------------------------------------------------------------------------

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, model: str, *, path: str | None = "/v1/messages") -> list[Recorded]:
        """Recorded requests for ``model`` (to ``path``; ``None``: any path)."""
        with self._lock:
            return [r for r in self._requests if r.model == model and (path is None or r.path == path)]

    @property
    def errors(self) -> list[str]:
        """Tracebacks of exceptions inside the fake's own handlers (should stay empty)."""
        with self._lock:
            return list(self._errors)

    def unscripted(self) -> list[Recorded]:
        """Requests that found nothing scripted (answered with the explicit 500)."""
        with self._lock:
            return [r for r in self._requests if r.outcome == "unscripted"]

    def wait_for_requests(
        self, count: int, *, model: str | None = None, timeout: float = 5.0
    ) -> list[Recorded]:
        """Block until at least ``count`` requests (for ``model``) were recorded; TimeoutError if not."""

        def matching() -> list[Recorded]:
            return [r for r in self._requests if model is None or r.model == model]

        with self._changed:
            if not self._changed.wait_for(lambda: len(matching()) >= count, timeout):
                raise TimeoutError(f"{len(matching())} of {count} requests arrived within {timeout}s")
            return matching()

    async def wait_for_requests_async(
        self, count: int, *, model: str | None = None, timeout: float = 5.0
    ) -> list[Recorded]:
        return await asyncio.to_thread(self.wait_for_requests, count, model=model, timeout=timeout)

    # -- request handling (server threads) ---------------------------------------------------------

    def _note_error(self, text: str) -> None:
        with self._lock:
            self._errors.append(text)

    def _track(self, conn: socket.socket, *, add: bool) -> int:
        with self._lock:
            if add:
                self._connections.add(conn)
                return next(self._connection_ids)
            self._connections.discard(conn)
            return 0

    def _arrive(self, gate: Gate | None) -> bool:
        """Mark ``gate`` reached; False when no hold should happen (no gate, or stopping)."""
        if gate is None:
            return False
        with self._lock:
            if self._stopping:
                return False
            self._gates.add(gate)
        gate._arrive()
        return True

    def _hold(self, gate: Gate | None) -> None:
        if self._arrive(gate):
            assert gate is not None
            gate._wait()

    def _record(
        self, h: _Handler, path: str, query: str, headers: dict[str, str], body: Any, outcome: str
    ) -> None:
        model = (
            body.get("model") if isinstance(body, Mapping) and isinstance(body.get("model"), str) else None
        )
        with self._changed:
            self._requests.append(
                Recorded(
                    index=len(self._requests),
                    method=h.command,
                    path=path,
                    query=query,
                    headers=headers,
                    body=body,
                    model=model,
                    outcome=outcome,
                    connection=h.connection_id,
                )
            )
            self._changed.notify_all()

    def _select(self, model: str, body: Mapping[str, Any]) -> Reply | HttpError | None:
        with self._lock:
            responders = list(self._responders)
        for key, when, reply in responders:
            if key in (model, "*") and when(body):
                made = reply(body) if callable(reply) else reply
                if isinstance(made, Conditional):
                    raise TypeError("a responder answers with a Reply or an HttpError")
                return made
        with self._lock:
            for key in (model, "*"):
                queue = self._queues.get(key)
                if not queue:
                    continue
                i = 0
                while i < len(queue):
                    entry = queue[i]
                    if isinstance(entry, Conditional):
                        if entry.matches(body):
                            if not entry.sticky:
                                del queue[i]
                            return entry.response
                        if entry.sticky:
                            i += 1
                        else:
                            del queue[i]
                        continue
                    del queue[i]
                    return entry
        return None

    @staticmethod
    def _read_body(h: _Handler) -> bytes:
        if h.headers.get("transfer-encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += h.rfile.read(size)
                h.rfile.readline()
        length = int(h.headers.get("content-length") or 0)
        return h.rfile.read(length) if length else b""

    def _handle(self, h: _Handler) -> None:
        url = urlsplit(h.path)
        path, query = url.path.rstrip("/") or "/", url.query
        headers: dict[str, str] = {}
        for key, value in h.headers.items():
            k = key.lower()
            headers[k] = f"{headers[k]}, {value}" if k in headers else value
        raw = self._read_body(h)
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        request_id = f"req_fake_{next(self._ids):06d}"

        if h.command == "POST" and path == "/v1/messages":
            self._handle_messages(h, path, query, headers, body, request_id)
        elif h.command == "POST" and path == "/v1/messages/count_tokens":
            self._record(h, path, query, headers, body, "count_tokens")
            tokens = max(1, len(raw) // 4)
            self._send_json(h, 200, {"input_tokens": tokens}, request_id)
        elif h.command == "GET" and path.startswith("/v1/models/"):
            self._record(h, path, query, headers, body, "model_info")
            model_id = path.removeprefix("/v1/models/")
            self._send_json(h, 200, self._model_info(model_id), request_id)
        elif h.command == "GET" and path == "/v1/models":
            self._record(h, path, query, headers, body, "models")
            data = [self._model_info(m) for m in self._scripted_models()]
            page = {"data": data, "has_more": False, "first_id": None, "last_id": None}
            if data:
                page["first_id"], page["last_id"] = data[0]["id"], data[-1]["id"]
            self._send_json(h, 200, page, request_id)
        else:
            self._record(h, path, query, headers, body, "not_found")
            self._send_error(
                h, http_error(404, message=f"fake server: no route {h.command} {path}"), request_id
            )

    def _scripted_models(self) -> list[str]:
        with self._lock:
            return sorted(m for m in self._queues if m != "*")

    @staticmethod
    def _model_info(model_id: str) -> dict[str, Any]:
        return {
            "type": "model",
            "id": model_id,
            "display_name": model_id,
            "created_at": "2026-01-01T00:00:00Z",
            "lifecycle": "active",
        }

    def _handle_messages(
        self, h: _Handler, path: str, query: str, headers: dict[str, str], body: Any, request_id: str
    ) -> None:
        problem = _validate_messages_body(body) if self.validate else None
        if problem is None and not isinstance(body, Mapping):
            problem = "request body must be a JSON object"
        if problem is not None:
            self._record(h, path, query, headers, body, f"invalid: {problem}")
            self._send_error(h, http_error(400, message=problem), request_id)
            return
        model = str(body.get("model"))
        tokens = request_tokens(body) if self.context_window is not None else None
        if tokens is not None and self.context_window is not None and tokens > self.context_window:
            problem = f"prompt is too long: {tokens} tokens > {self.context_window} maximum"
            self._record(h, path, query, headers, body, f"invalid: {problem}")
            self._send_error(h, http_error(400, message=problem), request_id)
            return
        response = self._select(model, body)
        if (
            tokens is not None
            and isinstance(response, Reply)
            and "input_tokens" not in (response.usage or {})
        ):
            response = response.with_usage(input_tokens=tokens)
        if response is None:
            self._record(h, path, query, headers, body, "unscripted")
            error = http_error(
                500, "api_error", f"fake server: no scripted response for model {model}", should_retry=False
            )
            self._send_error(h, error, request_id)
            return
        if isinstance(response, HttpError):
            self._record(h, path, query, headers, body, f"http_error {response.status} {response.type}")
            self._hold(response.hold_before)
            self._send_error(h, response, request_id)
            return
        stream = body.get("stream") is True
        fault = f" fault={response.fault.kind}" if response.fault else ""
        self._record(h, path, query, headers, body, f"reply {'stream' if stream else 'json'}{fault}")
        msg_id = f"msg_fake_{next(self._ids):06d}"
        self._hold(response.hold_before)
        if stream:
            self._send_stream(h, response, model, msg_id, request_id)
        else:
            self._send_message(h, response, model, msg_id, request_id)

    # -- writers -----------------------------------------------------------------------------------

    @staticmethod
    def _start(h: _Handler, status: int, headers: Mapping[str, str]) -> None:
        h.send_response(status, _REASONS.get(status))
        for key, value in headers.items():
            h.send_header(key, value)
        h.end_headers()

    def _send_json(
        self, h: _Handler, status: int, obj: Any, request_id: str, extra: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(obj).encode()
        headers = {
            "content-type": "application/json",
            "content-length": str(len(data)),
            "request-id": request_id,
            **(extra or {}),
        }
        self._start(h, status, headers)
        h.wfile.write(data)

    def _send_error(self, h: _Handler, error: HttpError, request_id: str) -> None:
        body = _error_body(error.type, error.message, request_id)
        self._send_json(h, error.status, body, request_id, error.headers)

    def _drop(self, h: _Handler) -> None:
        h.close_connection = True
        with contextlib.suppress(OSError):
            h.connection.shutdown(socket.SHUT_RDWR)
        raise _Dropped

    def _send_message(self, h: _Handler, reply: Reply, model: str, msg_id: str, request_id: str) -> None:
        fault = reply.fault
        if fault is not None and fault.kind == "error_event":
            status = ERROR_STATUS.get(fault.error_type, 500)
            self._hold(reply.hold_after)
            self._send_error(h, HttpError(status, fault.error_type, fault.message), request_id)
            return
        obj = _message_json(reply, model, msg_id, stop=fault is None or fault.kind != "truncate")
        self._hold(reply.hold_after)
        if fault is not None and fault.kind == "drop":
            data = json.dumps(obj).encode()
            headers = {
                "content-type": "application/json",
                "content-length": str(len(data)),
                "request-id": request_id,
            }
            self._start(h, 200, {**headers, **reply.headers})
            h.wfile.write(data[: len(data) // 2])
            self._drop(h)
        self._send_json(h, 200, obj, request_id, reply.headers)

    def _send_stream(self, h: _Handler, reply: Reply, model: str, msg_id: str, request_id: str) -> None:
        events, after_first_delta = _stream_events(reply, model, msg_id)
        hold_at = reply.hold_at if reply.hold_at is not None else after_first_delta
        fault = reply.fault
        fault_at: int | None = None
        if fault is not None:
            if fault.after_events is not None:
                fault_at = fault.after_events
            elif fault.kind == "truncate":
                fault_at = len(events) - 2
            else:
                fault_at = after_first_delta
            fault_at = max(0, min(fault_at, len(events)))
        headers = {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
            "request-id": request_id,
            **reply.headers,
        }
        self._start(h, 200, headers)
        hold_at = max(0, min(hold_at, len(events)))

        def chunk(name: str, data: Mapping[str, Any]) -> None:
            payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            h.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))

        # The gate is marked reached just before the last event ahead of the hold point is written, so a
        # client that has seen that event can rely on ``gate.reached`` being true already.
        gate = reply.hold_after
        if hold_at == 0:
            self._hold(gate)
        holding = False
        for index in range(len(events) + 1):
            if holding and gate is not None and index == hold_at:
                gate._wait()
                holding = False
            if fault is not None and index == fault_at:
                if fault.kind == "error_event":
                    chunk("error", _error_body(fault.error_type, fault.message))
                elif fault.kind == "drop":
                    self._drop(h)
                break
            if index == len(events):
                break
            if hold_at > 0 and index == hold_at - 1:
                holding = self._arrive(gate)
            if reply.pace and index > 0:
                self._stopped.wait(reply.pace)
            chunk(*events[index])
        h.wfile.write(b"0\r\n\r\n")
