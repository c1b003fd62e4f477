"""Server-sent events → timestamped JSON objects, on the fast path and the general one."""

import pytest

from pytest_llmbench.transport.http import StreamError
from pytest_llmbench.transport.sse import parse_sse, parse_sse_columns


def test_parse_sse_keeps_arrival_time_of_each_event():
    pieces = [(1.0, b'data: {"a": 1}\n\ndata: {"a"'), (2.0, b": 2}\n\n"), (3.0, b"data: [DONE]\n\n")]
    events = parse_sse(pieces)
    assert [(e.t, e.data["a"]) for e in events] == [(1.0, 1), (2.0, 2)]


def test_parse_sse_rejects_garbage():
    with pytest.raises(StreamError, match="non-SSE bytes"):
        parse_sse([(0.0, b"<html>oops</html>\n\n")])


def test_non_json_payload_names_its_first_bytes():
    with pytest.raises(StreamError, match=r"non-JSON chunk: b'\{not json'"):
        parse_sse_columns([0.0], [b'data: {"a": 1}\n\ndata: {not json\n\n'])


def test_crlf_comments_and_multiline_data_take_the_general_path_with_the_same_result():
    lf = [b'data: {"a": 1}\n\n', b'data: {"a": 2}\n\n']
    crlf = [b': keep-alive\r\n\r\ndata: {"a": 1}\r\n\r\n', b'event: x\r\ndata: {"a":\r\ndata: 2}\r\n\r\n']
    assert parse_sse_columns([1.0, 2.0], lf) == ([1.0, 2.0], [{"a": 1}, {"a": 2}])
    assert parse_sse_columns([1.0, 2.0], crlf) == ([1.0, 2.0], [{"a": 1}, {"a": 2}])


def test_a_json_value_that_is_not_an_object_is_an_error():
    with pytest.raises(StreamError, match="non-object JSON chunk"):
        parse_sse_columns([0.0], [b"data: [1, 2]\r\n\r\n"])


def test_empty_body_has_no_events():
    assert parse_sse_columns([], []) == ([], [])
