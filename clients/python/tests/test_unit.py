"""Tests that need no server: strict JSON and the checks that refuse a bad
request before anything is sent."""

from __future__ import annotations

import asyncio
import inspect
import math

import pytest

import ptc_client._prepare
from ptc_client import AsyncClient, CancelledError, Cancellation, Client, ClientTool, InvalidRequestError, NotJSONError, dumps_strict, tool
from ptc_client._prepare import OPTIONS
from ptc_client._request import execute_request


def handler(args):
    return None


class _Obj:
    pass


_cyclic: dict = {}
_cyclic["self"] = _cyclic


@pytest.mark.parametrize(
    "value, want",
    [
        pytest.param({"a": [1, "b", None, True]}, '{"a":[1,"b",null,true]}', id="object"),
        pytest.param({"é": "ü"}, '{"é":"ü"}', id="unicode"),
        pytest.param((1, 2), "[1,2]", id="tuple"),
        pytest.param(math.nan, NotJSONError, id="nan"),
        pytest.param([math.inf], NotJSONError, id="inf"),
        pytest.param({1, 2}, NotJSONError, id="set"),
        pytest.param(b"x", NotJSONError, id="bytes"),
        pytest.param(_Obj(), NotJSONError, id="object instance"),
        pytest.param(_cyclic, NotJSONError, id="cycle"),
    ],
)
def test_dumps_strict(value, want):
    if want is NotJSONError:
        with pytest.raises(NotJSONError):
            dumps_strict(value)
    else:
        assert dumps_strict(value) == want


def t(**kw) -> ClientTool:
    return ClientTool(**{"name": "t", "handler": handler, **kw})


@pytest.mark.parametrize(
    "tools, options, path, message",
    [
        pytest.param([t(input_schema={"type": "object", "properties": {"a": {"type": "strng"}}})], {}, "tools[0].input_schema.properties.a.type", "not a JSON Schema type", id="invalid type name"),
        pytest.param([t(input_schema="object")], {}, "tools[0].input_schema", "dict or a bool", id="schema not a dict"),
        pytest.param([t(input_schema={"required": "a"})], {}, "tools[0].input_schema.required", "list of property names", id="required not a list"),
        pytest.param([t(output_schema={"minLength": -1})], {}, "tools[0].output_schema.minLength", "non-negative integer", id="negative minLength"),
        pytest.param([t(input_schema={"$ref": "https://example.com/s.json"})], {}, "tools[0].input_schema.$ref", "external $ref", id="external ref"),
        pytest.param([t(input_schema={"items": [{"type": "string"}]})], {}, "tools[0].input_schema.items", "prefixItems", id="items as tuple"),
        pytest.param([t(input_schema={"default": {1, 2}})], {}, "tools[0].input_schema", "not JSON", id="schema with a set"),
        pytest.param([t(name="dup"), t(name="dup")], {}, "tools[1].name", "duplicate tool name 'dup'", id="duplicate name"),
        pytest.param([t(name="")], {}, "tools[0].name", "needs a name", id="empty name"),
        pytest.param([t(name="get weather")], {}, "tools[0].name", "invalid", id="name with a space"),
        pytest.param([t(name="x.$search")], {}, "tools[0].name", "reserved", id="reserved name"),
        pytest.param([t(handler=None)], {}, "tools[0].handler", "no handler", id="missing handler"),
        pytest.param([{"name": "t"}], {}, "tools[0]", "ClientTool", id="not a ClientTool"),
        pytest.param(None, {"input": {"n": {1}}}, "input", "not JSON", id="input not JSON"),
        pytest.param(None, {"input": math.nan}, "input", "not JSON", id="input NaN"),
        pytest.param(None, {"execution_id": "has space"}, "execution_id", "128 ASCII", id="bad execution id"),
        pytest.param(None, {"limits": {"timeout_ms": 5}}, "limits.timeout_ms", "unknown limit", id="unknown limit"),
        pytest.param(None, {"limits": {"max_tool_calls": -1}}, "limits.max_tool_calls", "non-negative", id="negative limit"),
        pytest.param(None, {"result_schema": {"type": 5}}, "result_schema.type", "not a JSON Schema type", id="bad result schema"),
        pytest.param(None, {"allowed_tools": ["a b"]}, "allowed_tools[0]", "invalid", id="bad allowed tool"),
        pytest.param(None, {"language": "ruby"}, "language", "unknown language", id="unknown language"),
        pytest.param(None, {"cancel_grace": -1}, "cancel_grace", "non-negative", id="negative grace"),
    ],
)
def test_bad_requests_are_refused_before_sending(tools, options, path, message):
    # The address is never dialled: every case fails before a call starts.
    with Client("127.0.0.1:1") as c:
        with pytest.raises(InvalidRequestError) as exc:
            c.run("return 1", tools=tools, **options)
    assert exc.value.path == path
    assert message in str(exc.value)


