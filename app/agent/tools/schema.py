"""The JSON schema a tool's input model is sent as: generated from the model, in the shape the tool
contract pins (an object of the fields in order, the required ones listed, no other keys)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from app.agent.conversation.blocks import JsonObject
from app.agent.tools.base import ToolInput

__all__ = ["JsonObject", "input_schema"]


class _ToolSchema(GenerateJsonSchema):
    """Pydantic's JSON schema without what the tool contract leaves out: an optional input is
    its type alone (no ``anyOf`` with null, no ``default``), and nothing has a title."""

    # The schemas given are pydantic-core's typed dicts (not imported: pydantic is the dependency).
    def nullable_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


# Each input's keys in this order; any other key is a contract change and fails loudly.
_PROPERTY_KEYS = ("type", "items", "enum", "minimum", "maximum", "description")


@cache  # generated on first use rather than at import: importing the tools stays cheap
def _generated(model: type[ToolInput]) -> JsonObject:
    generated = model.model_json_schema(schema_generator=_ToolSchema)
    return _object(generated, generated.get("$defs", {}), model.__name__)


def _object(schema: JsonSchemaValue, defs: JsonSchemaValue, where: str) -> JsonObject:
    """An object's schema in the contract's shape; an array of objects (a list of a nested input
    model, pydantic's ``$ref``) gets its items' schema in the same shape, written out in place."""
    properties: JsonObject = {}
    for name, prop in schema["properties"].items():
        extra = set(prop) - set(_PROPERTY_KEYS)
        if extra:
            raise ValueError(f"{where}.{name}: schema keys outside the contract: {sorted(extra)}")
        kept = {key: prop[key] for key in _PROPERTY_KEYS if key in prop}
        items = kept.get("items")
        if isinstance(items, dict) and isinstance(items.get("$ref"), str):
            kept["items"] = _object(defs[items["$ref"].rsplit("/", 1)[-1]], defs, f"{where}.{name}")
        properties[name] = kept
    return {
        "type": "object",
        "properties": properties,
        "required": list(schema.get("required", [])),
        "additionalProperties": False,
    }


def input_schema(model: type[ToolInput]) -> JsonObject:
    """The ``input_schema`` the Messages API gets for ``model``: an object of its fields in
    order, the required ones listed (an empty list too), no other keys allowed. A fresh copy:
    the caller may change it."""
    return copy.deepcopy(_generated(model))
