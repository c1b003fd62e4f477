"""Bad input stops the session before any server starts, with one line naming the file or option."""

from __future__ import annotations

import pytest

from .conftest import smol_configs


def test_empty_config_file_is_one_line_naming_it(pytester):
    pytester.makefile(".yaml", **{"configs/servers": ""})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "KeyError" not in out
    result.stdout.fnmatch_lines(["*configs/servers.yaml: is empty: a config file is a mapping with a 'configs' list*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


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
    result.stdout.fnmatch_lines([f"*configs/servers.yaml*{message}*"])
    assert "INTERNALERROR" not in result.stdout.str() and "Traceback" not in result.stdout.str()


def test_missing_config_path_is_named(pytester):
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--llmbench-configs", "nope.yaml")
    result.stdout.fnmatch_lines(["*nope.yaml: no such file or folder*"])


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
