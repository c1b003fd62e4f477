"""The baseline store: when an update appends to the history and when it restarts it; validation."""

from __future__ import annotations

from pytest_llmbench.gate.entry import HISTORY_LEN, BaselineEntry
from pytest_llmbench.gate.store import BaselineStore, Measurement, updated

HIST = {"name": "History", "k": 3, "min_runs": 3, "fallback": {"name": "Spread", "spread": 2}}


def m(value, status="pass", noise=HIST):
    return Measurement(config="c", runner=None, test_key="t.py::t", metric="bfcl_passed", value=value,
                       direction="higher", noise=noise, n=None, se=None, provenance={"runner": "r"}, status=status)


def test_a_passing_value_is_appended_and_the_history_capped():
    old = BaselineEntry(9.0, "higher", HIST, history=tuple(float(i) for i in range(HISTORY_LEN)))
    e = updated(old, m(42.0))
    assert e.history[-1] == 42.0 and len(e.history) == HISTORY_LEN and e.value == 42.0
    assert e.spread is not None  # History stores the history's SD for reviewers


def test_a_refresh_entry_is_replaced():
    old = BaselineEntry(190.0, "higher", HIST, history=(190.0,), provenance={"refresh": True})
    e = updated(old, m(170.0))
    assert e.history == (170.0,) and "refresh" not in e.provenance


def test_a_regressed_value_restarts_the_history():
    old = BaselineEntry(100.0, "higher", HIST, history=(99.0, 100.0, 101.0))
    assert updated(old, m(80.0, status="REGRESSED")).history == (80.0,)


def test_a_model_this_process_never_saw_still_writes():
    e = updated(None, m(1.0, noise={"name": "NeverDefinedHere", "x": 1}))
    assert e.noise == {"name": "NeverDefinedHere", "x": 1} and e.spread is None


def test_write_merges_into_the_file_and_validate_reads_every_file(tmp_path):
    store = BaselineStore(tmp_path)
    store.write([m(5.0)], "all")
    written, errors = store.write([m(6.0, noise={"name": "Spread", "spread": 1})], "all")
    assert not errors and written[0].entries == 1
    assert store.file("c").get(None, "t.py::t", "bfcl_passed").history == (5.0, 6.0)
    assert store.write([m(7.0)], "new") == ([], [])  # =new leaves existing entries alone
    (tmp_path / "bad.yaml").write_text("shared: {t: {m: {value: .nan}}}\n")
    assert [e.path.name for e in store.validate()] == ["bad.yaml"]
