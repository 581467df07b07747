"""JSON Schemas as the client accepts them (a dict or a bool), and the
structural checks done before anything is sent. The server compiles every
schema fully and answers INVALID_ARGUMENT for what these checks let
through (regular expressions, for one, are the server's to judge: its
engine is neither Python's nor JavaScript's)."""

from __future__ import annotations

from typing import Any

from ._json import NotJSONError, dumps_strict
from .errors import InvalidRequestError

MAX_SCHEMA_BYTES = 1 << 20
"""The server's bound on one schema document."""

_TYPE_NAMES = ("null", "boolean", "object", "array", "number", "string", "integer")
_SCHEMA_KEYWORDS = (
    "additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema",
)
_SCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ARRAY_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")
_COUNT_KEYWORDS = (
    "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains",
)
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def schema_json(schema: Any, path: str) -> str:
    """schema_json checks a JSON Schema and returns it as JSON text, raising
    InvalidRequestError naming path."""
    check_schema(schema, path)
    try:
        text = dumps_strict(schema)
    except NotJSONError as e:
        raise InvalidRequestError(path, f"the schema is not JSON: {e}") from e
    if len(text.encode()) > MAX_SCHEMA_BYTES:
        raise InvalidRequestError(path, f"the schema is larger than {MAX_SCHEMA_BYTES} bytes")
    return text


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_schema(s: Any, path: str) -> None:
    """check_schema does the structural checks of a JSON Schema (draft
    2020-12) that need no validator: the document is an object or a bool;
    type names are JSON Schema's; keywords that hold schemas hold schemas;
    required is a list of unique strings; counts are non-negative integers;
    $ref is local (the server refuses external ones)."""
    if isinstance(s, bool):
        return

    def bad(where: str, msg: str) -> None:
        raise InvalidRequestError(where, f"invalid JSON Schema: {msg}")

    if not isinstance(s, dict):
        bad(path, f"a schema must be a dict or a bool, not {type(s).__name__}")
    for k in s:
        if not isinstance(k, str):
            bad(path, f"keyword {k!r} is not a string")

    def at(k: str) -> str:
        return f"{path}.{k}"

    if "type" in s:
        t = s["type"]
        names = t if isinstance(t, list) else [t]
        if isinstance(t, list) and not t:
            bad(at("type"), "type must not be an empty list")
        for name in names:
            if not isinstance(name, str) or name not in _TYPE_NAMES:
                bad(at("type"), f"{name!r} is not a JSON Schema type (use one of {', '.join(_TYPE_NAMES)})")
        if len(set(names)) != len(names):
            bad(at("type"), "type lists a name twice")
    for k in _SCHEMA_KEYWORDS:
        if k in s:
            if k == "items" and isinstance(s[k], list):
                bad(at(k), "items must be one schema in draft 2020-12 (use prefixItems for a tuple)")
            check_schema(s[k], at(k))
    for k in _SCHEMA_MAP_KEYWORDS:
        if k in s:
            m = s[k]
            if not isinstance(m, dict):
                bad(at(k), f"{k} must be a dict of schemas, not {type(m).__name__}")
            for name, sub in m.items():
                check_schema(sub, f"{at(k)}.{name}")
    for k in _SCHEMA_ARRAY_KEYWORDS:
        if k in s:
            a = s[k]
            if not isinstance(a, list) or not a:
                bad(at(k), f"{k} must be a non-empty list of schemas")
            for i, sub in enumerate(a):
                check_schema(sub, f"{at(k)}[{i}]")
    if "required" in s:
        r = s["required"]
        if not isinstance(r, list) or not all(isinstance(x, str) for x in r):
            bad(at("required"), "required must be a list of property names")
        if len(set(r)) != len(r):
            bad(at("required"), "required lists a property twice")
    if "enum" in s and not isinstance(s["enum"], list):
        bad(at("enum"), "enum must be a list")
    for k in _COUNT_KEYWORDS:
        if k in s and not (isinstance(s[k], int) and not isinstance(s[k], bool) and s[k] >= 0):
            bad(at(k), f"{k} must be a non-negative integer")
    for k in _NUMBER_KEYWORDS:
        if k in s and not (_is_number(s[k]) and s[k] == s[k] and abs(s[k]) != float("inf")):
            bad(at(k), f"{k} must be a number")
    if "multipleOf" in s and s["multipleOf"] <= 0:
        bad(at("multipleOf"), "multipleOf must be greater than 0")
    if "pattern" in s and not isinstance(s["pattern"], str):
        bad(at("pattern"), "pattern must be a string")
    if "$ref" in s:
        ref = s["$ref"]
        if not isinstance(ref, str):
            bad(at("$ref"), "$ref must be a string")
        if not ref.startswith("#"):
            bad(at("$ref"), f"external $ref {ref!r} is not allowed; inline the schema or use $defs")
