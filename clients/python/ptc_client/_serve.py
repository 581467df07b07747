"""Serving one client tool call: parse the arguments, run the handler
(sync or async, with or without a context), and turn its outcome into a
ToolResult. Shared by the synchronous and the asyncio clients."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import json
import threading
from concurrent.futures import Executor
from typing import Any

from ._json import NotJSONError, dumps_strict
from ._proto import runner_pb2 as pb
from .errors import ToolError
from .tools import PreparedTool, ToolCallContext


def _context(tc: pb.ToolCall, ended: threading.Event) -> ToolCallContext:
    deadline = None
    if tc.HasField("deadline"):
        deadline = tc.deadline.ToDatetime().replace(tzinfo=datetime.timezone.utc)
    return ToolCallContext(
        tool=tc.tool,
        call_id=tc.call_id,
        idempotency_key=tc.idempotency_key,
        deadline=deadline,
        ended=ended,
        traceparent=tc.traceparent,
        tracestate=tc.tracestate,
    )


def _arguments(tool: PreparedTool | None, tc: pb.ToolCall) -> Any:
    if tool is None:
        raise ToolError("unknown_tool", f"this client does not serve tool {tc.tool!r}")
    try:
        return json.loads(tc.arguments_json) if tc.arguments_json else None
    except ValueError as e:
        raise ToolError("invalid_arguments", "the arguments are not valid JSON") from e


def _ok(tc: pb.ToolCall, out: Any) -> pb.ToolResult:
    try:
        return pb.ToolResult(call_id=tc.call_id, output_json=dumps_strict(out))
    except NotJSONError as e:
        return _error(tc, "invalid_output", f"the result of client tool {tc.tool} cannot be sent as JSON: {e}")


def _error(tc: pb.ToolCall, code: str, message: str) -> pb.ToolResult:
    return pb.ToolResult(call_id=tc.call_id, error=pb.ToolError(code=code, message=message))


def _failure(tc: pb.ToolCall, e: BaseException) -> pb.ToolResult:
    if isinstance(e, ToolError):
        return _error(tc, e.code or "tool_failed", e.message)
    if isinstance(e, Exception):
        return _error(tc, "tool_failed", str(e) or type(e).__name__)
    return _error(tc, "tool_panic", f"the tool failed unexpectedly: {type(e).__name__}: {e}")


async def _awaited(a: Any) -> Any:
    return await a


def serve_sync(tool: PreparedTool | None, tc: pb.ToolCall, ended: threading.Event) -> pb.ToolResult:
    """serve_sync runs one call on the current thread (an async handler on
    an event loop of its own)."""
    try:
        args = _arguments(tool, tc)
        assert tool is not None
        out = tool.handler(args, _context(tc, ended)) if tool.takes_context else tool.handler(args)
        if inspect.isawaitable(out):
            out = asyncio.run(_awaited(out))
        return _ok(tc, out)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - every failure becomes a tool error
        return _failure(tc, e)


async def serve_async(tool: PreparedTool | None, tc: pb.ToolCall, ended: threading.Event, executor: Executor) -> pb.ToolResult:
    """serve_async runs one call on the event loop (a sync handler on a
    thread of executor, so that it cannot block the loop)."""
    try:
        args = _arguments(tool, tc)
        assert tool is not None
        ctx_args = (args, _context(tc, ended)) if tool.takes_context else (args,)
        if tool.is_async:
            out = await tool.handler(*ctx_args)
        else:
            out = await asyncio.get_running_loop().run_in_executor(executor, tool.handler, *ctx_args)
            if inspect.isawaitable(out):
                out = await out
        return _ok(tc, out)
    except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - every failure becomes a tool error
        return _failure(tc, e)
