"""Decision benches: typed decisions through the engine, scored, calibrated, paired and cache-checked.

One concern per module: ``schema`` (cases, questions, decisions), ``clients`` (the client for a server,
by the route its engine declares) over ``runner`` (the common runner), ``routes`` (SGLang's
/v1/systemone and /v1/decisions) and ``logprobs`` (the first-token fallback), ``metrics``,
``calibration``, ``paired`` (bootstrap intervals over cases), ``determinism`` (cold vs warm prefix
cache) and ``results`` (answers.jsonl, calibration.json). The decision sets themselves are loaded by
:mod:`pytest_llmbench.datasets.decisions`.
"""
