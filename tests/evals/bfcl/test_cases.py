"""BFCL cases from the wheel and the committed subsets (the same draw on every machine)."""

from collections import Counter

import pytest

from pytest_llmbench.evals import bfcl


def test_committed_205_subset_is_what_the_seeded_draw_gives():
    ids = bfcl.read_subset(bfcl.SUBSET_205)
    assert len(ids) == len(set(ids)) == 205
    assert ids == bfcl.choose_subset(bfcl.QUOTAS_205)
    assert Counter(bfcl.category_of(i) for i in ids) == Counter(bfcl.QUOTAS_205)
    # the posts' named categories at their sizes: irrelevance, multi_turn_base, parallel, parallel_multiple 20 each
    assert all(bfcl.QUOTAS_205[c] == 20 for c in ("irrelevance", "multi_turn_base", "parallel", "parallel_multiple"))
    assert len(bfcl.QUOTAS_205) == 10 and all(10 <= n <= 25 for n in bfcl.QUOTAS_205.values())
    from pytest_llmbench.evals.bfcl_multi_turn import load_multi_turn_cases

    single = bfcl.subset_cases()
    multi = load_multi_turn_cases([i for i in ids if i.startswith("multi_turn")])
    assert len(single) == 185 and len(multi) == 20  # every id exists in the wheel, with an answer


def test_committed_cpu_subset_is_the_single_turn_draw():
    cpu = bfcl.read_subset(bfcl.SUBSET_CPU)
    single_turn = bfcl.choose_subset(bfcl.SINGLE_TURN_205)
    assert len(cpu) == 50 and set(cpu) <= set(single_turn)
    assert cpu == bfcl.choose_subset(bfcl.QUOTAS_CPU, within=sorted(single_turn))
    # the 205's single-turn part is that draw without `multiple`
    assert set(bfcl.read_subset(bfcl.SUBSET_205)) - set(single_turn) == {
        i for i in bfcl.read_subset(bfcl.SUBSET_205) if i.startswith("multi_turn")
    }


def test_unknown_case_id_is_an_error():
    with pytest.raises(KeyError, match="simple_python_99999"):
        bfcl.load_cases(["simple_python_99999"])
