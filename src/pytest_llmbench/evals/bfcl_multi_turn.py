"""Multi-turn BFCL (``multi_turn_base``): bfcl-eval's own backends and checker, driven through our client.

Why: the posts' 205-case subset has 20 ``multi_turn_base`` cases ("Swift gains multi_turn_base (14 → 16
of 20)"), which the single-turn path cannot ask. A case is a conversation of user turns; within a turn
the model may call functions step after step, each call is executed on bfcl's simulated backends
(file system, trading bot, …) and the result goes back as a ``<tool_response>``, until the model answers
without a call (or 20 steps, bfcl's limit, fail the case). bfcl's ``multi_turn_checker`` then replays the
decoded calls on fresh backends beside the ground truth and compares state and responses turn by turn.

Prompts follow bfcl's Qwen3 FC handler format (the posts' handler), extended from the single-turn
:func:`~pytest_llmbench.evals.bfcl.qwen_fc_prompt` to assistant tool calls and tool responses.

Known gap: bfcl's ``MathAPI`` backend imports ``mpmath``, which bfcl-eval pins but this project does not
install (``pip install --no-deps bfcl-eval``); a case that involves MathAPI fails with that reason.
"""

from __future__ import annotations

import ast
import itertools
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_llmbench.evals import bfcl
from pytest_llmbench.evals.bfcl import cases as bfcl_cases
from pytest_llmbench.evals.protocols import get_protocol

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer

CATEGORY = "multi_turn_base"
STEP_LIMIT = 20  # bfcl_eval.constants.default_prompts.MAXIMUM_STEP_LIMIT
_RUN_IDS = itertools.count()


@dataclass(frozen=True)
class MultiTurnCase:
    id: str
    category: str
    turns: tuple[tuple[Mapping[str, Any], ...], ...]
    functions: tuple[Mapping[str, Any], ...]
    initial_config: Mapping[str, Any]
    involved_classes: tuple[str, ...]
    ground_truth: tuple[tuple[str, ...], ...]


def is_multi_turn(case_id: str) -> bool:
    return bfcl.category_of(case_id).startswith("multi_turn")


def function_docs(
    classes: Iterable[str], excluded: Iterable[str] = (), root: Path | None = None
) -> list[dict[str, Any]]:
    """The function docs of the involved backends (bfcl's ``multi_turn_func_doc``), minus excluded ones."""
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    root = root or bfcl.data_dir()
    skip = set(excluded)
    out = []
    for cls in classes:
        if cls not in MULTI_TURN_FUNC_DOC_FILE_MAPPING:
            raise KeyError(f"bfcl has no function docs for backend {cls!r}")
        path = root / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[cls]
        out += [f for f in bfcl_cases.read_jsonl(path) if f["name"] not in skip]
    return out


def load_multi_turn_cases(ids: Sequence[str], root: Path | None = None) -> list[MultiTurnCase]:
    """Cases by id, in order; an unknown id or one without a ground truth is an error naming it."""
    root = root or bfcl.data_dir()
    out = []
    for cat in dict.fromkeys(bfcl.category_of(i) for i in ids):
        if cat != CATEGORY:
            raise ValueError(f"multi-turn category {cat!r} is not supported (only {CATEGORY})")
    rows = {r["id"]: r for r in bfcl_cases.category_rows(CATEGORY, root)} if ids else {}
    answers = bfcl_cases.answers(CATEGORY, root) if ids else {}
    for i in ids:
        if i not in rows:
            raise KeyError(f"BFCL case id {i} is not in bfcl-eval's {CATEGORY} data")
        if i not in answers:
            raise ValueError(f"BFCL case {i} has no possible answer in bfcl-eval's data")
        r = rows[i]
        out.append(
            MultiTurnCase(
                i,
                CATEGORY,
                tuple(tuple(t) for t in r["question"]),
                tuple(function_docs(r["involved_classes"], r.get("excluded_function", ()), root)),
                r["initial_config"],
                tuple(r["involved_classes"]),
                tuple(tuple(t) for t in answers[i]),
            )
        )
    return out


