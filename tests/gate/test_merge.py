"""Merging the baseline folders the shards wrote: each shard's changes applied to the common base."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_llmbench.gate.baselines import BaselineFile, dumps, load
from pytest_llmbench.gate.merge import BaselineMergeError, merge_baselines
from pytest_llmbench.gate.types import BaselineEntry


def entry(value: float, host: str = "h1") -> BaselineEntry:
    return BaselineEntry(
        value=value,
        direction="higher",
        noise={"name": "Relative", "frac": 0.05},
        history=(value,),
        provenance={"date": "2026-11-30", "host": host},
    )


def write(folder: Path, config: str, entries: dict) -> None:
    bf = BaselineFile(path=folder / f"{config}.yaml", config=config)
    for (runner, test, metric), e in entries.items():
        bf.put(runner, test, metric, e)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{config}.yaml").write_text(dumps(bf))


@pytest.fixture
def base(tmp_path):
    b = tmp_path / "base"
    write(b, "alpha", {("cpu-2c", "t::a", "tput"): entry(10), (None, "t::a", "acc"): entry(0.5)})
    write(b, "beta", {("cpu-2c", "t::b", "tput"): entry(20)})
    (b / "decisions" / "alpha").mkdir(parents=True)
    (b / "decisions" / "alpha" / "canary.answers.jsonl").write_text('{"id": 1}\n')
    return b


def shard(tmp_path: Path, base: Path, name: str) -> Path:
    """A shard's baselines folder: a copy of the checkout it started from."""
    return Path(shutil.copytree(base, tmp_path / name))


def test_each_shards_changes_land_and_untouched_entries_stay(tmp_path, base):
    s1, s2 = shard(tmp_path, base, "s1"), shard(tmp_path, base, "s2")
    write(s1, "alpha", {("cpu-2c", "t::a", "tput"): entry(11, "h1"), (None, "t::a", "acc"): entry(0.5)})
    write(s2, "beta", {("cpu-2c", "t::b", "tput"): entry(21, "h2"), ("cpu-2c", "t::b2", "tput"): entry(5, "h2")})
    write(s2, "gamma", {(None, "t::g", "acc"): entry(0.9, "h2")})
    (s2 / "decisions" / "beta").mkdir(parents=True)
    (s2 / "decisions" / "beta" / "canary.answers.jsonl").write_text('{"id": 2}\n')

    changes = merge_baselines(base, [s1, s2])  # in place: base is the checkout

    assert {c.describe() for c in changes} == {
        "alpha.yaml: runners › cpu-2c › t::a › tput",
        "beta.yaml: runners › cpu-2c › t::b › tput",
        "beta.yaml: runners › cpu-2c › t::b2 › tput",
        "gamma.yaml: shared › t::g › acc",
        "decisions/beta/canary.answers.jsonl",
    }
    alpha = load(base / "alpha.yaml", "alpha")
    assert alpha.get("cpu-2c", "t::a", "tput").value == 11 and alpha.get(None, "t::a", "acc").value == 0.5
    beta = load(base / "beta.yaml", "beta")
    assert beta.get("cpu-2c", "t::b", "tput").provenance["host"] == "h2"
    assert load(base / "gamma.yaml", "gamma").get(None, "t::g", "acc").value == 0.9
    assert "config: gamma" in (base / "gamma.yaml").read_text()
    assert (base / "decisions" / "beta" / "canary.answers.jsonl").read_text() == '{"id": 2}\n'
    assert (base / "decisions" / "alpha" / "canary.answers.jsonl").read_text() == '{"id": 1}\n'


def test_merging_into_a_new_folder_leaves_the_base_alone(tmp_path, base):
    s1 = shard(tmp_path, base, "s1")
    write(s1, "beta", {("cpu-2c", "t::b", "tput"): entry(30)})
    before = (base / "beta.yaml").read_text()
    merge_baselines(tmp_path / "out", [s1], base=base)
    assert (base / "beta.yaml").read_text() == before
    assert load(tmp_path / "out" / "beta.yaml", "beta").get("cpu-2c", "t::b", "tput").value == 30
    assert (tmp_path / "out" / "alpha.yaml").read_text() == (base / "alpha.yaml").read_text()


def test_unchanged_shards_write_nothing(tmp_path, base):
    before = {p: p.read_bytes() for p in base.rglob("*") if p.is_file()}
    assert merge_baselines(base, [shard(tmp_path, base, "s1"), shard(tmp_path, base, "s2")]) == []
    assert {p: p.read_bytes() for p in base.rglob("*") if p.is_file()} == before


def test_the_same_entry_changed_by_two_shards_is_refused_naming_it_and_nothing_is_written(tmp_path, base):
    s1, s2 = shard(tmp_path, base, "s1"), shard(tmp_path, base, "s2")
    write(s1, "alpha", {("cpu-2c", "t::a", "tput"): entry(11, "h1")})
    write(s2, "alpha", {("cpu-2c", "t::a", "tput"): entry(12, "h2")})
    write(s2, "beta", {("cpu-2c", "t::b", "tput"): entry(99)})
    before = (base / "beta.yaml").read_text()
    with pytest.raises(
        BaselineMergeError,
        match=r"alpha.yaml: runners › cpu-2c › t::a › tput: changed "
        r"differently by .*s1 and .*s2",
    ):
        merge_baselines(base, [s1, s2])
    assert (base / "beta.yaml").read_text() == before


def test_the_same_answers_file_changed_by_two_shards_is_refused(tmp_path, base):
    s1, s2 = shard(tmp_path, base, "s1"), shard(tmp_path, base, "s2")
    (s1 / "decisions" / "alpha" / "canary.answers.jsonl").write_text('{"id": 3}\n')
    (s2 / "decisions" / "alpha" / "canary.answers.jsonl").write_text('{"id": 4}\n')
    with pytest.raises(BaselineMergeError, match=r"decisions/alpha/canary.answers.jsonl: changed differently"):
        merge_baselines(base, [s1, s2])


def test_an_unreadable_shard_file_is_named(tmp_path, base):
    s1 = shard(tmp_path, base, "s1")
    (s1 / "beta.yaml").write_text("runners: [oops\n")
    with pytest.raises(BaselineMergeError, match=r"s1/beta.yaml is unreadable"):
        merge_baselines(base, [s1])


def test_a_shards_per_case_sidecars_land_beside_its_entries(tmp_path, base):
    """The paired gates' sidecars (gate/cases.py) are plain files under <config>.cases/: merged file by file."""
    from pytest_llmbench.gate.store import BaselineStore, Measurement

    s1 = shard(tmp_path, base, "s1")
    BaselineStore(s1).write(
        [
            Measurement(
                config="alpha",
                runner=None,
                test_key="t::a",
                metric="acc",
                value=0.5,
                direction="higher",
                noise={"name": "McNemar", "alpha": 0.01},
                n=2,
                se=None,
                provenance={},
                cases={"c1": 1.0, "c2": 0.0},
            )
        ],
        "all",
    )
    merge_baselines(base, [s1])
    assert BaselineStore(base).cases("alpha", None, "t::a", "acc") == {"c1": 1.0, "c2": 0.0}
