"""Tests of pytest_llmbench.evals.decisions."""
