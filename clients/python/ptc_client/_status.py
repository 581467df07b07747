"""The reason of a request error: ptcd attaches a google.rpc.ErrorInfo
(domain "ptc.v1") to the errors callers branch on, in the status details
trailer. Decoded here by hand (three small messages) so that the package
needs no googleapis code."""

from __future__ import annotations

from typing import Any, Iterator

_DOMAIN = "ptc.v1"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


class _Malformed(ValueError):
    pass


def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise _Malformed("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _fields(b: bytes) -> Iterator[tuple[int, bytes]]:
    """_fields yields a message's length-delimited fields (the only kind
    needed), skipping the others."""
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        no, wt = tag >> 3, tag & 7
        if wt == 0:
            _, i = _varint(b, i)
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise _Malformed("truncated field")
            yield no, b[i : i + n]
            i += n
        else:
            raise _Malformed("unsupported wire type")
        if i > len(b):
            raise _Malformed("truncated field")


def reason_of(e: Any) -> str:
    """reason_of returns the ptc reason of a failed call ("" when there is
    none, or the details cannot be read): google.rpc.Status.details (3) →
    Any {type_url (1), value (2)} → ErrorInfo {reason (1), domain (2)}."""
    try:
        md = e.trailing_metadata() or ()
    except Exception:  # noqa: BLE001 - not a call error: no metadata
        return ""
    raw = next((v for k, v in md if k == "grpc-status-details-bin"), None)
    if not isinstance(raw, bytes):
        return ""
    try:
        for no, any_ in _fields(raw):
            if no != 3:
                continue
            parts = dict(_fields(any_))
            if parts.get(1, b"").decode() != _ERROR_INFO or 2 not in parts:
                continue
            info = dict(_fields(parts[2]))
            if info.get(2, b"").decode() == _DOMAIN and info.get(1):
                return info[1].decode()
    except (_Malformed, UnicodeDecodeError):
        pass
    return ""
