"""Channel construction and per-call metadata shared by both clients."""

from __future__ import annotations

from typing import Any, Sequence

import grpc

from .errors import InvalidRequestError

# Status codes that, after the server has answered anything, mean the
# connection itself failed rather than that the server refused the request.
LOST_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.CANCELLED})

DEFAULT_MAX_RECEIVE_BYTES = 64 << 20
"""The largest message a client accepts unless its options say otherwise:
ptcd's default grpc.max_send_bytes, so that results up to the 16 MiB output
ceiling, with their trace, arrive."""

DEFAULT_CANCEL_GRACE = 5.0
"""How long run waits for the server's CANCELLED result after a cancel."""


def call_metadata(token: str | None, metadata: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """call_metadata is the metadata sent on every call."""
    md = [(k.lower(), v) for k, v in (metadata or {}).items()]
    if token is not None:
        md.append(("authorization", f"Bearer {token}"))
    return tuple(md)


def check_target(target: Any) -> None:
    """check_target refuses an empty server address."""
    if not isinstance(target, str) or not target:
        raise InvalidRequestError("target", "the server address is empty")


def check_grace(grace: Any) -> None:
    """check_grace refuses a negative or non-numeric cancel grace."""
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0 or grace != grace:
        raise InvalidRequestError("cancel_grace", "must be a non-negative number of seconds")


ChannelOptions = Sequence[tuple[str, Any]]


def channel_options(options: ChannelOptions | None) -> list[tuple[str, Any]]:
    """channel_options adds the client's defaults to the caller's options."""
    opts = list(options or [])
    if not any(k == "grpc.max_receive_message_length" for k, _ in opts):
        opts.append(("grpc.max_receive_message_length", DEFAULT_MAX_RECEIVE_BYTES))
    return opts
