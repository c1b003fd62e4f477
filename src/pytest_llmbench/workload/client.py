"""Old import path of the transport: the code lives in :mod:`pytest_llmbench.transport` now."""

from pytest_llmbench.transport.http import RawResponse, StreamClient, StreamError
from pytest_llmbench.transport.sse import SSEEvent, parse_sse, parse_sse_columns

__all__ = ["RawResponse", "SSEEvent", "StreamClient", "StreamError", "parse_sse", "parse_sse_columns"]
