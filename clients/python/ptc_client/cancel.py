"""Cancellation: a thread-safe signal that stops executions."""

from __future__ import annotations

import threading
from typing import Callable


class Cancellation:
    """Cancellation stops the executions it is passed to (``cancel=`` of
    Client.run and AsyncClient.run, and the execute calls). It is safe to
    cancel from any thread; cancelling twice keeps the first reason.

    On cancel, run sends CancelExecution, waits up to cancel_grace seconds
    for the server's CANCELLED result and then ends the stream; either way
    it raises CancelledError (carrying the result when it arrived)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._callbacks: list[Callable[[str], None]] = []

    def cancel(self, reason: str = "cancelled") -> None:
        """cancel cancels, with a reason for logs and the error message."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(reason)

    def cancel_after(self, seconds: float, reason: str = "timed out") -> None:
        """cancel_after cancels after seconds (on a daemon timer thread)."""
        t = threading.Timer(seconds, self.cancel, args=(reason,))
        t.daemon = True
        t.start()

    @property
    def cancelled(self) -> bool:
        """cancelled reports whether cancel was called."""
        with self._lock:
            return self._reason is not None

    @property
    def reason(self) -> str | None:
        """reason is the first cancel's reason, or None."""
        with self._lock:
            return self._reason

    def _subscribe(self, cb: Callable[[str], None]) -> Callable[[], None]:
        """_subscribe calls cb(reason) once on cancel (at once if already
        cancelled) and returns a function that unsubscribes."""
        with self._lock:
            reason = self._reason
            if reason is None:
                self._callbacks.append(cb)
        if reason is not None:
            cb(reason)

        def unsubscribe() -> None:
            with self._lock:
                if cb in self._callbacks:
                    self._callbacks.remove(cb)

        return unsubscribe
