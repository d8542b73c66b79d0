"""Recognising a refusal of structured output, and the capabilities file (no network)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.agent.memory_bridge.completion import Capabilities, endpoint_url, refuses_structured_output


@dataclass
class FakeStatusError(Exception):
    """What the check reads of an SDK status error: its status and parsed body."""

    status_code: int
    body: Any


def _anthropic(
    message: str, type: str = "invalid_request_error", status: int = 400, **extra: Any
) -> FakeStatusError:
    return FakeStatusError(status, {"type": "error", "error": {"type": type, "message": message, **extra}})


@pytest.mark.parametrize(
    "err",
    [
        _anthropic("output_config: Extra inputs are not permitted"),  # the real API, an old model
        _anthropic("output_config.format: Extra inputs are not permitted"),  # a cloud route
        _anthropic("Unknown parameter 'output_config'"),
        _anthropic("unsupported", param="output_config"),  # a compatible server's param field
        _anthropic("unsupported", param="output_config.format.schema"),
        FakeStatusError(
            422, {"detail": [{"loc": ["body", "output_config"], "msg": "Extra inputs are not permitted"}]}
        ),
        FakeStatusError(400, "output_config: not supported by this proxy"),  # a plain-text body
    ],
)
def test_an_error_naming_the_output_config_parameter_is_a_refusal(err: FakeStatusError) -> None:
    assert refuses_structured_output(err)


@pytest.mark.parametrize(
    "err",
    [
        _anthropic("invalid date format in messages"),
        _anthropic("messages.0.content.0.text: the format of this block is invalid"),
        _anthropic("structured json_schema output_format is fine but max_tokens is too large"),
        _anthropic("output_configuration: unknown"),  # another parameter whose name starts alike
        _anthropic("output_config: Extra inputs are not permitted", type="authentication_error"),
        _anthropic("output_config: Extra inputs are not permitted", status=500, type="api_error"),
        _anthropic("bad request", param="messages.0.content"),
    ],
)
def test_an_error_that_does_not_name_the_parameter_is_not_a_refusal(err: FakeStatusError) -> None:
    assert not refuses_structured_output(err)


def test_a_remembered_endpoint_has_no_credentials_query_or_trailing_slash() -> None:
    assert (
        endpoint_url("https://user:s3cret@Proxy.Example:8443/v1/?key=abc#x")
        == "https://proxy.example:8443/v1"
    )
    assert endpoint_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"


def test_a_refusal_is_kept_per_base_url_and_model_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "home" / "capabilities.json"
    Capabilities(path).remember_refusal("https://user:s3cret@proxy.example/", "m1")
    fresh = Capabilities(path)
    assert fresh.refuses_structured("https://proxy.example", "m1")
    assert not fresh.refuses_structured("https://proxy.example", "m2")
    assert not fresh.refuses_structured("https://other.example", "m1")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "s3cret" not in path.read_text()


def test_two_writers_keep_each_others_refusals(tmp_path: Path) -> None:
    path = tmp_path / "capabilities.json"
    a, b = Capabilities(path), Capabilities(path)
    assert not a.refuses_structured("http://h", "m1") and not b.refuses_structured("http://h", "m2")
    a.remember_refusal("http://h", "m1")
    b.remember_refusal("http://h", "m2")  # b read the file before a wrote: it adds, not replaces
    entries = json.loads(path.read_text())["refused_structured_output"]
    assert {(e["base_url"], e["model"]) for e in entries} == {("http://h", "m1"), ("http://h", "m2")}


@pytest.mark.parametrize(
    "content", [b"not json", b'{"version": 1, "refused_structured_output": "x"}', b"\xff\xfe"]
)
def test_a_damaged_file_is_unknown_and_the_next_refusal_writes_it_anew(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "capabilities.json"
    path.write_bytes(content)
    assert not Capabilities(path).refuses_structured("http://h", "m")
    Capabilities(path).remember_refusal("http://h", "m")
    assert Capabilities(path).refuses_structured("http://h", "m")


def test_a_symlinked_capabilities_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(
        json.dumps({"refused_structured_output": [{"base_url": "http://h", "model": "m", "since": "x"}]})
    )
    path = tmp_path / "capabilities.json"
    path.symlink_to(target)
    assert not Capabilities(path).refuses_structured("http://h", "m")
    Capabilities(path).remember_refusal("http://h", "m2")
    assert not path.is_symlink() and "m2" not in target.read_text()
