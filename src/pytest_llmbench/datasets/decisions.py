"""Decision datasets → :class:`Case` lists: two shipped in wheels, five read from a local path.

* sys1bench's canary set (``sys1bench/data/canary/canary.jsonl``: 200 tasks, 1,100 questions with
  generator ground truth) and typed-gguf's 60-item devset (``typed_gguf/bench/devset.jsonl``) are found
  through their wheel's RECORD, never imported (their packages pull heavy dependencies).
* Typed Decisions, Typed Decision Bench, Calibrated Typed Decisions, Procedural Typed Decisions and
  PubMedQA cannot be had offline: they are read from a folder the user names (``$LLMBENCH_<SET>``, else
  ``<data folder>/<set>``: :mod:`.files`) with one file per split; when it is absent, loading raises
  DatasetNotFound naming the path.

Rows may be case-shaped (``state`` + ``questions: {id: {type, instructions, criteria, gold}}``, the
sys1bench / Typed Decisions shape) or one question per row (typed-gguf's shape); PubMedQA also in its
own ``{pmid: {QUESTION, CONTEXTS, final_decision}}`` and Hugging Face ``pqa_labeled`` shapes. Gold may be
a label, a level, a bool, P(yes), or a distribution (a teacher's averaged answers).
"""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pytest_llmbench.datasets.decision_schema import YES_NO, YES_NO_OPTIONS, Case, Question
from pytest_llmbench.datasets.files import DatasetError, DatasetNotFound, data_dir, env_name, wheel_file
from pytest_llmbench.datasets.sources import WheelSource, register
from pytest_llmbench.jsonl import iter_jsonl

CANARY = ("sys1bench", "sys1bench/data/canary/canary.jsonl")
DEVSET = ("typed-gguf", "typed_gguf/bench/devset.jsonl")

#: Local sets, each a folder of that name under the data folder (or ``$LLMBENCH_<SET>``) with one file per split.
LOCAL_SETS = (
    "typed-decisions",
    "typed-decision-bench",
    "calibrated-typed-decisions",
    "pubmedqa",
    "procedural-typed-decisions",
)
#: Procedural Typed Decisions: the post scores "a fixed sample of up to 10 states per task and level"
#: (874 test, 880 validation) of its 18,000 states; rows are grouped by task/level for that draw.
PROCEDURAL_PER_GROUP = 10
PROCEDURAL_SEED = 0
SPLITS = ("train", "validation", "test")
_SPLIT_ALIASES = {"train": ("train",), "validation": ("validation", "dev", "val", "valid"), "test": ("test",)}
_GOLD_KEYS = ("gold", "ground_truth", "answer", "label", "probabilities", "gold_probabilities", "soft_label")
#: Names sets use for a yes/no question type (SGLang's System One: "noul"; /v1/decisions: "boolean").
_TYPE_ALIASES = {
    "boolean": YES_NO,
    "bool": YES_NO,
    "yes_no": YES_NO,
    "yesno": YES_NO,
    "binary": YES_NO,
    "choice": "choice",
    "score": "score",
    "noul": YES_NO,
}


# ---- wheels ---------------------------------------------------------------------------------------


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    return iter_jsonl(path, error=DatasetError)


def canary_cases(path: Path | str | None = None) -> list[Case]:
    """sys1bench's canary set: one Case per task (support_triage: 3 questions, email_security: 8)."""
    path = Path(path) if path else wheel_file(*CANARY)
    return [case_from_row(row, where=f"{path}:{n}") for n, row in _jsonl(path)]


def typed_gguf_devset(path: Path | str | None = None) -> list[Case]:
    """typed-gguf's 60 hand-written items (24 choice, 18 score, 18 yes/no), one question per case."""
    path = Path(path) if path else wheel_file(*DEVSET)
    return [case_from_row(row, where=f"{path}:{n}", group="typed-gguf") for n, row in _jsonl(path)]


