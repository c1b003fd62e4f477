"""test_key: the baseline key of a test must not depend on the config or on how xdist grouped it."""

from types import SimpleNamespace

import pytest

from pytest_llmbench.fixtures import test_key as key_of


@pytest.mark.parametrize("nodeid, config, expected", [
    ("b/t.py::test_x[smol-draft-chat-1u]", "smol-draft", "b/t.py::test_x[chat-1u]"),
    ("b/t.py::test_x[chat-1u-smol-draft]", "smol-draft", "b/t.py::test_x[chat-1u]"),
    ("b/t.py::test_x[smol-draft]", "smol-draft", "b/t.py::test_x"),
    ("b/t.py::test_x[gpu-smol-nospec-chat-4u]@gpu-smol-nospec", "gpu-smol-nospec", "b/t.py::test_x[chat-4u]"),
    ("b/t.py::test_x[a-b]", None, "b/t.py::test_x[a-b]"),
])
def test_key_drops_the_config_and_the_xdist_group(nodeid, config, expected):
    assert key_of(SimpleNamespace(nodeid=nodeid), config) == expected
