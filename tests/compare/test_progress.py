"""The comparison's progress line (compare/progress.py): unit k of n, elapsed, estimated remaining."""

from pytest_llmbench.compare.progress import UnitProgress


def test_each_unit_start_says_k_of_n_elapsed_and_remaining():
    now = [100.0]
    said: list[str] = []
    p = UnitProgress("smol-docker chat-1u", said.append, planned=12, clock=lambda: now[0], every_s=0)
    assert p.block(None) is None, "warm-up blocks are not units"
    now[0] = 104.0
    p.block(0)
    now[0] = 114.0
    p.block(1)
    p.plan(20)
    now[0] = 124.0
    p.block(2)
    assert (
        said[0]
        == "llmbench compare: smol-docker chat-1u: unit 1 of 12 (pilot), 4s elapsed, remaining: after the first unit"
    )
    assert said[1] == "llmbench compare: smol-docker chat-1u: unit 2 of 12 (pilot), 14s elapsed, ~1m50s remaining"
    assert said[2] == "llmbench compare: smol-docker chat-1u: unit 3 of 20 (planned), 24s elapsed, ~3m00s remaining"


def test_lines_are_rate_limited_and_a_unit_is_said_once():
    now = [0.0]
    said: list[str] = []
    p = UnitProgress("c s", said.append, planned=4, clock=lambda: now[0], every_s=5)
    p.block(0)
    p.block(0)
    now[0] = 1.0
    p.block(1)
    now[0] = 6.0
    p.block(2)
    assert [line.split(": ")[2].split(",")[0] for line in said] == ["unit 1 of 4 (pilot)", "unit 3 of 4 (pilot)"]
