"""The fake Messages API server, driven by the real ``anthropic`` SDK over real sockets."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator

import anthropic
import httpx2
import pydantic
import pytest

from tests.support.fakeapi import (
    FakeAnthropic,
    drop_connection,
    http_error,
    message,
    reject_param,
    stream_error,
    text,
    text_block,
    tool_block,
    tool_use,
    truncated,
    when_param,
)

pytestmark = pytest.mark.timeout(20)

MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"
USER = [{"role": "user", "content": "hi"}]
WAIT = 5.0


@pytest.fixture
async def aclient(server: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(api_key="test", base_url=server.base_url, max_retries=0, timeout=WAIT)
    yield client
    await client.close()


@pytest.fixture
def client(server: FakeAnthropic) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0, timeout=WAIT) as sdk:
        yield sdk


# -- streaming ------------------------------------------------------------------------------------


async def test_stream_text_arrives_in_order_with_stop_reason_and_usage(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    usage = {"input_tokens": 42, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 7}
    server.script(MODEL, text("Hello, world!", chunks=["Hel", "lo, ", "world", "!"], usage=usage))

    async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
        pieces = [piece async for piece in stream.text_stream]
        final = await stream.get_final_message()

    assert pieces == ["Hel", "lo, ", "world", "!"]
    assert final.content[0].type == "text" and final.content[0].text == "Hello, world!"
    assert final.stop_reason == "end_turn" and final.stop_sequence is None
    assert final.model == MODEL and final.id.startswith("msg_")
    assert final.usage.input_tokens == 42
    assert final.usage.output_tokens == 4
    assert final.usage.cache_creation_input_tokens == 5
    assert final.usage.cache_read_input_tokens == 7
    assert stream.request_id is not None and stream.request_id.startswith("req_")


def test_raw_wire_format_is_chunked_sse_with_ping(server: FakeAnthropic) -> None:
    server.script(MODEL, text("a b", usage={"output_tokens": 9}))
    body = {"model": MODEL, "max_tokens": 8, "messages": USER, "stream": True}
    with httpx2.Client(timeout=WAIT) as http:
        response = http.post(f"{server.base_url}/v1/messages", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    frames = [frame for frame in response.text.split("\n\n") if frame]
    names = [frame.split("\n")[0].removeprefix("event: ") for frame in frames]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    datas = [json.loads(frame.split("\n")[1].removeprefix("data: ")) for frame in frames]
    assert all(data["type"] == name for name, data in zip(names, datas, strict=True))
    assert datas[-2]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert datas[-2]["usage"]["output_tokens"] == 9


async def test_tool_use_input_reassembles_from_json_deltas(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    tool_input = {"path": "src/app.py", "offset": 10, "flags": ["a", "ü"], "nested": {"x": None}}
    reply = tool_use("read_file", tool_input, text_before="Let me look.", json_chunk_size=7)
    server.script(MODEL, reply)

    partials: list[str] = []
    async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
        async for event in stream:
            if event.type == "input_json":
                partials.append(event.partial_json)
        final = await stream.get_final_message()

    assert len(partials) > 3 and json.loads("".join(partials)) == tool_input
    assert final.stop_reason == "tool_use"
    assert [block.type for block in final.content] == ["text", "tool_use"]
    call = final.content[1]
    assert call.type == "tool_use"
    assert call.name == "read_file" and call.input == tool_input
    assert call.id == reply.blocks[-1].id


async def test_tool_use_with_end_turn_stop_reason_as_some_compatible_servers_send(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, tool_use("list_files", {}, stop_reason="end_turn"))
    async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "end_turn" and [b.type for b in final.content] == ["tool_use"]


def test_lone_surrogate_in_tool_input_goes_out_escaped_like_a_real_server() -> None:
    # The wire stays UTF-8 (a raw surrogate cannot even be encoded); the JSON carries the escape.
    block = tool_block("list_files", {"path": "bad\udcffname"}, json_chunk_size=1000)
    assert "".join(block.json_chunks) == '{"path": "bad\\udcffname"}'


@pytest.mark.parametrize(
    ("stop_reason", "stop_sequence"),
    [("max_tokens", None), ("stop_sequence", "###"), ("refusal", None), ("pause_turn", None)],
)
async def test_stop_reason_override(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic, stop_reason: str, stop_sequence: str | None
) -> None:
    server.script(MODEL, text("partial", stop_reason=stop_reason, stop_sequence=stop_sequence))  # type: ignore[arg-type]
    async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == stop_reason
    assert final.stop_sequence == stop_sequence


# -- non-streaming ---------------------------------------------------------------------------------


def test_non_streaming_create_returns_full_message(
    server: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    reply = message(
        text_block("Two calls:"),
        tool_block("grep", {"pattern": "TODO"}, id="toolu_a"),
        tool_block("list_files", {}, id="toolu_b"),
        stop_reason="tool_use",
        usage={"input_tokens": 3, "output_tokens": 11},
    )
    server.script(MODEL, reply)

    result = client.messages.create(model=MODEL, max_tokens=64, messages=USER)

    assert result.stop_reason == "tool_use"
    assert [block.type for block in result.content] == ["text", "tool_use", "tool_use"]
    assert result.content[1].type == "tool_use" and result.content[1].input == {"pattern": "TODO"}
    assert result.content[2].type == "tool_use" and result.content[2].id == "toolu_b"
    assert result.usage.input_tokens == 3 and result.usage.output_tokens == 11
    assert result.usage.cache_read_input_tokens == 0
    assert server.requests[0].stream is False


# -- HTTP errors -----------------------------------------------------------------------------------

ERRORS = [
    (400, "invalid_request_error", anthropic.BadRequestError),
    (401, "authentication_error", anthropic.AuthenticationError),
    (404, "not_found_error", anthropic.NotFoundError),
    (429, "rate_limit_error", anthropic.RateLimitError),
    (500, "api_error", anthropic.InternalServerError),
    (529, "overloaded_error", anthropic.OverloadedError),
]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize(("status", "error_type", "exc_class"), ERRORS, ids=[str(e[0]) for e in ERRORS])
async def test_http_errors_map_to_sdk_exceptions(
    server: FakeAnthropic,
    aclient: anthropic.AsyncAnthropic,
    status: int,
    error_type: str,
    exc_class: type[anthropic.APIStatusError],
    stream: bool,
) -> None:
    server.script(
        MODEL, http_error(status, message=f"boom {status}", retry_after=7 if status == 429 else None)
    )

    with pytest.raises(exc_class) as info:
        if stream:
            async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as s:
                await s.get_final_message()
        else:
            await aclient.messages.create(model=MODEL, max_tokens=64, messages=USER)

    err = info.value
    assert type(err) is exc_class
    assert err.status_code == status
    assert err.type == error_type
    assert err.api_message == f"boom {status}"
    assert err.request_id is not None and err.request_id.startswith("req_fake_")
    assert err.body == {
        "type": "error",
        "error": {"type": error_type, "message": f"boom {status}"},
        "request_id": err.request_id,
    }
    if status == 429:
        assert err.response.headers["retry-after"] == "7"


async def test_unscripted_request_is_an_explicit_500_that_is_not_retried(server: FakeAnthropic) -> None:
    async with anthropic.AsyncAnthropic(api_key="test", base_url=server.base_url, max_retries=2) as sdk:
        with pytest.raises(anthropic.InternalServerError) as info:
            await sdk.messages.create(model="nobody-scripted-me", max_tokens=8, messages=USER)
    assert info.value.api_message == "fake server: no scripted response for model nobody-scripted-me"
    assert [r.outcome for r in server.requests] == ["unscripted"]
    assert server.unscripted() == server.requests


async def test_sdk_retries_500_then_succeeds(server: FakeAnthropic) -> None:
    server.script(
        MODEL, http_error(500, retry_after_ms=5), http_error(529, retry_after_ms=5), text("third time")
    )
    async with anthropic.AsyncAnthropic(
        api_key="test", base_url=server.base_url, max_retries=2, timeout=WAIT
    ) as sdk:
        async with sdk.messages.stream(model=MODEL, max_tokens=8, messages=USER) as stream:
            assert await stream.get_final_text() == "third time"
    seen = server.requests_for(MODEL)
    assert len(seen) == 3
    assert [r.headers["x-stainless-retry-count"] for r in seen] == ["0", "1", "2"]
    assert server.remaining(MODEL) == 0


# -- faults mid-stream -----------------------------------------------------------------------------


async def test_mid_stream_error_event_raises_sdk_error(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, stream_error(type="overloaded_error", reply=text("never finished sentence")))
    received: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as info:
        async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
            async for piece in stream.text_stream:
                received.append(piece)
    assert received == ["never"]
    err = info.value
    # SDK quirk: the HTTP status was 200, so the class is the base APIStatusError (not OverloadedError);
    # the error type is only in the body.
    assert type(err) is anthropic.APIStatusError and err.status_code == 200
    assert err.type == "overloaded_error" and err.api_message == "Overloaded"


async def test_stream_error_on_non_streaming_request_is_an_http_error(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, stream_error(type="overloaded_error"))
    with pytest.raises(anthropic.OverloadedError):
        await aclient.messages.create(model=MODEL, max_tokens=64, messages=USER)


async def test_dropped_connection_raises_transport_error(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, drop_connection(after_events=4), drop_connection())
    received: list[str] = []
    # A body cut mid-stream: SDKs before 2.17 let the raw httpx2 error out, 2.17 wraps it in
    # anthropic.APIConnectionError (the product handles both).
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)):
        async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
            async for piece in stream.text_stream:
                received.append(piece)
    assert received == ["This"]
    # Without streaming the cut happens inside the SDK's request, which wraps it.
    with pytest.raises(anthropic.APIConnectionError):
        await aclient.messages.create(model=MODEL, max_tokens=64, messages=USER)


async def test_truncated_stream_ends_without_stop_reason(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, truncated(reply=text("cut here")), truncated(after_events=0))
    async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
        final = await stream.get_final_message()
    # SDK quirk: no error at all; the snapshot simply has no stop reason.
    assert final.content[0].type == "text" and final.content[0].text == "cut here"
    assert final.stop_reason is None
    # With not even message_start, get_final_message() fails on a bare assert.
    with pytest.raises(AssertionError):
        async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
            await stream.get_final_message()


# -- gates -----------------------------------------------------------------------------------------


async def test_held_response_delivers_first_delta_before_release(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    gate = server.gate()
    server.script(MODEL, text("first second third", hold_after=gate))
    async with aclient.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
        pieces = stream.text_stream
        first = await asyncio.wait_for(anext(pieces), WAIT)
        assert first == "first"
        assert gate.reached and not gate.released
        assert len(server.requests) == 1
        gate.release()
        rest = [piece async for piece in pieces]
        final = await stream.get_final_message()
    assert rest == [" second", " third"]
    assert final.stop_reason == "end_turn"


async def test_hold_before_sends_nothing_until_released(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    gate = server.gate()
    server.script(MODEL, text("late", hold_before=gate))
    task = asyncio.create_task(aclient.messages.create(model=MODEL, max_tokens=64, messages=USER))
    assert await gate.wait_reached_async(WAIT)
    assert not task.done()
    gate.release()
    result = await asyncio.wait_for(task, WAIT)
    assert result.content[0].type == "text" and result.content[0].text == "late"


def test_stop_releases_held_gates() -> None:
    fake = FakeAnthropic().start()
    gate = fake.gate(timeout=60)
    fake.script(MODEL, text("x y", hold_after=gate, hold_at=1))
    outcome: list[object] = []

    def consume() -> None:
        with anthropic.Anthropic(api_key="test", base_url=fake.base_url, max_retries=0, timeout=WAIT) as sdk:
            try:
                with sdk.messages.stream(model=MODEL, max_tokens=8, messages=USER) as stream:
                    outcome.append(stream.get_final_message())
            except Exception as exc:
                outcome.append(exc)

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    assert gate.wait_reached(WAIT)
    fake.stop()
    worker.join(WAIT)
    assert not worker.is_alive()
    assert gate.released and not gate.timed_out
    assert len(outcome) == 1


# -- requests, scripting rules ---------------------------------------------------------------------


async def test_recorded_request_headers_and_body(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, text("ok"))
    async with aclient.messages.stream(
        model=MODEL, max_tokens=64, messages=USER, system="be brief", stop_sequences=["END"]
    ) as stream:
        await stream.get_final_message()
    [request] = server.requests_for(MODEL)
    assert request.method == "POST" and request.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer test"
    assert request.header("Anthropic-Version") == "2026-10-21"
    assert request.headers["content-type"] == "application/json"
    assert request.stream is True and request.model == MODEL
    assert request.body["messages"] == USER and request.body["system"] == "be brief"
    assert request.body["stop_sequences"] == ["END"]
    assert "output_config" not in request.body


async def test_structured_output_param_is_sent_and_parsed(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    class Ops(pydantic.BaseModel):
        operations: list[str]

    schema = {"type": "object", "properties": {"operations": {"type": "array"}}, "required": ["operations"]}
    server.script(MEMORY_MODEL, text('{"operations": []}'), text('{"operations": ["a"]}'))

    await aclient.messages.create(
        model=MEMORY_MODEL,
        max_tokens=64,
        messages=USER,
        output_config={"format": {"type": "json_schema", "schema": schema}},
    )
    parsed = await aclient.messages.parse(model=MEMORY_MODEL, max_tokens=64, messages=USER, output_format=Ops)

    first, second = server.requests_for(MEMORY_MODEL)
    assert first.body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert second.body["output_config"]["format"]["type"] == "json_schema"
    assert parsed.parsed_output == Ops(operations=["a"])


async def test_reject_param_applies_only_to_requests_carrying_it(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    config = {"format": {"type": "json_schema", "schema": {"type": "object"}}}
    server.script(MEMORY_MODEL, reject_param("output_config"), text("[] fallback"))
    with pytest.raises(anthropic.BadRequestError) as info:
        await aclient.messages.create(model=MEMORY_MODEL, max_tokens=8, messages=USER, output_config=config)
    assert info.value.type == "invalid_request_error" and "output_config" in str(info.value.api_message)
    result = await aclient.messages.create(model=MEMORY_MODEL, max_tokens=8, messages=USER)
    assert result.content[0].type == "text" and result.content[0].text == "[] fallback"

    # Without the param the rejection falls through (and is used up).
    server.script(MEMORY_MODEL, reject_param("output_config"), text("plain"))
    result = await aclient.messages.create(model=MEMORY_MODEL, max_tokens=8, messages=USER)
    assert result.content[0].type == "text" and result.content[0].text == "plain"
    assert server.remaining(MEMORY_MODEL) == 0


async def test_sticky_condition_emulates_an_endpoint_without_the_feature(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    config = {"format": {"type": "json_schema", "schema": {"type": "object"}}}
    server.script(MEMORY_MODEL, reject_param("output_config.format", sticky=True), text("one"), text("two"))
    for expected in ("one", "two"):
        with pytest.raises(anthropic.BadRequestError):
            await aclient.messages.create(
                model=MEMORY_MODEL, max_tokens=8, messages=USER, output_config=config
            )
        result = await aclient.messages.create(model=MEMORY_MODEL, max_tokens=8, messages=USER)
        assert result.content[0].type == "text" and result.content[0].text == expected
    assert server.remaining(MEMORY_MODEL) == 1  # only the sticky rule is left


async def test_when_param_picks_a_reply_by_request_shape(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, when_param("tools", tool_use("bash", {"command": "ls"})), text("no tools"))
    tools = [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}]
    result = await aclient.messages.create(model=MODEL, max_tokens=8, messages=USER, tools=tools)
    assert result.stop_reason == "tool_use"
    result = await aclient.messages.create(model=MODEL, max_tokens=8, messages=USER)
    assert result.stop_reason == "end_turn"


async def test_queues_are_per_model_with_wildcard_fallback(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, text("main 1"), text("main 2"))
    server.script(MEMORY_MODEL, text("memory 1"))
    server.script("*", text("anyone"))

    async def ask(model: str) -> str:
        result = await aclient.messages.create(model=model, max_tokens=8, messages=USER)
        assert result.content[0].type == "text"
        return result.content[0].text

    assert await ask(MEMORY_MODEL) == "memory 1"
    assert await ask(MODEL) == "main 1"
    assert await ask("other-model") == "anyone"
    assert await ask(MODEL) == "main 2"
    with pytest.raises(anthropic.InternalServerError):
        await ask(MEMORY_MODEL)
    assert [r.model for r in server.requests] == [MEMORY_MODEL, MODEL, "other-model", MODEL, MEMORY_MODEL]
    assert len(server.requests_for(MODEL)) == 2


async def test_dangling_tool_use_is_refused_like_the_real_api(
    server: FakeAnthropic, aclient: anthropic.AsyncAnthropic
) -> None:
    server.script(MODEL, text("unused"))
    conversation = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {}}],
        },
        {"role": "user", "content": "never mind"},
    ]
    with pytest.raises(anthropic.BadRequestError) as info:
        await aclient.messages.create(model=MODEL, max_tokens=8, messages=conversation)  # type: ignore[arg-type]
    assert "toolu_1" in str(info.value.api_message)
    assert server.remaining(MODEL) == 1
    assert server.requests[0].outcome.startswith("invalid:")


def test_keep_alive_connection_is_reused(server: FakeAnthropic, client: anthropic.Anthropic) -> None:
    server.script(MODEL, text("a"), text("b"), http_error(400), text("c"))
    with client.messages.stream(model=MODEL, max_tokens=8, messages=USER) as stream:
        assert stream.get_final_text() == "a"
    assert client.messages.create(model=MODEL, max_tokens=8, messages=USER).content[0].type == "text"
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=MODEL, max_tokens=8, messages=USER)
    with client.messages.stream(model=MODEL, max_tokens=8, messages=USER) as stream:
        assert stream.get_final_text() == "c"
    assert len({r.connection for r in server.requests}) == 1


async def test_wait_for_requests(server: FakeAnthropic, aclient: anthropic.AsyncAnthropic) -> None:
    server.script(MODEL, text("x"))
    task = asyncio.create_task(aclient.messages.create(model=MODEL, max_tokens=8, messages=USER))
    [request] = await server.wait_for_requests_async(1, model=MODEL, timeout=WAIT)
    assert request.model == MODEL
    await asyncio.wait_for(task, WAIT)
    with pytest.raises(TimeoutError):
        server.wait_for_requests(2, timeout=0.05)


def test_count_tokens_and_model_lookup(server: FakeAnthropic, client: anthropic.Anthropic) -> None:
    counted = client.messages.count_tokens(model=MODEL, messages=USER)
    assert counted.input_tokens > 0
    info = client.models.retrieve(MODEL)
    assert info.id == MODEL
    assert [r.path for r in server.requests] == ["/v1/messages/count_tokens", f"/v1/models/{MODEL}"]


def test_builders_reject_inconsistent_chunks() -> None:
    with pytest.raises(ValueError):
        text("hello", chunks=["he", "lo"])
    with pytest.raises(TypeError):
        FakeAnthropic().script(MODEL, "not a response")  # type: ignore[arg-type]


# -- subprocess ------------------------------------------------------------------------------------


def test_subprocess_streams_via_environment(server: FakeAnthropic) -> None:
    server.script(MODEL, text("from a child process", chunk_size=4))
    code = textwrap.dedent(
        f"""
        import anthropic
        client = anthropic.Anthropic(max_retries=0, timeout=5)
        with client.messages.stream(
            model={MODEL!r}, max_tokens=16, messages=[{{"role": "user", "content": "hi"}}]
        ) as s:
            for piece in s.text_stream:
                print(piece, end="|", flush=True)
            print()
            print(s.get_final_message().stop_reason)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(server.env(api_key="child-key"))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=15, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["from| a c|hild| pro|cess|", "end_turn"]
    [request] = server.requests_for(MODEL)
    assert request.headers["authorization"] == "Bearer child-key"
