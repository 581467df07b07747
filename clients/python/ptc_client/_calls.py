"""Calls: the count of calls in flight on a client's channel, so that
close() refuses new calls and lets those in flight run to completion."""

from __future__ import annotations

import threading

from .errors import ClientClosedError


class Calls:
    """Calls counts a client's calls in flight. The channel is closed when
    the client is closed and no call is in flight: at close() when none
    is, else when the last one ends. begin and end bracket every call;
    close and end report whether the caller must close the channel now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._closed = False

    def begin(self) -> None:
        """begin counts a call, or raises ClientClosedError once closed."""
        with self._lock:
            if self._closed:
                raise ClientClosedError()
            self._active += 1

    def end(self) -> bool:
        """end uncounts a call; True means it was the last after close()."""
        with self._lock:
            self._active -= 1
            return self._closed and self._active == 0

    def close(self) -> bool:
        """close refuses further calls; True means none is in flight (the
        first time only)."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            return self._active == 0