# ---- prompt and decoding ---------------------------------------------------------------------------
def multi_turn_prompt(messages: Sequence[Mapping[str, Any]], functions: Sequence[Mapping[str, Any]]) -> str:
    """The Qwen3 FC handler's prompt for a conversation with tool calls and tool responses.

    Assistant calls are written as ``<tool_call>`` JSON blocks; consecutive tool results share one user
    turn of ``<tool_response>`` blocks; an assistant step after the last user query keeps its reasoning
    in a ``<think>`` block (as the handler does); the prompt ends with an open assistant turn.
    """
    first = [m for m in messages[:1] if m["role"] == "system"]
    parts = [bfcl.qwen_fc_prompt(first, functions).removesuffix("<|im_start|>assistant\n")]
    last_query = max(
        (
            i
            for i, m in enumerate(messages)
            if m["role"] == "user"
            and not (m["content"].startswith("<tool_response>") and m["content"].endswith("</tool_response>"))
        ),
        default=len(messages) - 1,
    )
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "system" and i == 0:
            continue
        if role in ("user", "system"):
            parts.append(f"<|im_start|>{role}\n{m['content']}<|im_end|>\n")
        elif role == "assistant":
            content, reasoning = m.get("content") or "", m.get("reasoning_content") or ""
            text = content
            if i > last_query and (reasoning or i == len(messages) - 1):
                text = "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + content.lstrip("\n")
            calls = [
                f'<tool_call>\n{{"name": "{c["name"]}", "arguments": {json.dumps(c["arguments"])}}}\n</tool_call>'
                for c in m.get("tool_calls", ())
            ]
            sep = "\n" if content and calls else ""  # the handler looks at the content, not the <think> block
            parts.append(f"<|im_start|>assistant\n{text}{sep}{chr(10).join(calls)}<|im_end|>\n")
        elif role == "tool":
            opening = i == 0 or messages[i - 1]["role"] != "tool"
            closing = i == len(messages) - 1 or messages[i + 1]["role"] != "tool"
            parts.append(
                ("<|im_start|>user" if opening else "")
                + f"\n<tool_response>\n{m['content']}\n</tool_response>"
                + ("<|im_end|>\n" if closing else "")
            )
        else:
            raise ValueError(f"BFCL multi-turn prompt: unknown message role {role!r}")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, answer) of a response that may open with a ``<think>`` block."""
    if "</think>" not in text:
        return "", text
    head, _, tail = text.partition("</think>")
    return head.rstrip("\n").split("<think>")[-1].lstrip("\n"), tail.lstrip("\n")


def call_string(name: str, arguments: Mapping[str, Any]) -> str:
    """``{name: args}`` → the Python call bfcl executes, ``name(k=repr(v),…)`` as its handler writes it."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def parse_call_string(call: str, functions: Sequence[Mapping[str, Any]] = ()) -> tuple[str, dict[str, Any]]:
    """bfcl's ground-truth call string → (name, arguments); positional arguments take the names of the
    function doc's parameters in order (``functions``), as bfcl's answers sometimes write them."""
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a function call: {call!r}")
    name = node.func.id
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:  # f(**{...}): the unpacked dict's items are keyword arguments
            args.update(ast.literal_eval(kw.value))
        else:
            args[kw.arg] = ast.literal_eval(kw.value)
    if node.args:
        doc = next((f for f in functions if f["name"] == name), None)
        if doc is None:
            raise ValueError(f"positional arguments in {call!r} and no function doc for {name!r}")
        params = list((doc.get("parameters") or {}).get("properties", {}))
        args = {**{p: ast.literal_eval(a) for p, a in zip(params, node.args, strict=False)}, **args}
    return name, args


# ---- running and grading ---------------------------------------------------------------------------
@dataclass
class Outcome:
    """What one case did: decoded calls per turn per step, latencies, and why it stopped early if it did."""

    steps: list[list[list[str]]] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the conversation as sent, for results
    error: str = ""
    forced_quit: bool = False


Complete = Callable[[str], "tuple[str | None, str | None]"]  # prompt → (text, error)


