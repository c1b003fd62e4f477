"""Exact-length prompts: a ShareGPT prompt repeated to the requested token count, as the server counts it."""

from __future__ import annotations

import json

import pytest

from pytest_llmbench.datasets.files import DatasetError
from pytest_llmbench.workload.prompts import exact_length_prompts

# Starts and ends with "e": wherever the text is repeated, the seam re-tokenizes one token shorter.
TEXT = "explain how a bicycle gear works: the chain, the cassette and the derailleur, all at once, " * 3 + "please"


class CharTokenizer:
    """A tokenizer stand-in: one token per character, except that "ee" is one token — so decoded text
    re-tokenizes shorter wherever two e's meet at a seam, as real BPE merges do."""

    def tokenize(self, text):
        out, i = [], 0
        while i < len(text):
            if text.startswith("ee", i):
                out.append(-1)
                i += 2
            else:
                out.append(ord(text[i]))
                i += 1
        return out

    def detokenize(self, ids):
        return "".join("ee" if t == -1 else chr(t) for t in ids)


@pytest.fixture
def sharegpt(tmp_path):
    path = tmp_path / "sharegpt.json"
    path.write_text(
        json.dumps([{"id": "1", "conversations": [{"from": "human", "value": TEXT}, {"from": "gpt", "value": "ok"}]}])
    )
    return path


@pytest.mark.parametrize("input_len", [7, 300, 1001])
def test_every_prompt_has_exactly_the_requested_length_by_the_servers_count(sharegpt, input_len):
    server = CharTokenizer()
    assert len(server.tokenize(TEXT + TEXT)) < 2 * len(server.tokenize(TEXT))  # the seams do merge
    prompts = exact_length_prompts(server, 4, input_len, seed=1, path=sharegpt)
    assert [len(server.tokenize(p.text)) for p in prompts] == [input_len] * 4
    assert [p.input_tokens for p in prompts] == [input_len] * 4
    assert len({p.text for p in prompts}) == 4  # rotated differently: no shared prefix to cache


def test_the_same_seed_gives_the_same_prompts(sharegpt):
    a = exact_length_prompts(CharTokenizer(), 2, 50, seed=3, path=sharegpt)
    assert a == exact_length_prompts(CharTokenizer(), 2, 50, seed=3, path=sharegpt)


def test_a_server_that_tokenizes_to_nothing_is_an_error(sharegpt):
    class Empty(CharTokenizer):
        def tokenize(self, text):
            return []

    with pytest.raises(DatasetError, match="tokenized the ShareGPT prompt to zero tokens"):
        exact_length_prompts(Empty(), 1, 10, seed=1, path=sharegpt)
