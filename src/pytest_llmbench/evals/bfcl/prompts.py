"""BFCL requests in two prompt modes, and reading function calls back from the answers.

* ``"tools"``: the engine's chat template with OpenAI ``tools`` and its tool-call parser (what users
  serve; llama-server needs ``--jinja``).
* ``"qwen-fc"``: the raw prompt bfcl's Qwen3 FC handler builds (ChatML with a ``# Tools`` system block
  and ``<tool_call>`` JSON replies) sent to /v1/completions (what the posts' scores used).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pytest_llmbench.evals.bfcl.cases import Case

Mode = Literal["tools", "qwen-fc"]
MODES: tuple[Mode, ...] = ("tools", "qwen-fc")
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
# bfcl's parameter types → JSON Schema types, for the OpenAI ``tools`` format.
JSON_TYPES = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "any": "string",
}


def with_python_hint(functions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Function docs as bfcl's generation step sends them: the Python-syntax note on each description."""
    out = [copy.deepcopy(dict(f)) for f in functions]  # a Mapping may be read-only (or not deep-copyable)
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
        tools.append(
            {
                "type": "function",
                "function": {"name": openai_name(f["name"]), "description": f["description"], "parameters": params},
            }
        )
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
            "<|im_start|>system\n"
            + head
            + "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            + "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
            + tool_lines
            + "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
            + "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            + '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        )
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


def decode_tool_calls(
    tool_calls: Sequence[Mapping[str, Any]], functions: Sequence[Mapping[str, Any]]
) -> list[dict[str, dict[str, Any]]]:
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
