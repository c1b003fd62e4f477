"""The baseline store: when an update appends to the history and when it restarts it; validation."""

from __future__ import annotations

from pytest_llmbench.gate.store import BaselineStore, Measurement, machine_changed, updated
from pytest_llmbench.gate.types import HISTORY_LEN, BaselineEntry

HIST = {"name": "History", "k": 3, "min_runs": 3, "fallback": {"name": "Spread", "spread": 2}}


def m(value, status="pass", noise=HIST):
    return Measurement(
        config="c",
        runner=None,
        test_key="t.py::t",
        metric="bfcl_passed",
        value=value,
        direction="higher",
        noise=noise,
        n=None,
        se=None,
        provenance={"runner": "r"},
        status=status,
    )


def test_a_passing_value_is_appended_and_the_history_capped():
    old = BaselineEntry(9.0, "higher", HIST, history=tuple(float(i) for i in range(HISTORY_LEN)))
    e = updated(old, m(42.0))
    assert e.history[-1] == 42.0 and len(e.history) == HISTORY_LEN and e.value == 42.0
    assert e.spread is not None  # History stores the history's SD for reviewers


def test_a_refresh_entry_is_replaced():
    old = BaselineEntry(190.0, "higher", HIST, history=(190.0,), provenance={"refresh": True})
    e = updated(old, m(170.0))
    assert e.history == (170.0,) and "refresh" not in e.provenance


def test_recording_appends_a_regressed_value_and_accept_restarts_the_history():
    """Issue 21: recording runs 2 and 3 wiped the history they were building; only accepting a nightly
    (=accept) restarts it at a REGRESSED value."""
    old = BaselineEntry(100.0, "higher", HIST, history=(99.0, 100.0, 101.0))
    assert updated(old, m(80.0, status="REGRESSED")).history == (99.0, 100.0, 101.0, 80.0)
    assert updated(old, m(80.0, status="REGRESSED"), "accept").history == (80.0,)


def test_a_value_from_another_machine_restarts_a_timing_history():
    old = BaselineEntry(100.0, "higher", HIST, history=(99.0, 100.0), provenance={"machine": {"cpu": "A", "cores": 2}})
    same = Measurement(
        "c", "ci-a", "t.py::t", "tps", 98.0, "higher", HIST, None, None, {"machine": {"cpu": "A", "cores": 2}}
    )
    other = Measurement(
        "c", "ci-a", "t.py::t", "tps", 150.0, "higher", HIST, None, None, {"machine": {"cpu": "B", "cores": 2}}
    )
    assert machine_changed(old, other) and not machine_changed(old, same)
    assert updated(old, same).history == (99.0, 100.0, 98.0)
    assert updated(old, other).history == (150.0,)
    assert machine_changed(BaselineEntry(100.0, "higher", HIST), other)  # an entry without a machine record


def test_update_new_adds_to_entries_that_are_still_learning_and_leaves_learned_ones(tmp_path):
    store = BaselineStore(tmp_path)
    history = {"name": "History", "k": 3, "min_runs": 3}
    for v in (1.0, 2.0, 3.0, 4.0):
        store.write([m(v, noise=history)], "new")
    assert store.file("c").get(None, "t.py::t", "bfcl_passed").history == (1.0, 2.0, 3.0)


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


# --- per-case sidecars (paired gates) -------------------------------------------------------------------


def with_cases(cases, config="c"):
    return Measurement(
        config=config,
        runner=None,
        test_key="t.py::t",
        metric="accept_length",
        value=2.0,
        direction="higher",
        noise={"name": "PairedT", "alpha": 0.01, "min_overlap": 0.9},
        n=2,
        se=0.5,
        provenance={},
        cases=cases,
    )


def test_write_stores_the_cases_beside_the_entry_and_the_store_reads_them_back(tmp_path):
    store = BaselineStore(tmp_path)
    written, errors = store.write([with_cases({"p2": 2.5, "p1": 1.5})], "all")
    assert errors == [] and written[0].entries == 1
    assert store.cases("c", None, "t.py::t", "accept_length") == {"p1": 1.5, "p2": 2.5}
    assert store.validate() == []
    store.write([with_cases(None)], "all")  # re-recorded without cases: the old ones would pair wrongly
    assert store.cases("c", None, "t.py::t", "accept_length") is None
    assert store.file("c").get(None, "t.py::t", "accept_length") is not None


def test_update_new_leaves_an_existing_entrys_cases_alone(tmp_path):
    store = BaselineStore(tmp_path)
    store.write([with_cases({"p1": 1.0, "p2": 2.0})], "new")
    written, _ = store.write([with_cases({"p1": 9.0, "p2": 9.0})], "new")
    assert written == [] and store.cases("c", None, "t.py::t", "accept_length") == {"p1": 1.0, "p2": 2.0}


def test_a_corrupt_sidecar_is_a_validation_error_and_blocks_its_entry(tmp_path):
    store = BaselineStore(tmp_path)
    store.write([with_cases({"p1": 1.0, "p2": 2.0})], "all")
    sidecar = next(tmp_path.glob("c.cases/shared/*/accept_length.jsonl"))
    sidecar.write_text(sidecar.read_text().replace('"value": 1', '"value": NaN'))
    errors = store.validate()
    assert len(errors) == 1 and f"{sidecar}:2:" in str(errors[0])
    before = (tmp_path / "c.yaml").read_text()
    written, errors = store.write([with_cases({"p1": 5.0, "p2": 5.0})], "all")
    assert written == [] and f"{sidecar}:2:" in errors[0]  # neither the entry nor the sidecar is rewritten
    assert (tmp_path / "c.yaml").read_text() == before and "NaN" in sidecar.read_text()
