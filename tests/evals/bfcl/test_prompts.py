"""BFCL requests in both prompt modes, and decoding calls back from the answers."""

import ast
import json

from pytest_llmbench.evals import bfcl
from pytest_llmbench.evals.bfcl.prompts import _schema


def test_qwen_fc_decoding_reads_tool_call_blocks_after_thinking():
    text = (
        '<think>\nmaybe <tool_call>\n{"name": "wrong", "arguments": {}}\n</tool_call></think>\n\n'
        '<tool_call>\n{"name": "spotify.play", "arguments": {"artist": "A", "duration": 1}}\n</tool_call>\n'
        "<tool_call>\nnot json\n</tool_call>"
    )
    assert bfcl.decode_qwen_fc(text) == [{"spotify.play": {"artist": "A", "duration": 1}}]
    assert bfcl.decode_qwen_fc("I can't help with that.") == []


def test_openai_tools_use_json_schema_types(cases):
    params = bfcl.to_openai_tools(cases["simple_python_0"].functions)[0]["function"]["parameters"]
    assert params["type"] == "object"
    assert params["properties"]["base"]["type"] == "integer"
    assert "Python 3 syntax" in bfcl.to_openai_tools(cases["simple_python_0"].functions)[0]["function"]["description"]
    nested = _schema({"type": "array", "items": {"type": "float"}})
    assert nested["items"]["type"] == "number"


def test_our_qwen_fc_prompt_equals_the_handlers_on_the_205_subset():
    """Our own implementation against bfcl's QwenFCHandler._format_prompt, read from the wheel's source
    (the handler module itself imports the vendor SDKs, so only that function is compiled)."""
    src = (bfcl.data_dir().parent / "model_handler" / "local_inference" / "qwen_fc.py").read_text()
    fn = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef) and n.name == "_format_prompt")
    fn.decorator_list = []
    ns = {"json": json}
    exec(compile(ast.Module([fn], []), "qwen_fc._format_prompt", "exec"), ns)
    for case in bfcl.subset_cases():
        funcs = bfcl.with_python_hint(case.functions)
        assert bfcl.qwen_fc_prompt(case.messages, funcs) == ns["_format_prompt"](
            None, [dict(m) for m in case.messages], funcs
        ), case.id


def test_python_hint_takes_any_mapping_and_leaves_it_alone():
    """The signature takes Mappings (Case.functions is a tuple of them): a read-only one is copied into a
    dict, not deep-copied as it is and written to (a mappingproxy cannot be deep-copied, a Mapping has no
    item assignment)."""
    from types import MappingProxyType

    doc = {"name": "f", "description": "Add.", "parameters": {"type": "dict", "properties": {}}}
    frozen = MappingProxyType(doc)
    out = bfcl.with_python_hint([frozen])
    assert out == [{**doc, "description": "Add." + bfcl.PYTHON_HINT}]
    assert frozen["description"] == "Add." and out[0]["parameters"] is not doc["parameters"]
