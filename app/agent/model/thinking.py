"""Extended thinking on the wire: what a request carries, and the one fallback.

- Off: the request has no ``thinking`` field (every model and endpoint takes that).
- On: ``{"type": "enabled", "budget_tokens": N}``. The budget counts in the response's
  ``max_tokens`` and must stay below it: the settings refuse a budget that does not
  (app/agent/config/settings.py), so no request silently changes its bound.
- A model that thinks only adaptively refuses a budget with a 400 naming it (``"thinking.type.enabled"
  is not supported``): the provider sends that model ``{"type": "adaptive", "display":
  "summarized"}`` from then on (the budget no longer applies; summarized, so the person sees the
  thinking rather than an omitted one). Nothing was streamed before such a refusal, so the
  request is simply sent again; the refusal is kept for the provider's life, not on disk.

The response's thinking and redacted-thinking blocks are kept with their signatures and sent back
unchanged (app/agent/conversation/blocks.py): the API refuses a tool-use loop that drops them.
"""

from __future__ import annotations

import re

from pydantic import JsonValue

__all__ = ["THINKING_TYPES", "refuses_budgeted_thinking", "thinking_param"]

# The request's parts an endpoint names when it refuses a thinking budget.
THINKING_TYPES = ("thinking", "thinking.type", "thinking.budget_tokens")
# In an error's message: the budgeted configuration named (never a bare "thinking", which a
# refused conversation's message also says: "Expected `thinking` or `redacted_thinking`").
_BUDGET_NAMED = re.compile(r"thinking\.(?:type\.enabled|budget_tokens)|type\W+enabled\W+is not supported")


def thinking_param(budget: int, adaptive: bool) -> dict[str, JsonValue] | None:
    """The request's ``thinking`` field: None when ``budget`` is 0 (off)."""
    if budget <= 0:
        return None
    if adaptive:
        return {"type": "adaptive", "display": "summarized"}
    return {"type": "enabled", "budget_tokens": budget}


def refuses_budgeted_thinking(err: BaseException) -> bool:
    """Whether an API error is the model refusing a thinking budget: a 400 (or a validator's
    422) whose ``param`` is the thinking field or whose message names the budgeted type."""
    if getattr(err, "status_code", None) not in (400, 422):
        return False
    body = getattr(err, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = body if isinstance(body, dict) else {}
    if error.get("type") not in (None, "invalid_request_error"):
        return False
    param = error.get("param")
    if isinstance(param, str) and param.strip() in THINKING_TYPES:
        return True
    message = body if isinstance(body, str) else error.get("message")
    if not isinstance(message, str):
        message = str(getattr(err, "message", "") or "")
    return bool(_BUDGET_NAMED.search(message))
