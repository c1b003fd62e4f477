"""BFCL (Berkeley Function Calling Leaderboard): cases and grader from the bfcl-eval wheel, two prompt modes.

Why: the seeds report BFCL on a fixed 205-case subset with a run-to-run spread of 8 cases, so the
subset is a committed list of ids (``data/bfcl_subset_205.txt``), the verdict is BFCL's own AST checker,
and every case's pass/fail is kept so a change shows which cases flipped.

The wheel is installed with ``--no-deps``: its checker imports cleanly once
``bfcl_eval.constants.model_config`` (which imports every vendor SDK) is stubbed in ``sys.modules``;
``bfcl_eval.utils`` and ``eval_config`` are never imported (they create folders in site-packages).

Prompt modes:
* ``"tools"``: the engine's chat template with OpenAI ``tools`` and its tool-call parser (what users
  serve; llama-server needs ``--jinja``).
* ``"qwen-fc"``: the raw prompt bfcl's Qwen3 FC handler builds (ChatML with a ``# Tools`` system block
  and ``<tool_call>`` JSON replies) sent to /v1/completions (what the seeds' scores used).
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import random
import re
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_llmbench.evals.protocols import get_protocol

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer
    from pytest_llmbench.workload.records import RequestRecord

Mode = Literal["tools", "qwen-fc"]
MODES: tuple[Mode, ...] = ("tools", "qwen-fc")
DIST = "bfcl-eval"
VERSION_PREFIX = "BFCL_v4"
DATA = Path(__file__).parent / "data"
SUBSET_205 = DATA / "bfcl_subset_205.txt"
SUBSET_CPU = DATA / "bfcl_subset_cpu.txt"
SUBSET_SEED = 20261030
# The posts' subset: "a fixed 205-case subset across 10 categories", 10–25 cases each, of which they name
# irrelevance, multi_turn_base, parallel and parallel_multiple at 20 each; they publish no case ids. Ours
# is a seeded draw with those four at 20 and the other six at the sizes below (the mix is inferred: it
# is the earlier single-turn draw with multi_turn_base in place of `multiple`, the one category of 20).
QUOTAS_205: dict[str, int] = {
    "simple_python": 25, "multi_turn_base": 20, "parallel": 20, "parallel_multiple": 20, "irrelevance": 20,
    "live_simple": 25, "live_multiple": 25, "live_parallel": 10, "live_parallel_multiple": 15,
    "live_irrelevance": 25,
}
# The CPU subset stays single-turn: 5 of each category of the first (single-turn) 205 draw, drawn within it.
SINGLE_TURN_205: dict[str, int] = {**{c: n for c, n in QUOTAS_205.items() if c != "multi_turn_base"}, "multiple": 20}
QUOTAS_CPU: dict[str, int] = {c: 5 for c in ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance",
                                             "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
                                             "live_irrelevance")}
# The model name handed to the checker: its registry entry exists in the real config too, with
# underscore_to_dot=False (names are mapped back to the originals before grading in tools mode).
CHECKER_MODEL = "Qwen/Qwen3-32B-FC"
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
# bfcl's parameter types → JSON Schema types, for the OpenAI ``tools`` format.
JSON_TYPES = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "tuple": "array", "dict": "object", "object": "object",
    "any": "string",
}


# ---- the wheel -------------------------------------------------------------------------------------
def data_dir() -> Path:
    """bfcl-eval's ``data`` folder, found through the distribution's RECORD."""
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError("bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23") from None
    for f in dist.files or ():
        s = str(f).replace("\\", "/")
        if s.endswith(f"bfcl_eval/data/{VERSION_PREFIX}_simple_python.json"):
            return Path(str(dist.locate_file(f))).parent
    raise FileNotFoundError(f"bfcl-eval {dist.version} has no data/{VERSION_PREFIX}_*.json files")


class _AnyModel:
    underscore_to_dot = False


class _ModelMapping(dict):
    def __missing__(self, key: str) -> _AnyModel:
        return _AnyModel()


@cache
def checker() -> tuple[Callable[..., dict[str, Any]], Any]:
    """bfcl's ``ast_checker`` and its ``Language`` enum, imported without the vendor SDKs."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.__doc__ = "stub installed by pytest-llmbench: the real module imports every vendor SDK"
        stub.MODEL_CONFIG_MAPPING = _ModelMapping()  # type: ignore[attr-defined]
        sys.modules[name] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language


# ---- cases -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One single-turn BFCL case: the first turn's messages, the function docs, the accepted answers."""

    id: str
    category: str
    messages: tuple[Mapping[str, Any], ...]
    functions: tuple[Mapping[str, Any], ...]
    ground_truth: tuple[Mapping[str, Any], ...] | None = None

    @property
    def expects_no_call(self) -> bool:
        return "irrelevance" in self.category

    @property
    def expects_any_call(self) -> bool:
        return self.category.endswith("relevance") and not self.expects_no_call


