"""The one redaction module: which names are secret, and masking by name and by value."""

from __future__ import annotations

import pytest

from pytest_llmbench import redact


@pytest.mark.parametrize(
    "name, secret",
    [
        ("HF_TOKEN", True),
        ("--hf-token", True),
        ("--api-key", True),
        ("OPENAI_API_KEY", True),
        ("api_key", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("auth", True),
        ("tokenizer_path", False),
        ("max_total_num_tokens", False),
        ("--max-tokens", False),
        ("AUTHOR", False),
    ],
)
def test_secret_names_are_whole_words(name, secret):
    assert redact.is_secret_name(name) is secret


def test_server_args_and_env_are_masked_by_name():
    argv = ["--model", "m", "--hf-token", "hf_abc", "--api-key=sk-1", "--port", "8000"]
    assert redact.args(argv) == ["--model", "m", "--hf-token", "***", "--api-key=***", "--port", "8000"]
    assert redact.secret_args(argv) == ["hf_abc", "sk-1"]
    assert redact.env({"HF_TOKEN": "hf_abc", "CUDA_VISIBLE_DEVICES": "0", "API_KEY": ""}) == {
        "HF_TOKEN": "***",
        "CUDA_VISIBLE_DEVICES": "0",
        "API_KEY": "",
    }


def test_server_info_is_masked_at_any_depth():
    info = {
        "server_args": {"api_key": "sk-x", "tp_size": 2},
        "internal_states": [{"hf_token": "hf_y"}],
        "max_total_num_tokens": 1000,
    }
    assert redact.mapping(info) == {
        "server_args": {"api_key": "***", "tp_size": 2},
        "internal_states": [{"hf_token": "***"}],
        "max_total_num_tokens": 1000,
    }


def test_registered_values_are_scrubbed_from_any_text_longest_first():
    redact.register(["tok-123456", "tok-123456-extended", "short"])
    text = "error: flag value tok-123456-extended and tok-123456, also short"
    assert redact.scrub(text) == "error: flag value *** and ***, also short"  # short values are not scrubbed


def test_the_hosts_secret_variables_are_registered():
    redact.register_environ({"MY_SERVICE_TOKEN": "svc-secret-777", "HOME": "/home/someone"})
    assert redact.scrub("home /home/someone, token svc-secret-777") == "home /home/someone, token ***"
