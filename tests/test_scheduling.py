"""scheduling: the config a node id belongs to decides its xdist worker (one server start per config)."""

from __future__ import annotations

import pytest

from pytest_llmbench.scheduling import SCOPE_PREFIX, config_in_nodeid, make_scheduler, wants_own_scheduler

NAMES = ["smol", "smol-draft", "a-b", "gpu-smol-nospec"]


@pytest.mark.parametrize(
    "nodeid, expected",
    [
        ("benches/test_x.py::test_chat[smol-1]", "smol"),
        ("benches/test_x.py::test_chat[1-smol-draft]", "smol-draft"),  # the longer name wins
        ("benches/test_x.py::test_chat[smol-draft]", "smol-draft"),
        ("t.py::T::test_m[4-a-b-x]", "a-b"),
        ("t.py::test[gpu-smol-nospec-chat-1u]", "gpu-smol-nospec"),
        ("t.py::test[smol-1]@smol", "smol"),  # xdist loadgroup's old suffix
        ("t.py::test[smolx-1]", None),  # a part, not a prefix, must match
        ("t.py::test_plain", None),
        ("t.py::test[draft]", None),
    ],
)
def test_config_in_nodeid(nodeid, expected):
    assert config_in_nodeid(nodeid, NAMES) == expected


def test_splitting_modes_only():
    assert wants_own_scheduler("loadgroup", NAMES) and wants_own_scheduler("load", NAMES)
    assert not wants_own_scheduler("each", NAMES) and not wants_own_scheduler("no", NAMES)
    assert not wants_own_scheduler("load", [])


def test_scope_is_the_config(pytestconfig):
    pytest.importorskip("xdist")
    pytestconfig.option.tx = ["popen"] * 2
    pytestconfig.option.numprocesses = 2
    sched = make_scheduler(pytestconfig, None, {n: None for n in NAMES})
    assert sched._split_scope("t.py::test[smol-draft-4]") == SCOPE_PREFIX + "smol-draft"
    assert sched._split_scope("t.py::test[smol-1]") == sched._split_scope("u.py::other[smol]")
    assert sched._split_scope("t.py::test_plain") == "t.py::test_plain"


def test_record_starts_are_named_after_the_config():
    from pytest_llmbench.scheduling import config_in_nodeid, is_start_token, start_id

    assert start_id("smol-nospec", 1, 1) == "smol-nospec"
    assert start_id("smol-nospec", 2, 3) == "smol-nospec-start2of3"
    assert is_start_token("start2of3") and not is_start_token("start2") and not is_start_token("chat-1u")
    assert config_in_nodeid("t.py::test_x[smol-nospec-start2of3-chat-1u]", ["smol-nospec", "smol"]) == "smol-nospec"
