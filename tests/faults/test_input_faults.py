"""Bad input stops the session before any server starts, with one line naming the file or option."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import smol_configs


def _output(result) -> str:
    return result.stdout.str() + result.stderr.str()


def test_empty_config_file_is_one_line_naming_it(pytester):
    pytester.makefile(".yaml", **{"configs/servers": ""})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = _output(result)
    assert "INTERNALERROR" not in out and "KeyError" not in out
    result.stderr.fnmatch_lines(["*configs/servers.yaml: is empty: a config file is a mapping with a 'configs' list*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize(
    "text, message",
    [
        ("configs: [{name: a, model: m.gguf, engine: llamacpp", "not valid YAML at line 1"),
        ("- just\n- a list\n", "top level must be a mapping"),
        (
            "configs: [{name: a, model: m.gguf, engine: llamacpp, gpus: many}]",
            "config 'a', key 'gpus': must be an integer",
        ),
    ],
)
def test_invalid_config_file_is_one_line_naming_file_and_key(pytester, text, message):
    pytester.makefile(".yaml", **{"configs/servers": text})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines([f"*configs/servers.yaml*{message}*"])
    assert "INTERNALERROR" not in _output(result) and "Traceback" not in _output(result)


def test_missing_config_path_is_named(pytester):
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--llmbench-configs", "nope.yaml")
    result.stderr.fnmatch_lines(["*nope.yaml: no such file or folder*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_no_config_selected_skips_server_tests_cleanly(pytester):
    pytester.makefile(".yaml", **{"configs/servers": "configs: []\n"})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n\ndef test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    assert "INTERNALERROR" not in result.stdout.str()


@pytest.mark.parametrize("where", ["under-a-file", "read-only"])
def test_unwritable_results_folder_is_one_usage_error_before_anything_runs(pytester, tmp_path, where):
    import os

    if where == "under-a-file":
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "results"
        expected = "is a file, not a folder"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        target = ro / "results"
        expected = "is not writable"
    pytester.makefile(".yaml", **{"configs/servers": "configs: []\n"})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--results-dir={target}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--results-dir / ini llmbench_results_dir: cannot write results to {target}: *{expected}*"]
    )
    assert "Traceback" not in result.stderr.str()


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda text: text[: text.index("version: 2")], "the file was cut short"),  # cut at a line boundary
        (lambda text: text.replace("value: ", "value: .nan #", 1), "value"),
        (lambda text: text + "  broken: [\n", "invalid YAML"),
    ],
)
def test_corrupt_or_truncated_baseline_stops_the_session_before_any_server_starts(pytester, tmp_path, damage, message):
    """A baseline file that cannot be trusted is one usage error naming it, before a server (minutes of GPU
    time) starts: a recorded file is damaged three ways and the session must not reach its server."""
    import shutil

    from ..conftest import ROOT

    base = tmp_path / "baselines"
    base.mkdir()
    shutil.copy(ROOT / "baselines" / "smol-nospec.yaml", base / "smol-nospec.yaml")
    f = base / "smol-nospec.yaml"
    f.write_text(damage(f.read_text()))
    pytester.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol-nospec}")})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    raise AssertionError('a server was started')\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--baselines-dir={base}")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert "smol-nospec.yaml" in out and message in out
    assert "a server was started" not in out


# --- issue 52 ---------------------------------------------------------------------------------------------


def _check_config(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_llmbench", "check-config", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "text, what",
    [
        ("", "it is empty (0 bytes)"),
        ("# pytest-llmbench baselines for config 'smol-nospec'\n", "it is only comments, no entries"),
    ],
)
def test_empty_or_comment_only_baseline_is_a_usage_error_naming_it(pytester, tmp_path, text, what):
    """Issue 52 (3): a 0-byte or comment-only baseline file (a full disk, a half-copied CI artifact) was taken
    as "no baselines": every check "new", exit 0. It is a file cut short, refused before any server starts."""
    base = tmp_path / "baselines"
    base.mkdir()
    (base / "smol-nospec.yaml").write_text(text)
    pytester.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol-nospec}")})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    raise AssertionError('a server was started')\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--baselines-dir={base}")
    out = _output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert f"baseline file {base / 'smol-nospec.yaml'} is unreadable: {what}" in out
    assert "cut short" in out and "a server was started" not in out
    assert (base / "smol-nospec.yaml").read_text() == text, "never rewritten"


def test_non_utf8_config_file_is_one_error_naming_it(pytester):
    """Issue 52 (12): a config saved as Latin-1 gave INTERNALERROR (exit 3) under pytest and a
    UnicodeDecodeError traceback in check-config."""
    configs = pytester.mkdir("configs")
    bad = configs / "servers.yaml"
    bad.write_bytes(smol_configs("{name: smol, description: 'caf\xe9'}").encode("latin-1"))
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    raise AssertionError('a server was started')\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = _output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert f"{bad}: is not UTF-8 text (byte 0xe9 at offset" in out
    assert "INTERNALERROR" not in out and "Traceback" not in out and "a server was started" not in out
    checked = _check_config(str(configs))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"{bad}: is not UTF-8 text (byte 0xe9" in checked.stdout
    assert "Traceback" not in checked.stdout + checked.stderr


def test_config_error_is_reported_once_per_session_not_once_per_module(pytester):
    """Issue 52 (12): one bad config was reported once per test module that uses llm_server (7 times)."""
    pytester.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol, gpus: many}")})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    for name in ("test_a", "test_b", "test_c"):
        pytester.makepyfile(**{name: "def test_x(llm_server):\n    pass\n"})
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = _output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert out.count("key 'gpus': must be an integer") == 1, out[-3000:]


def test_config_error_does_not_stop_a_session_without_server_tests(pytester):
    """A plain test session in a repository whose config is broken still runs (nothing needs a server)."""
    pytester.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol, gpus: many}")})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("layout", ["empty-folder", "empty-list"])
def test_no_config_selected_says_why_nothing_ran(pytester, layout):
    """Issue 52 (12): an empty config folder or ``configs: []`` gave "no tests collected" (exit 5) with no
    hint, while check-config said "OK, 0 configs"."""
    configs = pytester.mkdir("configs")
    if layout == "empty-list":
        (configs / "servers.yaml").write_text("configs: []\n")
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    why = (
        f"{configs} holds no *.yaml or *.yml file"
        if layout == "empty-folder"
        else f"{configs / 'servers.yaml'}: an empty 'configs' list"
    )
    result.stdout.fnmatch_lines(
        [f"llmbench: no server config selected ({why}): the 1 test function(s) that use llm_server had none to run on"]
    )
    checked = _check_config(str(configs))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"check-config: no configs: {why}" in checked.stderr and "OK" not in checked.stdout


def test_torn_case_line_names_its_column_once(pytester, tmp_path):
    """Issue 52 (14): a torn per-case line read "Unterminated string starting at at column 15"."""
    sidecar = tmp_path / "baselines" / "smol.cases" / "shared" / "test_x.py__test_x" / "accuracy.jsonl"
    sidecar.parent.mkdir(parents=True)
    sidecar.write_text('{"version": 1, "test_key": "t", "metric": "accuracy", "n": 1}\n{"case": "a", "value\n')
    pytester.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol}")})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    raise AssertionError('a server was started')\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--baselines-dir={tmp_path / 'baselines'}")
    out = _output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert f"{sidecar}:2: invalid JSON (Unterminated string starting at: column 15)" in out
    assert "at at" not in out


def test_merge_of_an_empty_folder_is_an_error_naming_it(tmp_path):
    """Issue 52 (14): ``merge OUT emptydir`` exited 0 and wrote an empty results.jsonl."""
    empty = tmp_path / "shard-1"
    empty.mkdir()
    out = tmp_path / "merged"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_llmbench", "merge", str(out), str(empty)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"merge: {empty}: no results*.jsonl in it: not a results folder" in proc.stderr
    assert not out.exists(), "nothing written"
