"""Strict JSON: json.dumps without NaN, and a clear error for what JSON
cannot represent (sets, bytes, objects, cycles)."""

from __future__ import annotations

import json
from typing import Any


class NotJSONError(ValueError):
    """NotJSONError explains why a value cannot be sent as JSON."""


def dumps_strict(value: Any) -> str:
    """dumps_strict serialises value as compact JSON, raising NotJSONError
    for NaN and infinities, values JSON has no form for (set, bytes,
    arbitrary objects) and cyclic structures."""
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as e:
        msg = str(e)
        if "Circular reference" in msg or isinstance(e, RecursionError):
            msg = "a cyclic structure cannot be represented in JSON"
        elif "Out of range float" in msg:
            msg = "NaN and infinities cannot be represented in JSON"
        raise NotJSONError(msg) from e
