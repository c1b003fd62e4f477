"""GPU split across real pytest-xdist workers, end to end through the plugin: two configs needing one
GPU each, a simulated two-GPU machine (LLMBENCH_GPUS=0,1), ``-n 2 --dist loadgroup``. Each server is
the vLLM protocol double launched by the subprocess launcher, which prints the CUDA_VISIBLE_DEVICES it
was given; every config must start once, on its worker's own GPU."""

from __future__ import annotations

import importlib.metadata
import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")
ROOT = Path(__file__).resolve().parents[2]
DOUBLE = ROOT / "tests" / "engines" / "protocol_double.py"


def _plugin_args() -> list[str]:
    eps = importlib.metadata.entry_points(group="pytest11")
    return [] if any(ep.value == "pytest_llmbench.plugin" for ep in eps) else ["-p", "pytest_llmbench.plugin"]


def test_two_workers_two_gpus_one_start_per_config(pytester: pytest.Pytester, monkeypatch):
    vllm = pytester.path / "vllm"
    vllm.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv = [{str(DOUBLE)!r}, 'vllm', *sys.argv[1:]]\n"
        f"runpy.run_path({str(DOUBLE)!r}, run_name='__main__')\n"
    )
    vllm.chmod(0o755)
    (pytester.path / "configs.yaml").write_text(
        f"defaults: {{engine: vllm, gpus: 1, marks: [gpu], startup_timeout: 60, engine_options: {{binary: {json.dumps(str(vllm))}}}}}\n"
        "configs:\n  - {name: cfg-a, model: org/a}\n  - {name: cfg-b, model: org/b}\n"
    )
    pytester.makepyfile(
        test_gpu="""
        import json, os
        import pytest

        @pytest.mark.llm_configs("gpu")
        @pytest.mark.parametrize("i", [1, 2])
        def test_where(llm_server, i):
            out = os.path.join(os.environ["WHERE_DIR"], f"where-{llm_server.name}-{i}.json")
            open(out, "w").write(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER"),
                                       "gpus": list(llm_server.gpu_ids)}))
    """
    )
    monkeypatch.setenv("LLMBENCH_GPUS", "0,1")
    where = pytester.path / "where"
    where.mkdir()
    monkeypatch.setenv("WHERE_DIR", str(where))
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    results = pytester.path / "results"
    r = pytester.runpytest_inprocess(
        *_plugin_args(),
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "-p",
        "no:cacheprovider",
        "--llmbench-configs",
        "configs.yaml",
        "--results-dir",
        str(results),
    )
    r.assert_outcomes(passed=4)
    slices = {"gw0": ["0"], "gw1": ["1"]}
    seen = {}
    for name in ("cfg-a", "cfg-b"):
        log = (results / name / "server.log").read_text()
        assert log.count("[llmbench] starting config") == 1, f"{name} started more than once"
        visible = re.search(r"double CUDA_VISIBLE_DEVICES=(\S*)", log).group(1)
        wheres = [json.loads(p.read_text()) for p in where.glob(f"where-{name}-*.json")]
        assert {w["worker"] for w in wheres} == {wheres[0]["worker"]}, "a config's tests ran on one worker"
        worker = wheres[0]["worker"]
        assert wheres[0]["gpus"] == slices[worker] == [visible], "the server saw its worker's GPU only"
        seen[name] = worker
    assert len(seen) == 2 and all(len(list(where.glob(f"where-{n}-*.json"))) == 2 for n in seen)


def test_fewer_gpus_than_workers_is_one_usage_error(pytester: pytest.Pytester, monkeypatch):
    """One GPU, two workers, a config needing one: the plugin's own message reaches the user as a usage
    error before any server starts (it used to crash the workers: INTERNALERROR … assert not crashitem)."""
    (pytester.path / "configs.yaml").write_text(
        "defaults: {engine: vllm, gpus: 1, marks: [gpu], startup_timeout: 60, engine_options: {binary: /bin/false}}\n"
        "configs:\n  - {name: cfg-a, model: org/a}\n  - {name: cfg-b, model: org/b}\n"
    )
    pytester.makepyfile(
        test_gpu="""
        def test_where(llm_server):
            pass
    """
    )
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    results = pytester.path / "results"
    r = pytester.runpytest_inprocess(
        *_plugin_args(),
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "-p",
        "no:cacheprovider",
        "--llmbench-gpus",
        "0",
        "--llmbench-configs",
        "configs.yaml",
        "--results-dir",
        str(results),
    )
    out = r.stdout.str() + r.stderr.str()
    assert r.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "INTERNALERROR" not in out
    assert "each of 2 xdist workers gets 0 of the 1 GPUs; run with -n 1 or fewer" in out
    assert not (results / "cfg-a" / "server.log").exists(), "no server may start"
