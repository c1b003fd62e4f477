"""Requests to a served model: one HTTP transport (``http``), server-sent event parsing (``sse``) and
the request functions registered by kind (``kinds``: chat stream, completions stream, JSON route)."""

from pytest_llmbench.transport.http import RawResponse, StreamClient, StreamError
from pytest_llmbench.transport.kinds import KINDS, JsonReply, RequestKind, call_json, get_kind, register
from pytest_llmbench.transport.sse import SSEEvent, parse_sse, parse_sse_columns

__all__ = [
    "KINDS",
    "JsonReply",
    "RawResponse",
    "RequestKind",
    "SSEEvent",
    "StreamClient",
    "StreamError",
    "call_json",
    "get_kind",
    "parse_sse",
    "parse_sse_columns",
    "register",
]