def stratified_subset(cases: Sequence[Case], per_group: int, *, seed: int = 0) -> list[Case]:
    """``per_group`` cases from each group, drawn with a fixed seed (same subset on every machine)."""
    by_group: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by_group[c.group].append(c)
    rng = random.Random(seed)
    out: list[Case] = []
    for g in sorted(by_group):
        members = sorted(by_group[g], key=lambda c: c.case_id)
        out.extend(rng.sample(members, min(per_group, len(members))))
    return out


def split_cases(cases: Sequence[Case], parts: int = 2, *, seed: int = 0) -> list[list[Case]]:
    """Cases dealt into ``parts`` folds, stratified by group, fixed seed: all questions of a case together."""
    by_group: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by_group[c.group].append(c)
    rng = random.Random(seed)
    folds: list[list[Case]] = [[] for _ in range(parts)]
    i = 0
    for g in sorted(by_group):
        members = sorted(by_group[g], key=lambda c: c.case_id)
        rng.shuffle(members)
        for c in members:
            folds[i % parts].append(c)
            i += 1
    return folds


# ---- rows → cases ---------------------------------------------------------------------------------


def case_from_row(row: Mapping[str, Any], *, where: str = "", group: str | None = None, split: str = "") -> Case:
    """A case-shaped row, or a one-question row, → Case."""
    cid = next((str(row[k]) for k in ("case_id", "task_id", "id", "uid") if row.get(k) is not None), None)
    if cid is None:
        raise DatasetError(f"{where}: no case id (case_id, task_id or id)")
    grp = group or next((str(row[k]) for k in ("workflow", "domain", "source", "task", "dataset") if row.get(k)), "")
    if "state" not in row:
        raise DatasetError(f"{where}: case {cid!r} has no 'state'")
    if isinstance(row.get("questions"), Mapping):
        qs = {
            str(qid): question_from(str(qid), qd, where=f"{where} case {cid!r}") for qid, qd in row["questions"].items()
        }
    elif "type" in row:
        qs = {cid: question_from(cid, row, where=where)}
    else:
        raise DatasetError(f"{where}: case {cid!r} has neither 'questions' nor a question 'type'")
    if not qs:
        raise DatasetError(f"{where}: case {cid!r} has no questions")
    return Case(cid, row["state"], qs, group=grp, split=split)


def question_from(qid: str, qd: Mapping[str, Any], *, where: str = "") -> Question:
    if not isinstance(qd, Mapping):
        raise DatasetError(f"{where}: question {qid!r} is not an object")
    qtype = _TYPE_ALIASES.get(str(qd.get("type", "")).lower())
    if qtype is None:
        raise DatasetError(
            f"{where}: question {qid!r} has unknown type {qd.get('type')!r} (choice, score, or yes/no: noul, boolean)"
        )
    instructions = qd.get("instructions") or qd.get("question") or ""
    if not isinstance(instructions, str):
        instructions = json.dumps(instructions)
    options, descs = _options(qtype, qd.get("criteria"), qid, where)
    raw_gold = next((qd[k] for k in _GOLD_KEYS if k in qd and qd[k] is not None), None)
    try:
        gold = None if raw_gold is None else gold_vector(qtype, options, raw_gold)
    except ValueError as e:
        raise DatasetError(f"{where}: question {qid!r}: {e}") from None
    return Question(qid, qtype, instructions, options, descs, gold)


def _options(qtype: str, criteria: Any, qid: str, where: str) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    if qtype == YES_NO:
        if isinstance(criteria, Mapping):  # typed-gguf: {"true": desc, "false": desc}
            return YES_NO_OPTIONS, (criteria.get("true"), criteria.get("false"))
        return YES_NO_OPTIONS, (None, None)
    if isinstance(criteria, Mapping):  # {option: description|null}
        return tuple(str(k) for k in criteria), tuple(criteria.values())
    if isinstance(criteria, list) and criteria:
        if all(isinstance(c, Mapping) for c in criteria):
            key = "level" if qtype == "score" and all("level" in c for c in criteria) else "key"
            if not all(key in c for c in criteria):
                raise DatasetError(f"{where}: question {qid!r}: every criterion needs a {key!r}")
            return tuple(str(c[key]) for c in criteria), tuple(c.get("description") for c in criteria)
        if qtype == "score":  # [level description, ...]: levels are indices
            return tuple(str(i) for i in range(len(criteria))), tuple(str(c) for c in criteria)
        return tuple(str(c) for c in criteria), (None,) * len(criteria)
    raise DatasetError(f"{where}: question {qid!r} ({qtype}) needs criteria, got {criteria!r:.80}")


