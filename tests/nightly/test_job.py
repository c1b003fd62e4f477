"""The nightly job's decisions over a real store: which night is the last good one, when a regression is
already owned by an earlier night (bisected once, not every night), and the headline a bisect record gives."""

from __future__ import annotations

from pytest_llmbench.cli.nightly import main
from pytest_llmbench.nightly.candidates import Candidate
from pytest_llmbench.nightly.job import JobSettings, NightlyJob, bisect_finding
from pytest_llmbench.nightly.store import new_id, open_store

REF = Candidate("repo/x:release", "image", "sha256:ref")


def _store(tmp_path, states: list[tuple[str, str, dict | None]]):
    store = open_store(tmp_path / "store")
    for i, (label, state, regression) in enumerate(states):
        src = tmp_path / f"src-{i}"
        src.mkdir(parents=True)
        (src / "results.jsonl").write_text("{}\n")
        meta = {
            "id": new_id(label),
            "night": label,
            "time": f"2026-12-{i + 1:02d}T03:30:00+00:00",
            "state": state,
            "reference": {"tag": REF.tag, "pinned": REF.pinned, "kind": "image"},
            "candidate": {"tag": f"repo/x:{label}", "pinned": f"sha256:{label}", "kind": "image"},
        }
        if regression:
            meta["regression"] = regression
        store.add_night(src, meta)
    return store


def _job(tmp_path, store):
    return NightlyJob(JobSettings("repo/x:release", "repo/x:n", [], tmp_path / "out"), store, say=lambda s: None)


def test_the_last_good_night_is_the_last_passed_one_against_the_same_reference(tmp_path):
    store = _store(tmp_path, [("n1", "PASSED", None), ("n2", "PASSED", None), ("n3", "FAILED", None)])
    job = _job(tmp_path, store)
    good = job._last_good(REF, store.nights())
    assert good is not None and good.meta["night"] == "n2"  # a broken night (FAILED) is not good
    other = Candidate("repo/x:v2", "image", "sha256:v2")
    assert job._last_good(other, store.nights()) is None  # a re-pinned reference starts over


def test_a_regression_is_bisected_once_and_later_nights_inherit_its_finding(tmp_path):
    owned = {"night": "n3", "night_id": "x", "finding": "culprit n3"}
    store = _store(
        tmp_path,
        [("n1", "PASSED", None), ("n3", "REGRESSED", owned), ("n4", "FAILED", None), ("n5", "REGRESSED", owned)],
    )
    job = _job(tmp_path, store)
    assert job._regression("REGRESSED", REF, store.nights()) == owned
    assert job._regression("PASSED", REF, store.nights()) is None
    store2 = _store(tmp_path / "b", [("n1", "REGRESSED", owned), ("n2", "PASSED", None)])
    assert job._regression("REGRESSED", REF, store2.nights()) is None  # a pass since: a new regression
    lines: list[str] = []
    meta = {"night": "n6", "id": "n6-id", "detail": "1 comparison regressed"}
    result = job._verdict("REGRESSED", meta, owned, [], REF, REF, store.nights(), lines)
    assert (result.state, result.exit_status) == ("REGRESSED", 1)
    assert result.headline == "REGRESSED at night n3 — culprit n3 (known)"


def test_a_pass_and_a_broken_night_end_in_their_own_headlines(tmp_path):
    store = _store(tmp_path, [("n1", "PASSED", None)])
    job = _job(tmp_path, store)
    ok = job._verdict(
        "PASSED", {"night": "n2", "id": "i", "detail": "2 comparisons equivalent"}, None, [], REF, REF, [], []
    )
    assert (ok.headline, ok.exit_status) == ("PASSED — night n2: 2 comparisons equivalent", 0)
    broken = job._verdict("FAILED", {"night": "n3", "id": "i", "detail": "1 test failed"}, None, [], REF, REF, [], [])
    assert broken.exit_status == 1 and broken.headline.startswith("FAILED — night n3")
    unclear = {"night": "n4", "id": "i", "detail": "1 comparison inconclusive", "pytest_exit": 0}
    assert job._verdict("INCONCLUSIVE", unclear, None, [], REF, REF, [], []).exit_status == 0
    strict = {**unclear, "pytest_exit": 1}  # `-- --llmbench-strict`: the session failed on it, so does the night
    assert job._verdict("INCONCLUSIVE", strict, None, [], REF, REF, [], []).exit_status == 1
    first = _job(tmp_path / "first", open_store(tmp_path / "empty"))
    (tmp_path / "first" / "out").mkdir(parents=True)
    meta = {"night": "n1", "id": "i", "detail": "regressed"}
    cold = first._verdict("REGRESSED", meta, None, [], REF, REF, [], [])
    assert cold.headline == "REGRESSED at night n1 — not bisected: no earlier night passed against this reference"


def test_the_bisect_record_becomes_the_headline_words():
    assert bisect_finding({"status": "culprit", "culprit": "nightly-08"}) == "culprit nightly-08"
    rec = {"status": "unknown", "last_good": "b11378", "first_bad": "b11382", "message": "budget spent"}
    assert bisect_finding(rec) == "unknown between b11378 and b11382"
    assert bisect_finding({"status": "not-reproduced", "message": "the ends compare same"}).startswith("not-reproduced")


def test_bad_input_is_a_usage_error_naming_it(tmp_path, capsys):
    assert main(["--reference", "a", "--candidate", "b", "--store", "git+file:///x.git", "--", "t.py"]) == 2
    assert "git+REMOTE#BRANCH" in capsys.readouterr().err
    assert main(["history", "--store", str(tmp_path / "empty-store")]) == 2
    assert "holds no nights" in capsys.readouterr().err


def test_the_night_that_bisected_owns_the_regression_through_its_stored_finding(tmp_path):
    store = _store(tmp_path, [("n1", "PASSED", None), ("n2", "REGRESSED", None)])
    job = _job(tmp_path, store)
    assert job._regression("REGRESSED", REF, store.nights()) is None  # n2 bisected nothing yet: tonight would
    n2 = store.nights()[-1]
    finding = tmp_path / "finding"
    finding.mkdir()
    (finding / "regression.json").write_text('{"night": "n2", "finding": "culprit n2"}\n')
    store.add_bisect(n2.id, finding)  # what n2's job stores after its bisect
    assert job._regression("REGRESSED", REF, store.nights()) == {"night": "n2", "finding": "culprit n2"}
