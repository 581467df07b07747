"""What a client knows when its connection to the server is lost: the
tool calls the script is known to have started, and whether a unary
call's request could have reached the server."""

from __future__ import annotations

import threading
import time

import grpc

from ._proto import runner_pb2 as pb
from .errors import StartedToolCall


class StartedCalls:
    """StartedCalls follows the tool calls of one Session from the
    server's progress events, which run always asks for."""

    def __init__(self) -> None:
        self._calls: dict[int, StartedToolCall] = {}

    def saw(self, p: pb.ToolProgress) -> None:
        """saw records one progress event."""
        if p.phase == pb.ToolProgress.PHASE_FINISHED:
            self._calls[p.seq] = StartedToolCall(p.seq, p.tool, True, p.outcome)
        elif p.seq not in self._calls:
            self._calls[p.seq] = StartedToolCall(p.seq, p.tool)

    def calls(self) -> list[StartedToolCall]:
        """calls returns the calls known to have started, by seq."""
        return sorted(self._calls.values(), key=lambda c: c.seq)


class Readiness:
    """Readiness counts a sync channel's transitions into READY, so that a
    failed unary call can tell whether its request could have reached the
    server: the channel was READY when the call started, or became READY
    since. grpc delivers the states from a polling thread of its own,
    started by the first mark and stopped by stop."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._channel = channel
        self._lock = threading.Lock()
        self._subscribed = False
        self._ready = False
        self._epoch = 0

    def _changed(self, state: grpc.ChannelConnectivity) -> None:
        with self._lock:
            ready = state == grpc.ChannelConnectivity.READY
            if ready and not self._ready:
                self._epoch += 1
            self._ready = ready

    def mark(self) -> tuple[bool, int]:
        """mark is taken when a call starts."""
        with self._lock:
            if not self._subscribed:
                self._subscribed = True
                self._channel.subscribe(self._changed, try_to_connect=False)
            return self._ready, self._epoch

    def reached(self, mark: tuple[bool, int]) -> bool:
        """reached reports whether the channel was READY at some time since mark."""
        with self._lock:
            return mark[0] or self._epoch > mark[1]

    def stop(self) -> None:
        """stop ends the subscription before the channel closes. grpcio's
        polling thread (1.51 at least) raises "Cannot monitor channel
        state: Channel closed!" when the channel closes under it; it
        notices an empty subscription within 0.2 s, so stop waits for it
        to go, up to a second."""
        with self._lock:
            if not self._subscribed:
                return
            self._subscribed = False
        self._channel.unsubscribe(self._changed)
        state = getattr(self._channel, "_connectivity_state", None)
        deadline = time.monotonic() + 1
        while getattr(state, "polling", False) and time.monotonic() < deadline:
            time.sleep(0.01)
