"""bisect --store: the ends and the builds between come from a store's nights, each as pinned."""

from __future__ import annotations

import pytest

from pytest_llmbench.cli import bisect as bisect_cli
from pytest_llmbench.nightly.candidates import CandidateError
from pytest_llmbench.nightly.store import open_store
from pytest_llmbench.nightly.store_bisect import bisect_from_store

STATES = ["PASSED", "PASSED", "INCONCLUSIVE", "FAILED", "REGRESSED", "REGRESSED"]


def _store(tmp_path, states=STATES):
    """Nights nightly-01… in these states; each tag pinned to an ID unlike its tag."""
    store = open_store(tmp_path / "store")
    for k, state in enumerate(states, 1):
        tag = f"llmbench-local/llama-server:nightly-{k:02d}"
        store.pin(tag, f"sha256:{k:064x}", "image")
        folder = tmp_path / f"n{k}"
        folder.mkdir()
        (folder / "results.jsonl").write_text("")
        meta = {
            "id": f"2026120{k}T000000Z-nightly-{k:02d}",
            "night": f"nightly-{k:02d}",
            "time": f"2026-12-0{k}T00:00:00+00:00",
            "state": state,
            "candidate": {"tag": tag, "kind": "image", "pinned": "sha256:stale"},
            "pytest_args": ["bench.py", "--llmbench-configs", f"night{k}.yaml"],
        }
        store.add_night(folder, meta)
    return store


def test_the_ends_are_the_last_passed_and_the_first_regressed_night_and_every_build_runs_its_pin(tmp_path):
    found = bisect_from_store(_store(tmp_path))
    assert (found.good.meta["night"], found.bad.meta["night"]) == ("nightly-02", "nightly-05")
    assert [c.label for c in found.builds] == ["nightly-02", "nightly-03", "nightly-04", "nightly-05"]
    assert [c.pinned for c in found.builds] == [
        f"sha256:{k:064x}" for k in (2, 3, 4, 5)
    ]  # the pin, not the night's copy
    assert found.pytest_args == ("bench.py", "--llmbench-configs", "night5.yaml")


def test_named_nights_are_the_ends(tmp_path):
    found = bisect_from_store(_store(tmp_path), good_night="nightly-01", bad_night="20261206T000000Z-nightly-06")
    assert [c.label for c in found.builds] == [f"nightly-{k:02d}" for k in range(1, 7)]


@pytest.mark.parametrize(
    ("states", "kwargs", "said"),
    [
        (["PASSED", "INCONCLUSIVE"], {}, "no REGRESSED night to bisect; name one with --bad-night"),
        (["FAILED", "REGRESSED"], {}, "no PASSED night before nightly-02; name the good end with --good-night"),
        (STATES, {"bad_night": "nightly-09"}, "--bad-night nightly-09: no such night in store"),
        (STATES, {"good_night": "nightly-05", "bad_night": "nightly-03"}, "is not before --bad-night nightly-03"),
    ],
)
def test_a_store_that_cannot_name_the_ends_says_which_option_to_give(tmp_path, states, kwargs, said):
    with pytest.raises(CandidateError, match=said.replace("(", r"\(")):
        bisect_from_store(_store(tmp_path, states), **kwargs)


def test_the_command_refuses_store_with_explicit_ends_and_names_a_store_without_a_regression(tmp_path, capsys):
    store = _store(tmp_path, ["PASSED", "PASSED"])
    assert bisect_cli.main(["--store", str(tmp_path / "store"), "--good", "a", "--out", str(tmp_path / "o")]) == 2
    assert "--store names the ends and the builds: drop --good" in capsys.readouterr().err
    assert bisect_cli.main(["--store", str(tmp_path / "store"), "--out", str(tmp_path / "o")]) == 2
    assert f"store {store.url}: no REGRESSED night to bisect" in capsys.readouterr().err
    assert bisect_cli.main(["--good", "a", "--out", str(tmp_path / "o")]) == 2
    assert "--good and --bad are required (or --store" in capsys.readouterr().err