def category_of(case_id: str) -> str:
    """'live_simple_0-0-0' → 'live_simple', 'simple_python_12' → 'simple_python'."""
    return case_id.rsplit("_", 1)[0]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@cache
def _category_rows(category: str, root: Path) -> tuple[dict[str, Any], ...]:
    path = root / f"{VERSION_PREFIX}_{category}.json"
    if not path.exists():
        raise FileNotFoundError(f"bfcl-eval has no category {category!r} ({path} not found)")
    return tuple(_read_jsonl(path))


@cache
def _answers(category: str, root: Path) -> dict[str, Any]:
    path = root / "possible_answer" / f"{VERSION_PREFIX}_{category}.json"
    return {r["id"]: r["ground_truth"] for r in _read_jsonl(path)} if path.exists() else {}


def category_ids(category: str, root: Path | None = None) -> list[str]:
    return [r["id"] for r in _category_rows(category, root or data_dir())]


def load_cases(ids: Iterable[str] | None = None, categories: Iterable[str] | None = None,
               root: Path | None = None) -> list[Case]:
    """Cases by id (in the given order) or whole categories; unknown ids are an error."""
    root = root or data_dir()
    if ids is None:
        ids = [i for c in (categories or QUOTAS_205) for i in category_ids(c, root)]
    ids = list(ids)
    by_id: dict[str, dict[str, Any]] = {}
    for cat in dict.fromkeys(category_of(i) for i in ids):
        for row in _category_rows(cat, root):
            by_id[row["id"]] = row
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise KeyError(f"{len(missing)} BFCL case id(s) not in bfcl-eval's data: {', '.join(missing[:5])}")
    out = []
    for i in ids:
        row, cat = by_id[i], category_of(i)
        if len(row["question"]) != 1:
            raise ValueError(f"BFCL case {i} is multi-turn ({len(row['question'])} turns); only single-turn is supported")
        gt = _answers(cat, root).get(i)
        if gt is None and "relevance" not in cat:
            raise ValueError(f"BFCL case {i} has no possible answer in bfcl-eval's data")
        out.append(Case(i, cat, tuple(row["question"][0]), tuple(row["function"]), tuple(gt) if gt else None))
    return out


def choose_subset(quotas: Mapping[str, int], seed: int = SUBSET_SEED, root: Path | None = None,
                  within: Sequence[str] | None = None) -> list[str]:
    """``quotas[c]`` ids of each category, drawn by ``seed`` (from ``within`` when given, e.g. the CPU
    subset from the 205); the same list on every machine, in the wheel's order within a category."""
    out: list[str] = []
    for cat in quotas:  # dict order is part of the definition
        pool = category_ids(cat, root or data_dir())
        if within is not None:
            allowed = set(within)
            pool = [i for i in pool if i in allowed]
        if quotas[cat] > len(pool):
            raise ValueError(f"category {cat} has {len(pool)} cases to draw from, quota {quotas[cat]}")
        picked = set(random.Random(f"{seed}:{cat}").sample(pool, quotas[cat]))
        out.extend(i for i in pool if i in picked)
    return out


def read_subset(path: Path = SUBSET_205) -> list[str]:
    """Ids of a committed subset file (one per line, '#' comments)."""
    lines = Path(path).read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def write_subset(path: Path, ids: Sequence[str], quotas: Mapping[str, int], seed: int) -> None:
    kind = "BFCL subset" if any(category_of(i).startswith("multi_turn") for i in ids) else "BFCL single-turn subset"
    header = (f"# {kind}: {len(ids)} cases of bfcl-eval 2026.3.23, drawn by "
              f"pytest_llmbench.evals.bfcl.choose_subset(seed={seed}); regenerate with "
              f"python -m pytest_llmbench.evals.bfcl\n"
              f"# per category: {', '.join(f'{c} {n}' for c, n in quotas.items())}\n")
    Path(path).write_text(header + "\n".join(ids) + "\n")


