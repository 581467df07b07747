"""Client tools: tools the harness serves itself over a Session stream.
A definition is checked completely before anything is sent."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ._proto import runner_pb2 as pb
from ._schema import schema_json
from .errors import InvalidRequestError


@dataclass
class ToolCallContext:
    """ToolCallContext describes one call of a client tool to its handler
    (passed when the handler takes a second argument)."""

    tool: str
    """The name of the tool called."""
    call_id: str
    """Identifies the call within the session."""
    idempotency_key: str
    """"<execution_id>/<seq>": stable for this call across retries and
    replays, so a handler can deduplicate side effects."""
    deadline: datetime.datetime | None
    """When the execution's timeout expires, if the server sent one (UTC)."""
    ended: threading.Event = field(repr=False)
    """Set when the answer is no longer wanted (the execution ended:
    result, cancellation, lost connection)."""
    traceparent: str = ""
    """The W3C trace context (the traceparent header value) of the call's
    execute_tool span on the server: make it the parent of the spans that
    serve the call (with OpenTelemetry, extract it with the W3C trace
    context propagator). "" when the server records no span for the call
    (tracing off, or the trace not sampled)."""
    tracestate: str = ""
    """The W3C tracestate that goes with traceparent; often ""."""

    def cancelled(self) -> bool:
        """cancelled reports whether the answer is no longer wanted: the
        execution ended or its deadline passed."""
        if self.ended.is_set():
            return True
        return self.deadline is not None and datetime.datetime.now(datetime.timezone.utc) >= self.deadline


Handler = Callable[..., Any]
"""A handler takes the parsed arguments (and optionally a ToolCallContext)
and returns a JSON-serialisable result; it may be a coroutine function."""


@dataclass
class ClientTool:
    """ClientTool is a tool the harness serves: a definition the script
    sees (``tools.<name>(args)``) and a handler. The server validates every
    call's arguments against input_schema before the handler sees them (a
    call that fails never reaches the handler), and the result against
    output_schema."""

    name: str
    """How scripts call the tool; dots make namespaces (``crm.find_contact``)."""
    handler: Handler | None = None
    """Serves a call: handler(args) or handler(args, ctx); sync or async.
    Required by run; a resumable execute sends only the definition (a call
    pauses the execution and is answered in resume)."""
    description: str = ""
    input_schema: Any = None
    """The arguments' JSON Schema (a dict or bool); None accepts any JSON."""
    output_schema: Any = None
    """The result's JSON Schema; None means the result is not validated."""


def tool(
    name: str | None = None,
    *,
    description: str | None = None,
    input_schema: Any = None,
    output_schema: Any = None,
) -> Callable[[Handler], ClientTool]:
    """tool is a decorator that turns a function into a ClientTool; the
    name defaults to the function's and the description to its docstring::

        @tool(input_schema={"type": "object", "properties": {"city": {"type": "string"}}})
        def weather(args):
            \"\"\"The weather in a city.\"\"\"
            return {"temp": 21}
    """

    def wrap(fn: Handler) -> ClientTool:
        return ClientTool(
            name=name or fn.__name__,
            handler=fn,
            description=description if description is not None else inspect.cleandoc(fn.__doc__ or ""),
            input_schema=input_schema,
            output_schema=output_schema,
        )

    return wrap


_NAME_RE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*$")
_MAX_NAME_LENGTH = 128


def check_tool_name(name: Any, path: str) -> None:
    """check_tool_name raises InvalidRequestError unless name is a valid
    ptc tool name: dot-separated identifiers, none starting with '$'."""
    if not isinstance(name, str) or not name:
        raise InvalidRequestError(path, "a tool needs a name")
    if len(name.encode()) > _MAX_NAME_LENGTH:
        raise InvalidRequestError(path, f"tool name is longer than {_MAX_NAME_LENGTH} bytes")
    if not _NAME_RE.match(name) or "\n" in name:
        raise InvalidRequestError(path, f"tool name {name!r} is invalid: use dot-separated identifiers (letters, digits, _ and -)")
    if any(seg.startswith("$") for seg in name.split(".")):
        raise InvalidRequestError(path, f"tool name {name!r} is invalid: segments starting with '$' are reserved")


@dataclass
class PreparedTool:
    """PreparedTool is a checked client tool: its wire definition and handler."""

    definition: pb.ToolDefinition
    handler: Handler
    takes_context: bool
    is_async: bool


def _takes_context(fn: Handler) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _is_async(fn: Handler) -> bool:
    return asyncio.iscoroutinefunction(fn) or asyncio.iscoroutinefunction(getattr(fn, "__call__", None))


def _no_handler(args: Any) -> Any:  # a resumable execute's definition: never called
    raise RuntimeError("this tool has no handler")


def prepare_tools(tools: Any, need_handlers: bool = True) -> dict[str, PreparedTool]:
    """prepare_tools checks client tool definitions (names, duplicates,
    handlers, schemas) and converts them for the wire. Nothing is sent if
    it raises."""
    out: dict[str, PreparedTool] = {}
    if tools is None:
        return out
    if isinstance(tools, (str, bytes, dict)) or not hasattr(tools, "__iter__"):
        raise InvalidRequestError("tools", "tools must be a list of ClientTool")
    for i, t in enumerate(tools):
        path = f"tools[{i}]"
        if not isinstance(t, ClientTool):
            raise InvalidRequestError(path, f"a client tool must be a ClientTool (or made with @tool), not {type(t).__name__}")
        check_tool_name(t.name, f"{path}.name")
        if t.name in out:
            raise InvalidRequestError(f"{path}.name", f"duplicate tool name {t.name!r}: every client tool needs its own name")
        if need_handlers and not callable(t.handler):
            raise InvalidRequestError(f"{path}.handler", f"client tool {t.name!r} has no handler function")
        if not isinstance(t.description, str):
            raise InvalidRequestError(f"{path}.description", "description must be a string")
        definition = pb.ToolDefinition(
            name=t.name,
            description=t.description,
            input_schema_json="" if t.input_schema is None else schema_json(t.input_schema, f"{path}.input_schema"),
            output_schema_json="" if t.output_schema is None else schema_json(t.output_schema, f"{path}.output_schema"),
        )
        handler = t.handler if callable(t.handler) else _no_handler
        out[t.name] = PreparedTool(definition, handler, _takes_context(handler), _is_async(handler))
    return out
