"""Decision benches: typed decisions through the engine, scored, calibrated, paired and cache-checked.

One concern per module: ``schema`` (cases, questions, decisions), ``datasets`` (sys1bench canary,
typed-gguf devset, local Typed Decisions / PubMedQA splits), ``clients`` (/v1/systemone, /v1/decisions,
logprob fallback), ``metrics``, ``calibration``, ``paired`` (bootstrap intervals over cases),
``determinism`` (cold vs warm prefix cache) and ``results`` (answers.jsonl, calibration.json).
"""
