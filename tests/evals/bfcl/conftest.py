"""A few real BFCL cases from the bfcl-eval wheel, shared by the BFCL tests."""

import pytest

from pytest_llmbench.evals import bfcl


@pytest.fixture(scope="module")
def cases():
    ids = ["simple_python_0", "parallel_0", "irrelevance_0", "multiple_0"]
    return {c.id: c for c in bfcl.load_cases(ids)}