def gold_vector(qtype: str, options: Sequence[str], gold: Any) -> tuple[float, ...]:
    """A label, level, bool, P(yes) or distribution → a probability vector over ``options``."""
    n = len(options)

    def onehot(i: int) -> tuple[float, ...]:
        return tuple(1.0 if j == i else 0.0 for j in range(n))

    if isinstance(gold, Mapping):
        m = {_norm_key(qtype, k): float(v) for k, v in gold.items()}
        unknown = set(m) - set(options)
        if unknown:
            raise ValueError(f"gold names unknown options {sorted(unknown)} (options: {list(options)})")
        vec = [m.get(o, 0.0) for o in options]
    elif isinstance(gold, list):
        if len(gold) != n:
            raise ValueError(f"gold has {len(gold)} values for {n} options")
        vec = [float(x) for x in gold]
    elif qtype == YES_NO:
        if isinstance(gold, bool):
            return onehot(0 if gold else 1)
        if isinstance(gold, str):
            key = _norm_key(YES_NO, gold)
            if key not in YES_NO_OPTIONS:
                raise ValueError(f"yes/no gold {gold!r} is not yes/no/true/false")
            return onehot(YES_NO_OPTIONS.index(key))
        p = float(gold)
        vec = [p, 1.0 - p]
    else:
        key = str(gold)
        if key not in options:
            raise ValueError(f"gold {gold!r} is not one of the options {list(options)}")
        return onehot(list(options).index(key))
    if any(v < 0 for v in vec) or sum(vec) <= 0:
        raise ValueError(f"gold {gold!r} is not a distribution")
    total = sum(vec)
    return tuple(v / total for v in vec)


def _norm_key(qtype: str, k: Any) -> str:
    s = str(k).strip().lower() if qtype == YES_NO else str(k)
    if qtype == YES_NO:
        return {"true": "yes", "false": "no", "1": "yes", "0": "no"}.get(s, s)
    return s


# ---- local sets -----------------------------------------------------------------------------------


def local_root(name: str, root: Path | str | None = None, *, folder: Path | str | None = None) -> Path:
    """Where a local set lives: ``root``, else ``$LLMBENCH_<SET>``, else ``<data folder>/<set>``."""
    if name not in LOCAL_SETS:
        raise ValueError(f"unknown local decision set {name!r} (known: {sorted(LOCAL_SETS)})")
    if root:
        return Path(root).expanduser()
    if os.environ.get(env_name(name)):
        return Path(os.environ[env_name(name)]).expanduser()
    return data_dir(folder) / name


def split_file(root: Path, split: str) -> Path:
    """The file holding ``split`` under ``root`` (``test.jsonl``, ``dev.json``, ``data/test-*.parquet``…)."""
    if split not in _SPLIT_ALIASES:
        raise ValueError(f"unknown split {split!r} (known: {SPLITS})")
    tried: list[str] = []
    for alias in _SPLIT_ALIASES[split]:
        for pattern in (
            f"{alias}.jsonl",
            f"{alias}.jsonl.gz",
            f"{alias}.json",
            f"{alias}_set.json",
            f"{alias}.parquet",
            f"{alias}/*.jsonl",
            f"data/{alias}*.jsonl",
            f"data/{alias}*.parquet",
        ):
            tried.append(str(root / pattern))
            hits = sorted(root.glob(pattern))
            if hits:
                return hits[0]
    raise DatasetNotFound(f"no {split} split under {root} (looked for {', '.join(tried[:4])}, …)")


