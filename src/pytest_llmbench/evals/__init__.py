"""Quality and speculative-decoding evals: prompt sets, protocols, accept length, BFCL, GSM8K, thinking tokens.

Each module is one concern and imports nothing heavy at package import; bench tests pick what they need.
"""
