"""``history`` reads a nightly store directly (its folder or its URL), on the CPU campaign's committed store
(experiments/data/nightly/store: 14 nights, the slowdown baked in from nightly-08)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_llmbench.cli import history

STORE = Path(__file__).parents[2] / "experiments" / "data" / "nightly" / "store"
ARGS = ["--no-html", "--no-step-summary", "--last", "1", "--fail-on-new"]


def _found(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "change_points.jsonl").read_text().splitlines()]


def test_history_reads_a_store_folder_as_its_nights(tmp_path: Path) -> None:
    assert history.main([str(STORE), "--out", str(tmp_path), *ARGS]) == 0  # night 14 holds nothing new
    md = (tmp_path / "history.md").read_text()
    assert "14 nights (" in md
    ratios = [f for f in _found(tmp_path) if f["kind"] == "ratio"]
    assert ratios and all("nightly-08" in f["first_night"] and f["worse"] and not f["new"] for f in ratios)


def test_history_reads_a_store_url_through_fsspec(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert history.main([STORE.resolve().as_uri(), "--out", str(out), *ARGS]) == 0
    fetched = sorted(p.name for p in (out / "store-nights").iterdir())
    assert len(fetched) == 14 and fetched[7].split("-", 1)[1].startswith("nightly-08")
    assert {f["first_night"] for f in _found(out) if f["kind"] == "ratio"} == {fetched[7]}


def test_a_store_url_that_cannot_be_opened_is_named(tmp_path: Path, capsys) -> None:
    assert history.main(["nosuchfs://bucket/nights", "--out", str(tmp_path), *ARGS]) == 2
    assert "nosuchfs://bucket/nights" in capsys.readouterr().err


def test_an_empty_store_folder_says_it_holds_no_night(tmp_path: Path, capsys) -> None:
    (tmp_path / "store" / "nights").mkdir(parents=True)
    assert history.main([str(tmp_path / "store"), "--out", str(tmp_path / "o"), *ARGS]) == 2
    assert "no complete night" in capsys.readouterr().err
