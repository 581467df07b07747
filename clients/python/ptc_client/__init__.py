"""ptc_client: the Python client of ptc, a sandboxed runner for
programmatic tool calling. See docs/clients.md in the ptc repository.

- Client: synchronous (threads serve client tools).
- AsyncClient: asyncio (grpc.aio).
- ClientTool / @tool: tools this process serves to scripts, with JSON Schemas.
- Cancellation: stops an execution from any thread.
- Errors: InvalidRequestError (nothing sent), RequestError (a gRPC status),
  ConnectionLostError (the server went away mid-execution), CancelledError;
  a failed script is a Result whose error is an ExecutionError of a kind.
"""

from ._json import NotJSONError, dumps_strict
from ._request import new_execution_id
from .aio import AsyncClient
from .cancel import Cancellation
from .client import Client
from .errors import (
    CancelledError,
    ConnectionLostError,
    ExecutionError,
    InvalidRequestError,
    PtcError,
    RequestError,
    ToolError,
)
from .tools import ClientTool, ToolCallContext, tool
from .types import ErrorKind, Limits, LogEntry, Result, Stats, ToolCallRecord, ToolDefinition, ToolList

__all__ = [
    "AsyncClient",
    "Cancellation",
    "CancelledError",
    "Client",
    "ClientTool",
    "ConnectionLostError",
    "ErrorKind",
    "ExecutionError",
    "InvalidRequestError",
    "Limits",
    "LogEntry",
    "NotJSONError",
    "PtcError",
    "RequestError",
    "Result",
    "Stats",
    "ToolCallContext",
    "ToolCallRecord",
    "ToolDefinition",
    "ToolError",
    "ToolList",
    "dumps_strict",
    "new_execution_id",
    "tool",
]

__version__ = "0.1.0"
