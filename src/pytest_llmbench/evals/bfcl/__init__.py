"""BFCL (Berkeley Function Calling Leaderboard): cases and grader from the bfcl-eval wheel, two prompt modes.

``cases`` (the wheel's data, the committed subsets), ``prompts`` (requests in ``tools`` and ``qwen-fc``
mode, and decoding the calls back), ``grading`` (bfcl's AST checker, per-case verdicts, running a set);
the multi-turn categories are :mod:`pytest_llmbench.evals.bfcl_multi_turn`. Everything a bench uses is
importable from here: ``bfcl.run_bfcl(server, bfcl.subset_cases(bfcl.SUBSET_CPU), "tools")``.
"""

from pytest_llmbench.evals.bfcl.cases import (DATA, DIST, QUOTAS_205, QUOTAS_CPU, SINGLE_TURN_205, SUBSET_205,
                                              SUBSET_CPU, SUBSET_SEED, VERSION_PREFIX, Case, category_ids,
                                              category_of, choose_subset, data_dir, load_cases, read_subset,
                                              subset_cases, write_subset)
from pytest_llmbench.evals.bfcl.grading import CHECKER_MODEL, BFCLResult, Verdict, checker, grade, grade_record, run_bfcl
from pytest_llmbench.evals.bfcl.prompts import (JSON_TYPES, MODES, PYTHON_HINT, DecodeError, Mode, decode_qwen_fc,
                                                decode_tool_calls, openai_name, qwen_fc_prompt, request_body,
                                                strip_thinking, to_openai_tools, with_python_hint)

__all__ = ["CHECKER_MODEL", "DATA", "DIST", "JSON_TYPES", "MODES", "PYTHON_HINT", "QUOTAS_205", "QUOTAS_CPU",
           "SINGLE_TURN_205", "SUBSET_205", "SUBSET_CPU", "SUBSET_SEED", "VERSION_PREFIX", "BFCLResult", "Case",
           "DecodeError", "Mode", "Verdict", "category_ids", "category_of", "checker", "choose_subset", "data_dir",
           "decode_qwen_fc", "decode_tool_calls", "grade", "grade_record", "load_cases", "openai_name",
           "qwen_fc_prompt", "read_subset", "request_body", "run_bfcl", "strip_thinking", "subset_cases",
           "to_openai_tools", "with_python_hint", "write_subset"]
