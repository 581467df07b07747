"""ptc_client: the Python client of ptc, a sandboxed runner for
programmatic tool calling. See docs/clients.md in the ptc repository.

- Client: synchronous (threads serve client tools).
- AsyncClient: asyncio (grpc.aio).
- ClientTool / @tool: tools this process serves to scripts, with JSON Schemas.
- Cancellation: stops an execution from any thread.
- Errors: InvalidRequestError (nothing sent), RequestError (a gRPC status),
  ContinuationError (resume refused a continuation, with its kind),
  ConnectionLostError (the server went away mid-execution), CancelledError,
  ClientClosedError (a call after close());
  a failed script is a Result whose error is an ExecutionError of a kind.
- Durable executions: execute(..., resumable=True) may pause (Result
  .requires_action, pending_actions, continuation); resume(continuation,
  [Answer, ...]) goes on. In run, on_approval decides calls that need
  approval.
"""

from ._json import NotJSONError, dumps_strict
from ._limits import LimitsDict
from ._request import new_execution_id
from .aio import AsyncClient
from .cancel import Cancellation
from .client import Client
from .durable import Answer, ApprovalContext, PendingAction
from .errors import (
    CancelledError,
    ClientClosedError,
    ConnectionLostError,
    ContinuationError,
    ExecutionError,
    InvalidRequestError,
    PtcError,
    RequestError,
    StartedToolCall,
    ToolError,
)
from .tools import ClientTool, ToolCallContext, tool
from .types import ErrorKind, Limits, LogEntry, ProgressEvent, Result, Stats, ToolCallRecord, ToolDefinition, ToolList

__all__ = [
    "Answer",
    "ApprovalContext",
    "AsyncClient",
    "Cancellation",
    "CancelledError",
    "Client",
    "ClientClosedError",
    "ClientTool",
    "ConnectionLostError",
    "ContinuationError",
    "ErrorKind",
    "ExecutionError",
    "InvalidRequestError",
    "Limits",
    "LimitsDict",
    "LogEntry",
    "NotJSONError",
    "PendingAction",
    "ProgressEvent",
    "PtcError",
    "RequestError",
    "Result",
    "StartedToolCall",
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
