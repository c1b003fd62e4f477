"""What a session leaves behind and how it is read back: results.jsonl written as records arrive
(``results.py``), a results folder read whole (``folder.py``), sglang's bench_serving JSONL in and out
(``bench_serving.py``) and the session verdict computed from the records (``verdict.py``).

Why a package of its own (issue 54): the fixtures, the comparison, the bisect and the history write and read
records; report/ only presents them.
"""