# ---- prompts ---------------------------------------------------------------------------------------
def with_python_hint(functions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Function docs as bfcl's generation step sends them: the Python-syntax note on each description."""
    out = copy.deepcopy(list(functions))
    for f in out:
        f["description"] = f.get("description", "") + PYTHON_HINT
    return out


def openai_name(name: str) -> str:
    """OpenAI function names allow [a-zA-Z0-9_-] only: bfcl's dots become underscores."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def _schema(node: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(node)
    t = out.get("type")
    out["type"] = JSON_TYPES.get(t, "string") if isinstance(t, str) else "string"
    if t == "float":
        out["format"] = "float"
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: _schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), Mapping):
        out["items"] = _schema(out["items"])
    return out


def to_openai_tools(functions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """bfcl function docs → OpenAI ``tools`` (JSON Schema types, legal names)."""
    tools = []
    for f in with_python_hint(functions):
        params = _schema(f.get("parameters") or {"type": "dict", "properties": {}})
        params["type"] = "object"
        params.setdefault("properties", {})
        tools.append({"type": "function", "function": {"name": openai_name(f["name"]),
                                                       "description": f["description"], "parameters": params}})
    return tools


def qwen_fc_prompt(messages: Sequence[Mapping[str, Any]], functions: Sequence[Mapping[str, Any]]) -> str:
    """The Qwen3 FC handler's raw prompt for a single-turn case (ChatML, tools listed as JSON lines).

    A leading system message goes into the tools block; later user/system messages follow as ChatML
    turns; the prompt ends with an open assistant turn.
    """
    msgs = list(messages)
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else None
    parts: list[str] = []
    if functions:
        head = f"{system}\n\n" if system is not None else ""
        tool_lines = "".join(f"\n{json.dumps(f)}" for f in functions)
        parts.append(
            "<|im_start|>system\n" + head
            + "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            + "You are provided with function signatures within <tools></tools> XML tags:\n<tools>" + tool_lines
            + "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
            + "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            + '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n')
    elif system is not None:
        parts.append(f"<|im_start|>system\n{system}<|im_end|>\n")
    for idx, m in enumerate(msgs):
        if m["role"] == "user" or (m["role"] == "system" and idx != 0):
            parts.append(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n")
        elif m["role"] != "system":
            raise ValueError(f"single-turn BFCL prompt with a {m['role']!r} message is not supported")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def request_body(case: Case, mode: Mode, sampling: Mapping[str, Any]) -> dict[str, Any]:
    """The request for ``case`` in ``mode`` (chat+tools, or a raw completions prompt)."""
    if mode == "tools":
        body = {**sampling, "messages": [dict(m) for m in case.messages]}
        if case.functions:
            body["tools"] = to_openai_tools(case.functions)
        return body
    if mode == "qwen-fc":
        return {**sampling, "prompt": qwen_fc_prompt(case.messages, with_python_hint(case.functions))}
    raise ValueError(f"unknown BFCL prompt mode {mode!r}; known: {', '.join(MODES)}")


# ---- decoding --------------------------------------------------------------------------------------
class DecodeError(ValueError):
    """The answer could not be read as function calls."""


_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def strip_thinking(text: str) -> str:
    return text.split("</think>")[-1].lstrip("\n") if "</think>" in text else text


def decode_qwen_fc(text: str) -> list[dict[str, dict[str, Any]]]:
    """``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` blocks → [{name: arguments}].

    Blocks that are not JSON objects with a name are skipped (as the handler does); no block → [].
    """
    calls = []
    for block in _TOOL_CALL.findall(strip_thinking(text)):
        try:
            obj = json.loads(block)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            continue
        args = obj.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                raise DecodeError(f"arguments of {obj['name']} are not JSON: {args[:80]}") from None
        if not isinstance(args, dict):
            raise DecodeError(f"arguments of {obj['name']} are not an object")
        calls.append({obj["name"]: args})
    return calls


def decode_tool_calls(tool_calls: Sequence[Mapping[str, Any]], functions: Sequence[Mapping[str, Any]]) -> list[dict[str, dict[str, Any]]]:
    """The engine's parsed tool calls → [{original name: arguments}] (legal names mapped back)."""
    names = {openai_name(f["name"]): f["name"] for f in functions}
    calls = []
    for tc in tool_calls:
        fn = tc.get("function", tc)
        raw = fn.get("arguments") or "{}"
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            raise DecodeError(f"arguments of {fn.get('name')} are not JSON: {str(raw)[:80]}") from None
        if not isinstance(args, dict):
            raise DecodeError(f"arguments of {fn.get('name')} are not an object")
        calls.append({names.get(fn.get("name", ""), fn.get("name", "")): args})
    return calls


# ---- grading ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    id: str
    category: str
    passed: bool
    error: str = ""
    calls: tuple[Mapping[str, Any], ...] = ()
    latency_s: float | None = None


def grade(case: Case, calls: Sequence[Mapping[str, Any]] | None, decode_error: str | None = None,
          latency_s: float | None = None) -> Verdict:
    """BFCL's verdict: irrelevance passes without a call, relevance with any, the rest by ast_checker."""
    calls = list(calls or [])
    made_call = decode_error is None and any(len(c) == 1 and next(iter(c.values())) is not None for c in calls)
    v = dict(id=case.id, category=case.category, calls=tuple(calls), latency_s=latency_s)
    if case.expects_no_call:
        return Verdict(passed=not made_call, error="" if not made_call else "made a call where none fits", **v)
    if case.expects_any_call:
        return Verdict(passed=made_call, error="" if made_call else "made no call", **v)
    if decode_error is not None:
        return Verdict(passed=False, error=f"decode failed: {decode_error}", **v)
    ast_checker, language = checker()
    try:
        result = ast_checker(list(case.functions), calls, list(case.ground_truth or ()), language.PYTHON,
                             case.category, CHECKER_MODEL)
    except Exception as e:  # the checker assumes well-formed values; odd ones fail the case, not the run
        return Verdict(passed=False, error=f"checker raised {type(e).__name__}: {e}"[:300], **v)
    if result.get("valid"):
        return Verdict(passed=True, **v)
    errors = result.get("error") or []
    return Verdict(passed=False, error="; ".join(map(str, errors))[:300] or result.get("error_type", "invalid"), **v)


def grade_record(case: Case, rec: "RequestRecord", mode: Mode) -> Verdict:
    """Decode one response in ``mode`` and grade it; a failed request fails the case."""
    if not rec.ok:
        return Verdict(case.id, case.category, False, f"request failed: {rec.error}", latency_s=rec.e2e_s)
    try:
        calls = decode_tool_calls(rec.tool_calls, case.functions) if mode == "tools" else decode_qwen_fc(rec.text)
    except DecodeError as e:
        return grade(case, None, str(e), latency_s=rec.e2e_s)
    return grade(case, calls, latency_s=rec.e2e_s)


@dataclass
class BFCLResult:
    mode: str
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(v.passed for v in self.verdicts)

    @property
    def total(self) -> int:
        return len(self.verdicts)

    def per_category(self) -> dict[str, tuple[int, int]]:
        """{category: (passed, total)}."""
        tot, ok = Counter(v.category for v in self.verdicts), Counter(v.category for v in self.verdicts if v.passed)
        return {c: (ok[c], tot[c]) for c in tot}

    def mean_latency_s(self) -> float | None:
        lat = [v.latency_s for v in self.verdicts if v.latency_s is not None]
        return sum(lat) / len(lat) if lat else None

    def by_case(self) -> dict[str, float]:
        """{case id: 1.0 pass / 0.0 fail}: the cases a McNemar gate pairs on."""
        return {v.id: float(v.passed) for v in self.verdicts}

    def pass_fail(self) -> dict[str, str]:
        """{case id: 'pass'|'fail'} sorted by id, for a snapshot that shows flipped cases."""
        return {v.id: "pass" if v.passed else "fail" for v in sorted(self.verdicts, key=lambda v: v.id)}

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "passed": self.passed, "total": self.total,
                "per_category": {c: {"passed": p, "total": t} for c, (p, t) in self.per_category().items()},
                "mean_latency_s": self.mean_latency_s(),
                "cases": [{"id": v.id, "category": v.category, "passed": v.passed, "error": v.error,
                           "calls": list(v.calls), "latency_s": v.latency_s} for v in self.verdicts]}


def run_bfcl(server: "LLMServer", cases: Sequence[Case], mode: Mode = "tools", protocol: str = "bfcl-qwen-fc", *,
             concurrency: int | None = None, run: Callable[..., list["RequestRecord"]] | None = None,
             **overrides: Any) -> BFCLResult:
    """Ask every case in ``mode`` under ``protocol`` and grade it with bfcl's checker."""
    if run is None:
        from pytest_llmbench.workload.requests import run_requests as run
    if mode not in MODES:
        raise ValueError(f"unknown BFCL prompt mode {mode!r}; known: {', '.join(MODES)}")
    proto = get_protocol(protocol)
    sampling = proto.request_body(**overrides)
    bodies = [request_body(c, mode, sampling) for c in cases]
    path = server.engine.chat_path if mode == "tools" else server.engine.completions_path
    records = run(server, bodies, concurrency=concurrency or proto.users, path=path)
    return BFCLResult(mode, [grade_record(c, r, mode) for c, r in zip(cases, records, strict=True)])


def subset_cases(path: Path = SUBSET_205) -> list[Case]:
    """The subset's single-turn cases (its multi-turn ones: :mod:`~pytest_llmbench.evals.bfcl_multi_turn`)."""
    return load_cases([i for i in read_subset(path) if not category_of(i).startswith("multi_turn")])


if __name__ == "__main__":  # regenerate the committed subset files: python -m pytest_llmbench.evals.bfcl
    DATA.mkdir(exist_ok=True)
    ids_205 = choose_subset(QUOTAS_205)
    write_subset(SUBSET_205, ids_205, QUOTAS_205, SUBSET_SEED)
    single_turn = choose_subset(SINGLE_TURN_205)
    write_subset(SUBSET_CPU, choose_subset(QUOTAS_CPU, within=single_turn), QUOTAS_CPU, SUBSET_SEED)
    print(f"wrote {SUBSET_205} and {SUBSET_CPU}")
