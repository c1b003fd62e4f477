"""The nightly image gate (``python -m pytest_llmbench nightly``): a store of nights that outlives CI runs
(``store.py``), the builds a bisect may walk, pinned when first seen (``candidates.py``), and the job that
chains the comparison, the store, ``history`` and ``bisect`` into one headline (``job.py``)."""