def _rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if path.suffix == ".parquet":
        import pandas as pd

        for i, record in enumerate(pd.read_parquet(path).to_dict("records")):
            yield f"{path} row {i}", cast("dict[str, Any]", record)  # parquet column names are strings
        return
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        for n, row in _jsonl(path):
            yield f"{path}:{n}", row
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, Mapping):  # {id: row} (PubMedQA's own files)
        for k, row in data.items():
            yield f"{path} id {k}", {"id": k, **row} if isinstance(row, Mapping) else {"id": k, "value": row}
    elif isinstance(data, list):
        for i, row in enumerate(data):
            yield f"{path}[{i}]", row
    else:
        raise DatasetError(f"{path}: expected a JSON list or object")


def pubmedqa_case(row: Mapping[str, Any], *, where: str = "", split: str = "") -> Case:
    """PubMedQA (own or Hugging Face shape) → one choice question yes/no/maybe over the abstract."""
    cid = str(row.get("pubid", row.get("id", row.get("pmid", ""))))
    question = row.get("QUESTION", row.get("question"))
    ctx = row.get("CONTEXTS", row.get("contexts"))
    if ctx is None and isinstance(row.get("context"), Mapping):
        ctx = row["context"].get("contexts")
    label = row.get("final_decision", row.get("answer"))
    if not cid or question is None or ctx is None:
        raise DatasetError(f"{where}: not a PubMedQA row (needs pubid/id, question, contexts)")
    options = ("yes", "no", "maybe")
    q = Question(
        "answer",
        "choice",
        str(question),
        options,
        ("the study supports yes", "the study supports no", "the evidence is inconclusive"),
        None if label is None else gold_vector("choice", options, str(label).lower()),
    )
    return Case(
        cid,
        "\n".join(map(str, ctx)) if isinstance(ctx, (list, tuple)) else str(ctx),
        {"answer": q},
        group="pubmedqa",
        split=split,
    )


def load_split(
    name: str, split: str, root: Path | str | None = None, *, folder: Path | str | None = None
) -> list[Case]:
    """One split of a local set; raises :class:`DatasetNotFound` naming the path when absent."""
    base = local_root(name, root, folder=folder)
    if not base.exists():
        raise DatasetNotFound(
            f"{name}: {base} does not exist (set --llmbench-data DIR, $LLMBENCH_DATA_DIR or ${env_name(name)})"
        )
    path = split_file(base, split)
    out: list[Case] = []
    for where, row in _rows(path):
        pubmed_shaped = "QUESTION" in row or "final_decision" in row or "pubid" in row
        if name == "pubmedqa" and pubmed_shaped:
            out.append(pubmedqa_case(row, where=where, split=split))
        else:
            out.append(case_from_row(row, where=where, split=split, group=_task_level(name, row)))
    return out


def _task_level(name: str, row: Mapping[str, Any]) -> str | None:
    """Procedural rows are grouped by task and level (the unit of the post's fixed sample)."""
    if name != "procedural-typed-decisions" or row.get("task") is None or row.get("level") is None:
        return None
    return f"{row['task']}/{row['level']}"


def procedural_sample(cases: Sequence[Case]) -> list[Case]:
    """The post's fixed draw: up to 10 states per task and level, the same on every machine."""
    return stratified_subset(cases, PROCEDURAL_PER_GROUP, seed=PROCEDURAL_SEED)


def n_questions(cases: Iterable[Case]) -> int:
    return sum(len(c.questions) for c in cases)


@dataclass(frozen=True)
class DecisionSplits:
    """A local decision set: one file per split under its folder (``load(name, "test")``)."""

    name: str

    def load(self, folder: Path, split: str | None = None) -> list[Case]:
        return load_split(self.name, split or "test", folder=folder)


register(WheelSource("sys1bench-canary", *CANARY, canary_cases))
register(WheelSource("typed-gguf-devset", *DEVSET, typed_gguf_devset))
for _name in LOCAL_SETS:
    register(DecisionSplits(_name))
