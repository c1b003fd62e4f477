"""The ``datasets`` fixture: --llmbench-data reaches the loaders, and a missing set skips the test (the one
place DatasetNotFound becomes a skip)."""

from __future__ import annotations

import json


def test_a_missing_set_skips_naming_the_path_and_a_present_one_loads(pytester, tmp_path):
    data = tmp_path / "data"
    (data / "gsm8k").mkdir(parents=True)
    (data / "gsm8k" / "test.jsonl").write_text(json.dumps({"question": "1+1?", "answer": "#### 2"}) + "\n")
    (data / "typed-decisions").mkdir()
    pytester.makepyfile(
        test_d="""
        def test_present(datasets):
            prompts = datasets.load("gsm8k")
            assert [p.answer for p in prompts] == ["2"]
            assert len(datasets.prompt_set("gsm8k", 5, seed=1)) == 1

        def test_absent_set(datasets):
            datasets.load("math500")

        def test_absent_split(datasets):
            datasets.cases("typed-decisions", "test")
    """
    )
    result = pytester.runpytest_inprocess(f"--llmbench-data={data}", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=2)
    out = result.stdout.str()
    assert f"math500 data not found: looked for {data / 'math500' / 'test.jsonl'}" in out
    assert f"no test split under {data / 'typed-decisions'}" in out


def test_outside_the_fixture_a_missing_set_is_an_error_not_a_skip(pytester, tmp_path):
    pytester.makepyfile(
        test_e="""
        import pytest
        from pytest_llmbench.datasets import DatasetNotFound, load

        def test_load(monkeypatch, tmp_path):
            monkeypatch.setenv("LLMBENCH_DATA_DIR", str(tmp_path))
            with pytest.raises(DatasetNotFound):
                load("mbpp")
    """
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
