"""The GSM8K grader on hand-made answers, and the accuracy interval against scipy."""

import pytest
from scipy import stats

from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.evals import gsm8k

from .fakes import FakeRun, record


@pytest.mark.parametrize(
    "text, expected",
    [
        (r"So the total is \boxed{42}.", "42"),
        (r"First \boxed{3}, then corrected: \boxed{5}", "5"),
        (r"\boxed{\frac{1}{2}}", "0.5"),
        (r"The answer is \boxed{\$1,234.00}", "1234"),
        (r"\boxed{18 \text{ apples}}", "18"),
        ("She pays 12 dollars, then 30 more, so 42 in total.", "42"),
        ("The farm has 1,250 cows.", "1250"),
        ("Total: $3.50.", "3.5"),
        ("no digits here", None),
    ],
)
def test_extract_answer(text, expected):
    assert gsm8k.extract_answer(text) == expected


@pytest.mark.parametrize(
    "raw, norm", [("1,000", "1000"), ("$18", "18"), ("7.0", "7"), ("7.", "7"), ("-3.50", "-3.5"), ("abc", None)]
)
def test_normalize_number(raw, norm):
    assert gsm8k.normalize_number(raw) == norm


def test_boxed_beats_a_later_number():
    assert gsm8k.is_correct(r"\boxed{72} (checked in 2 steps)", "#### 72")


def test_unboxed_uses_the_last_number():
    assert gsm8k.is_correct("48 + 24 = 72", "72")
    assert not gsm8k.is_correct("72 is wrong, it is 70", "72")


def test_comma_numbers_match_plain_gold():
    assert gsm8k.is_correct(r"\boxed{2,400}", "... #### 2400")
    assert gsm8k.is_correct(r"\boxed{2400}", "#### 2,400")


def test_last_boxed_handles_nested_braces_and_unclosed():
    assert gsm8k.last_boxed(r"\boxed{\frac{3}{4}} and \boxed{x") == r"\frac{3}{4}"
    assert gsm8k.last_boxed("nothing") is None


def test_grade_counts_cut_and_failed_answers_and_the_interval_is_scipys():
    prompts = [Prompt(id=f"q{i}", set="gsm8k", turns=("?",), answer=str(i)) for i in range(5)]
    records = [
        record(text=r"\boxed{0}"),
        record(text="1"),
        record(text="nope", finish="length", tokens=50),
        record(ok=False),
        record(text=r"\boxed{4}"),
    ]
    res = gsm8k.grade(prompts, records, max_tokens=50)
    assert (res.correct, res.n, res.cut, res.failed) == (3, 5, 1, 1)
    ci = stats.binomtest(3, 5).proportion_ci(confidence_level=0.95)
    assert res.interval() == pytest.approx((ci.low, ci.high))
    d = res.as_dict()
    assert d["cut_ids"] == ["q2"] and d["wrong_ids"] == ["q2", "q3"]
    assert d["ci_low"] < d["accuracy"] < d["ci_high"]
    assert res.by_case() == {"q0": 1.0, "q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 1.0}  # McNemar's cases


def test_run_gsm8k_sends_the_protocol_and_grades():
    prompts = [Prompt(id="a", set="gsm8k", turns=("What is 2+2?",), answer="4")]
    fake = FakeRun(lambda b: record(text=r"\boxed{4}"))
    res, _ = gsm8k.run_gsm8k(None, prompts, "gsm8k-seeds", run=fake, max_tokens=512)
    body = fake.calls[0]["bodies"][0]
    assert body["max_tokens"] == 512 and body["reasoning_effort"] == "medium"
    assert fake.calls[0]["concurrency"] == 32
    assert res.correct == 1
