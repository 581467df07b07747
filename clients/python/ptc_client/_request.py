"""What a caller asks for, and its conversion to the wire ExecuteRequest,
with every check that can be done before anything is sent."""

from __future__ import annotations

import datetime
import re
import secrets
from typing import Any, Iterable, Literal, Mapping

from google.protobuf import timestamp_pb2

from ._json import NotJSONError, dumps_strict
from ._proto import runner_pb2 as pb
from ._schema import schema_json
from .errors import InvalidRequestError
from .tools import check_tool_name
from ._limits import Limits, LimitsDict, check_limits, limits_pb

Language = Literal["javascript", "typescript", "wasm", "python"]
"""Language is the language of a script."""

Overflow = Literal["fail", "truncate"]
"""Overflow is what happens to a result over the output limits."""

_LANGUAGES = {
    "javascript": pb.LANGUAGE_JAVASCRIPT,
    "typescript": pb.LANGUAGE_TYPESCRIPT,
    "wasm": pb.LANGUAGE_WASM,
    "python": pb.LANGUAGE_PYTHON,
}
_EXECUTION_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_OVERFLOW = {"fail": pb.OVERFLOW_POLICY_FAIL, "truncate": pb.OVERFLOW_POLICY_TRUNCATE}


def new_execution_id() -> str:
    """new_execution_id returns a fresh random execution id."""
    return "ptc-" + secrets.token_hex(12)


def execute_request(
    source: str | None = None,
    *,
    language: Language | None = None,
    wasm_module: bytes | None = None,
    module_sha256: str | None = None,
    input: Any = None,
    limits: Limits | LimitsDict | None = None,
    allowed_tools: Iterable[str] | None = None,
    no_server_tools: bool = False,
    result_schema: Mapping[str, Any] | None = None,
    execution_id: str | None = None,
    deterministic: bool = False,
    seed: int | None = None,
    clock_start: datetime.datetime | None = None,
    include_tool_results: bool = False,
    resumable: bool = False,
    require_approval: Iterable[str] | None = None,
    overflow: Overflow | None = None,
) -> pb.ExecuteRequest:
    """execute_request checks the options and converts them to the wire
    request (see Client.execute for their meaning)."""
    if language is None:
        language = "wasm" if wasm_module is not None or module_sha256 else "javascript"
    if language not in _LANGUAGES:
        raise InvalidRequestError("language", f"unknown language {language!r} (use javascript, typescript, wasm or python)")
    if language == "wasm":
        if wasm_module is None and not module_sha256:
            raise InvalidRequestError("wasm_module", "a wasm script needs wasm_module or module_sha256")
        if wasm_module is not None and not isinstance(wasm_module, (bytes, bytearray)):
            raise InvalidRequestError("wasm_module", "must be bytes")
    elif not isinstance(source, str) or not source.strip():
        raise InvalidRequestError("source", "the script source is empty")
    input_json = ""
    if input is not None:
        try:
            input_json = dumps_strict(input)
        except NotJSONError as e:
            raise InvalidRequestError("input", f"the input is not JSON: {e}") from e
    if execution_id is None:
        execution_id = new_execution_id()
    if not isinstance(execution_id, str) or not _EXECUTION_ID_RE.match(execution_id) or "\n" in execution_id:
        raise InvalidRequestError("execution_id", 'use at most 128 ASCII letters, digits and "._:-"')
    tools = list(allowed_tools or [])
    for i, name in enumerate(tools):
        check_tool_name(name, f"allowed_tools[{i}]")
    if not isinstance(resumable, bool):
        raise InvalidRequestError("resumable", "must be a bool")
    if not isinstance(no_server_tools, bool):
        raise InvalidRequestError("no_server_tools", "must be a bool")
    if isinstance(require_approval, (str, bytes)):
        raise InvalidRequestError("require_approval", "must be a list of tool names")
    gated = list(require_approval or [])
    for i, name in enumerate(gated):
        check_tool_name(name, f"require_approval[{i}]")
    if overflow is not None and overflow not in _OVERFLOW:
        raise InvalidRequestError("overflow", f'unknown overflow policy {overflow!r} (use "fail" or "truncate")')
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise InvalidRequestError("seed", "must be an unsigned 64-bit integer")
    clock = None
    if clock_start is not None:
        if not isinstance(clock_start, datetime.datetime):
            raise InvalidRequestError("clock_start", "must be a datetime")
        if clock_start.tzinfo is None:
            raise InvalidRequestError("clock_start", "must be timezone-aware (e.g. datetime.timezone.utc)")
        clock = timestamp_pb2.Timestamp()
        clock.FromDatetime(clock_start)
    return pb.ExecuteRequest(
        script=pb.Script(
            language=_LANGUAGES[language],
            source=source or "",
            wasm_module=bytes(wasm_module or b""),
            module_sha256=module_sha256 or "",
        ),
        input_json=input_json,
        limits=limits_pb(check_limits(limits)) if limits is not None else None,
        allowed_tools=tools,
        no_server_tools=no_server_tools,
        result_schema_json="" if result_schema is None else schema_json(result_schema, "result_schema"),
        execution_id=execution_id,
        deterministic=deterministic,
        seed=seed or 0,
        clock_start=clock,
        include_tool_results=include_tool_results,
        resumable=resumable,
        require_approval=gated,
        overflow_policy=_OVERFLOW[overflow] if overflow is not None else pb.OVERFLOW_POLICY_UNSPECIFIED,
    )
