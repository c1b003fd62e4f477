"""Report: results on disk, loading them for analysis, and the end-of-session tables."""

from pytest_llmbench.records.results import ResultsWriter, load_results

__all__ = ["ResultsWriter", "load_results"]
