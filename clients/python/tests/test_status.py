"""The reason of a request error, read from the status details trailer of
whatever a server sends: trusted only in ptc's ErrorInfo domain; crafted,
foreign and garbage details never raise."""

from __future__ import annotations

import random

import grpc
import pytest

from ptc_client.errors import ContinuationError, RequestError, request_error


def _field(no: int, payload: bytes) -> bytes:
    return bytes([no << 3 | 2, len(payload)]) + payload  # payloads here are < 128 bytes


def status_bytes(reason: str, domain: str) -> bytes:
    info = _field(1, reason.encode()) + _field(2, domain.encode())
    any_ = _field(1, b"type.googleapis.com/google.rpc.ErrorInfo") + _field(2, info)
    return bytes([1 << 3, 9]) + _field(2, b"msg") + _field(3, any_)


class FakeError:
    """FakeError stands in for a grpc.RpcError with a details trailer."""

    def __init__(self, trailer: bytes | None) -> None:
        self.trailer = trailer

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self) -> str:
        return "refused"

    def trailing_metadata(self):
        return () if self.trailer is None else (("grpc-status-details-bin", self.trailer),)


@pytest.mark.parametrize(
    "name,trailer,reason,kind",
    [
        ("used", status_bytes("CONTINUATION_USED", "ptc.v1"), "CONTINUATION_USED", "USED"),
        ("a future kind", status_bytes("CONTINUATION_REVOKED", "ptc.v1"), "CONTINUATION_REVOKED", "REVOKED"),
        ("answers", status_bytes("ANSWERS_INVALID", "ptc.v1"), "ANSWERS_INVALID", None),
        ("another domain", status_bytes("CONTINUATION_USED", "example.com"), "", None),
        ("no details", None, "", None),
        ("empty details", b"", "", None),
        ("truncated", status_bytes("CONTINUATION_USED", "ptc.v1")[:20], "", None),
        ("bad utf-8", status_bytes("CONTINUATION_USED", "ptc.v1").replace(b"USED", b"\xff\xfe\xfd\xfc"), "", None),
    ],
)
def test_reasons(name: str, trailer: bytes | None, reason: str, kind: str | None) -> None:
    e = request_error(FakeError(trailer))
    assert isinstance(e, RequestError) and e.reason == reason and e.code == grpc.StatusCode.FAILED_PRECONDITION
    assert isinstance(e, ContinuationError) == (kind is not None)
    if kind is not None:
        assert e.kind == kind


def test_garbage_never_raises() -> None:
    rng = random.Random(1)
    good = status_bytes("CONTINUATION_USED", "ptc.v1")
    for i in range(2000):
        if i % 2:
            b = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        else:  # mutate a valid status
            b = bytearray(good)
            for _ in range(rng.randrange(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            b = bytes(b)
        assert isinstance(request_error(FakeError(b)), RequestError)
