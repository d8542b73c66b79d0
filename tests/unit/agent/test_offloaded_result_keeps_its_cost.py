"""A tool result moved to disk (over ``offload_bytes``) keeps what is not its text: its images,
the cost of the side request that made it (``web_search``), its hooks' times. Only the text moves."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from app.agent.conversation import compaction as cmp
from app.agent.tools.base import ModelUsage, ToolResult
from app.agent.turn.compactor import Compactor


def test_an_offloaded_result_keeps_its_usage_images_and_hook_times(tmp_path: Path) -> None:
    settings: Any = SimpleNamespace(results=cmp.ResultStore(tmp_path / "results"), offload_bytes=1024)
    log: Any = SimpleNamespace(session=None)
    compactor = Compactor(log, settings, [], lambda: [], lambda: None)
    usage = ModelUsage(model="claude-haiku-5-5", input_tokens=900, output_tokens=80, web_search_requests=2)
    result = ToolResult(content="result line\n" * 1_000, usage=usage, hook_s=0.5, hook_failed=1)
    out = asyncio.run(compactor.offload_new(result))
    assert out.content.startswith(cmp.STUB_PREFIX)
    assert out.usage == usage and out.hook_s == 0.5 and out.hook_failed == 1
