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
        # issue 52: names the old list of spellings missed
        ("OPENAI_KEY", True),
        ("DB_PASS", True),
        ("SERVICE_PASSPHRASE", True),
        ("GH_CREDS", True),
        ("apiKey", True),
        ("clientSecret", True),
        ("HFTOKEN", True),
        ("OPENAIAPIKEY", True),
        ("--ssl-key-file", True),
        ("session.cookie", True),
        ("MONKEY", False),
        ("BYPASS_CACHE", False),
        ("KEYRING_BACKEND", False),
        ("--kv-unified", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("PWD", False),
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


def test_a_short_form_is_secret_when_the_engines_cli_spells_the_same_option_with_a_secret_name():
    argv = ["-c", "2048", "-hfx", "hf_shortform_1", "--port", "8000"]
    assert redact.args(argv) == argv  # nothing says -hfx is a token yet
    redact.register_options([redact.CliOption(("-hfx", "--hf-x-token")), redact.CliOption(("-c", "--ctx-size"))])
    assert redact.args(argv) == ["-c", "2048", "-hfx", "***", "--port", "8000"]
    assert redact.secret_args(argv) == ["hf_shortform_1"]


def test_a_secret_named_switch_does_not_hide_the_next_flag():
    redact.register_options([redact.CliOption(("--x-credentials", "--no-x-credentials"), takes_value=False)])
    argv = ["--x-credentials", "--port", "8000", "--hf-token", "--metrics", "--api-key", "-5x"]
    assert redact.args(argv) == ["--x-credentials", "--port", "8000", "--hf-token", "--metrics", "--api-key", "***"]
    assert redact.secret_args(argv) == ["-5x"]  # a value that only starts with "-" is still a value


def test_env_names_of_any_shape_are_masked_and_their_values_scrubbed():
    environ = {"OPENAI_KEY": "sk-openai-1234", "DB_PASS": "db-pass-5678", "clientSecret": "cs-9999-abc", "PATH": "/bin"}
    assert redact.env(environ) == {"OPENAI_KEY": "***", "DB_PASS": "***", "clientSecret": "***", "PATH": "/bin"}
    redact.register_environ(environ)
    assert redact.scrub("a sk-openai-1234 b db-pass-5678 c cs-9999-abc /bin") == "a *** b *** c *** /bin"
