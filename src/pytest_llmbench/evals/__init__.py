"""Quality and speculative-decoding evals: protocols, accept length, BFCL, GSM8K, thinking tokens, decisions.

Each module is one concern and imports nothing heavy at package import; bench tests pick what they need.
The prompt and decision sets they run on come from :mod:`pytest_llmbench.datasets`.
"""