def test_empty_source_is_refused():
    with Client("127.0.0.1:1") as c, pytest.raises(InvalidRequestError) as exc:
        c.execute("  ")
    assert exc.value.path == "source"


def test_execute_refuses_client_tools():
    with Client("127.0.0.1:1") as c, pytest.raises(InvalidRequestError):
        c.execute("return 1", tools=[t()])


def test_already_cancelled_sends_nothing():
    cancel = Cancellation()
    cancel.cancel("stop")
    with Client("127.0.0.1:1") as c:
        with pytest.raises(CancelledError, match="stop"):
            c.run("return 1", cancel=cancel)
        with pytest.raises(CancelledError):
            c.execute("return 1", cancel=cancel)


_METHODS = [
    pytest.param(Client.execute, OPTIONS, id="Client.execute"),
    pytest.param(Client.run, tuple(n for n in OPTIONS if n != "resumable"), id="Client.run"),
    pytest.param(AsyncClient.execute, OPTIONS, id="AsyncClient.execute"),
    pytest.param(AsyncClient.run, tuple(n for n in OPTIONS if n != "resumable"), id="AsyncClient.run"),
]


@pytest.mark.parametrize("method, names", _METHODS)
def test_methods_take_the_execution_options(method, names):
    # The methods hand their arguments to _prepare by name: each must take
    # every option execute_request takes, keyword-only, typed and
    # defaulted alike, and run never resumable.
    want = inspect.signature(execute_request).parameters
    got = inspect.signature(method).parameters
    assert "source" in got
    for name in names:
        assert name in got, f"{method.__qualname__} lacks {name}"
        assert got[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert got[name].annotation == want[name].annotation, name
        assert got[name].default == want[name].default, name
    assert set(OPTIONS) - set(names) <= {"resumable"}
    assert (method.__name__ == "run") == ("resumable" not in got)


class _Seen(Exception):
    pass


@pytest.mark.parametrize("method, names", _METHODS)
def test_methods_pass_every_option_on(monkeypatch, method, names):
    # Every option reaches execute_request with the caller's value.
    seen = {}

    def record(source, **options):
        seen.update(options, source=source)
        raise _Seen

    monkeypatch.setattr(ptc_client._prepare, "execute_request", record)
    values = {name: f"<{name}>" for name in names}

    async def call_async():
        async with AsyncClient("127.0.0.1:1") as c:
            await getattr(c, method.__name__)("<source>", **values)

    with pytest.raises(_Seen):
        if method.__qualname__.startswith("AsyncClient"):
            asyncio.run(call_async())
        else:
            with Client("127.0.0.1:1") as c:
                getattr(c, method.__name__)("<source>", **values)
    assert seen == {"source": "<source>", **values}


def test_tool_decorator():
    @tool(input_schema={"type": "object"})
    def weather(args, ctx):
        """The weather in a city."""
        return 1

    assert weather.name == "weather"
    assert weather.description == "The weather in a city."
    assert weather.input_schema == {"type": "object"}
