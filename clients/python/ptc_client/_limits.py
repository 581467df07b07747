"""The limits of an execution and their conversion to and from the wire
Limits, driven by the generated descriptor of the proto's Limits message: a
field the proto has and Limits does not is found by the drift test
(tests/test_limits.py), and never silently dropped."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypedDict

from google.protobuf import duration_pb2
from google.protobuf.descriptor import FieldDescriptor

from ._proto import runner_pb2 as pb
from .errors import InvalidRequestError

_INT32_MAX = 2**31 - 1


@dataclass
class Limits:
    """Limits bound one execution. Durations are in seconds; 0 means the
    server's default, and values above its ceilings are clamped. The field
    names are those of the proto's Limits message."""

    timeout: float = 0
    """Wall-clock time, tool waits included (TIMEOUT)."""
    cpu_time: float = 0
    """Time the sandbox computes (CPU_LIMIT)."""
    memory_bytes: int = 0
    """The sandbox's memory (MEMORY_LIMIT)."""
    max_tool_calls: int = 0
    """Tool calls (TOOL_CALL_LIMIT when the rejected call is uncaught)."""
    max_concurrent_tool_calls: int = 0
    """Calls in flight at once (16 by default, at most 256); more wait for a slot."""
    max_output_bytes: int = 0
    """Size of the result JSON (OUTPUT_LIMIT, or truncation with overflow="truncate")."""
    max_log_bytes: int = 0
    """Captured console output; beyond it entries are dropped and logs_truncated is set."""
    max_log_entries: int = 0
    """Captured console entries; beyond it entries are dropped and logs_truncated is set."""
    max_result_tokens: int = 0
    """Approximate model tokens of the result JSON, counted as
    ToolList.approx_tokens counts them (OUTPUT_LIMIT, or truncation with
    overflow="truncate")."""
    max_pauses: int = 0
    """How often a resumable execution may pause (PAUSE_LIMIT)."""
    max_paused_time: float = 0
    """Total time a resumable execution may wait paused (PAUSE_LIMIT)."""


class LimitsDict(TypedDict, total=False):
    """LimitsDict is Limits written as a dict, for type checkers: the same
    names, durations in seconds (a number, never a string like "30s")."""

    timeout: float
    cpu_time: float
    memory_bytes: int
    max_tool_calls: int
    max_concurrent_tool_calls: int
    max_output_bytes: int
    max_log_bytes: int
    max_log_entries: int
    max_result_tokens: int
    max_pauses: int
    max_paused_time: float


def _is_duration(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.full_name == "google.protobuf.Duration"


def _duration(seconds: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(round(seconds * 1e9))
    return d


def check_limits(limits: Limits | LimitsDict | dict[str, Any]) -> Limits:
    """check_limits returns limits as a Limits, refusing unknown names and
    negative, fractional (for counts and sizes) or oversized values."""
    names = [f.name for f in dataclasses.fields(Limits)]
    if isinstance(limits, dict):
        for k in limits:
            if k not in names:
                raise InvalidRequestError(f"limits.{k}", f"unknown limit (use {', '.join(sorted(names))})")
        limits = Limits(**limits)
    if not isinstance(limits, Limits):
        raise InvalidRequestError("limits", "limits must be a Limits or a dict")
    for f in pb.Limits.DESCRIPTOR.fields:
        v = getattr(limits, f.name)
        integral = not _is_duration(f)
        ok = isinstance(v, int) if integral else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok or v < 0 or v != v or v == float("inf"):
            raise InvalidRequestError(f"limits.{f.name}", f"must be a non-negative {'integer' if integral else 'number'}, not {v!r}")
        if f.type == FieldDescriptor.TYPE_INT32 and v > _INT32_MAX:
            raise InvalidRequestError(f"limits.{f.name}", "must fit in 32 bits")
        if f.type == FieldDescriptor.TYPE_INT64 and v >= 2**63:
            raise InvalidRequestError(f"limits.{f.name}", "must fit in 64 bits")
    return limits


def limits_pb(limits: Limits) -> pb.Limits:
    """limits_pb converts checked limits to the wire; zero fields stay
    unset (the server's default)."""
    out = pb.Limits()
    for f in pb.Limits.DESCRIPTOR.fields:
        v = getattr(limits, f.name)
        if not v:
            continue
        if _is_duration(f):
            getattr(out, f.name).CopyFrom(_duration(v))
        else:
            setattr(out, f.name, v)
    return out


def limits_from_pb(lim: pb.Limits) -> Limits:
    """limits_from_pb converts wire limits; unset fields are 0."""
    out = Limits()
    for f in pb.Limits.DESCRIPTOR.fields:
        if not hasattr(out, f.name):
            continue  # a limit newer than this client; the drift test finds it
        v = getattr(lim, f.name)
        setattr(out, f.name, v.seconds + v.nanos / 1e9 if _is_duration(f) else v)
    return out