def _forget_backends(prefix: str) -> None:
    """bfcl keeps each run's backend instances in its module globals, keyed by model name: drop ours."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as mtu

    for key in [k for k in vars(mtu) if k.startswith(prefix)]:
        del vars(mtu)[key]


def run_case(case: MultiTurnCase, complete: Complete, *, step_limit: int = STEP_LIMIT) -> Outcome:
    """Play ``case`` through ``complete``: execute each step's calls on bfcl's backends and feed the results back."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    name = f"llmbench_run{next(_RUN_IDS)}"
    out = Outcome()
    messages = out.messages
    try:
        execute_multi_turn_func_call([], dict(case.initial_config), list(case.involved_classes), name, case.id)
    except ModuleNotFoundError as e:  # MathAPI needs mpmath (see the module docstring)
        out.error = f"bfcl backend unavailable: {e}"
        return out
    try:
        for turn in case.turns:
            messages += [dict(m) for m in turn]
            turn_steps: list[list[str]] = []
            out.steps.append(turn_steps)
            for step in itertools.count():
                if step >= step_limit:
                    out.forced_quit, out.error = True, f"forced to quit after {step_limit} steps"
                    return out
                t0 = time.perf_counter()
                text, err = complete(multi_turn_prompt(messages, bfcl.with_python_hint(case.functions)))
                out.latencies_s.append(time.perf_counter() - t0)
                if err is not None:
                    out.error = f"request failed: {err}"
                    return out
                try:
                    calls = bfcl.decode_qwen_fc(text or "")
                except bfcl.DecodeError:
                    calls = []
                reasoning, answer = split_reasoning(text or "")
                if not calls:
                    messages.append({"role": "assistant", "content": answer, "reasoning_content": reasoning})
                    break  # an answer without a call ends the turn
                strings = [call_string(n, a) for c in calls for n, a in c.items()]
                turn_steps.append(strings)
                messages.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "reasoning_content": reasoning,
                        "tool_calls": [{"name": n, "arguments": a} for c in calls for n, a in c.items()],
                    }
                )
                results, _ = execute_multi_turn_func_call(
                    strings, dict(case.initial_config), list(case.involved_classes), name, case.id
                )
                messages += [{"role": "tool", "content": r} for r in results]
        return out
    finally:
        _forget_backends(name)


def grade_outcome(case: MultiTurnCase, outcome: Outcome) -> bfcl.Verdict:
    """bfcl's multi-turn checker on the decoded calls (a forced quit or a failed request fails the case)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    latency = sum(outcome.latencies_s) if outcome.latencies_s else None
    calls = tuple(
        {"turn": t, "step": s, "calls": c} for t, turn in enumerate(outcome.steps) for s, c in enumerate(turn)
    )
    if outcome.error:
        return bfcl.Verdict(case.id, case.category, False, outcome.error, calls, latency)
    name = f"llmbench_grade{next(_RUN_IDS)}"
    steps = outcome.steps + [[] for _ in range(len(case.ground_truth) - len(outcome.steps))]
    try:
        result = multi_turn_checker(
            steps,
            [list(t) for t in case.ground_truth],
            {
                "id": case.id,
                "initial_config": dict(case.initial_config),
                "involved_classes": list(case.involved_classes),
            },
            case.category,
            name,
        )
    except Exception as e:  # the checker asserts on malformed runs; fail the case, not the session
        return bfcl.Verdict(
            case.id, case.category, False, f"checker raised {type(e).__name__}: {e}"[:300], calls, latency
        )
    finally:
        _forget_backends(name)
    if result.get("valid"):
        return bfcl.Verdict(case.id, case.category, True, "", calls, latency)
    return bfcl.Verdict(
        case.id,
        case.category,
        False,
        f"{result.get('error_type', 'invalid')}: {result.get('error_message', '')}"[:300],
        calls,
        latency,
    )


def completions(server: LLMServer, sampling: Mapping[str, Any]) -> Complete:
    """A :data:`Complete` over the server's completions route, through the project's streaming client."""
    from pytest_llmbench.workload.requests import run_requests

    def complete(prompt: str) -> tuple[str | None, str | None]:
        (rec,) = run_requests(server, [{**sampling, "prompt": prompt}], concurrency=1, kind="completions")
        return (rec.text, None) if rec.ok else (None, rec.error or "request failed")

    return complete


def run_multi_turn(
    server: LLMServer,
    cases: Sequence[MultiTurnCase],
    protocol: str = "bfcl-qwen-fc",
    *,
    step_limit: int = STEP_LIMIT,
    **overrides: Any,
) -> list[bfcl.Verdict]:
    """Every case in turn (its steps depend on each other), graded by bfcl's multi-turn checker."""
    complete = completions(server, get_protocol(protocol).request_body(**overrides))
    return [grade_outcome(c, run_case(c, complete, step_limit=step_limit)) for c in cases]
