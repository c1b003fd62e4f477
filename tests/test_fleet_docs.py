"""The fleet examples in docs/fleet are linted and their shard arithmetic is run, not just read.

The GitHub workflow is validated against the GitHub workflow JSON schema that check-jsonschema ships
(offline: no schema is downloaded); the Kubernetes manifest is parsed, its fields that matter checked,
and its shell scripts run with a stand-in ``python`` that records its arguments.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "docs" / "fleet" / "github-actions.yml"
K8S = ROOT / "docs" / "fleet" / "k8s-indexed-job.yaml"


def lint_workflow(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_workflow_passes_the_github_workflow_schema():
    r = lint_workflow(WORKFLOW)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_schema_check_catches_a_broken_workflow(tmp_path):
    wf = yaml.safe_load(WORKFLOW.read_text())
    del wf["jobs"]["merge"]["runs-on"]
    wf["jobs"]["bench"]["strategy"]["fail-fast"] = "sometimes"
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(wf))
    r = lint_workflow(bad)
    assert r.returncode != 0 and "runs-on" in r.stdout + r.stderr


def test_workflow_shards_on_gpu_runners_uploads_and_merges_then_reports_and_gates():
    wf = yaml.safe_load(WORKFLOW.read_text())
    bench, merge = wf["jobs"]["bench"], wf["jobs"]["merge"]
    assert "self-hosted" in bench["runs-on"] and bench["strategy"]["fail-fast"] is False
    run = next(s["run"] for s in bench["steps"] if "--llmbench-shard" in s.get("run", ""))
    assert '--llmbench-shard "$k/$SHARDS"' in run and '--results-dir "results/shard-$k"' in run
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in bench["steps"])
    assert merge["needs"] == "bench" and "cancelled()" in merge["if"]
    runs = "\n".join(s.get("run", "") for s in merge["steps"])
    for command in (
        "python -m pytest_llmbench merge merged",
        "python -m pytest_llmbench merge --baselines",
        "python -m pytest_llmbench report merged",
        '>> "$GITHUB_STEP_SUMMARY"',
        "REGRESSED",
    ):
        assert command in runs


def k8s_docs() -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(K8S.read_text())}


def container(job: dict) -> dict:
    (c,) = job["spec"]["template"]["spec"]["containers"]
    return c


def test_indexed_job_runs_one_shard_per_completion_index_on_one_gpu():
    docs = k8s_docs()
    shards, merge = docs["llmbench-shards"], docs["llmbench-merge"]
    assert docs["llmbench-results"]["kind"] == "PersistentVolumeClaim"
    spec = shards["spec"]
    assert shards["apiVersion"] == "batch/v1" and shards["kind"] == "Job" and spec["completionMode"] == "Indexed"
    n = spec["completions"]
    assert spec["parallelism"] == n
    for job in (shards, merge):
        env = {e["name"]: e["value"] for e in container(job)["env"]}
        assert env["SHARDS"] == str(n)  # N written three times must agree
        assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
        (vol,) = job["spec"]["template"]["spec"]["volumes"]
        assert vol["persistentVolumeClaim"]["claimName"] == "llmbench-results"
    assert container(shards)["resources"]["limits"]["nvidia.com/gpu"] == 1


def run_script(script: str, results: Path, stub_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The container's ``sh -c`` script with /results pointing at ``results`` and a recording python."""
    return subprocess.run(
        ["/bin/sh", "-c", script.replace("/results", str(results))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{stub_dir}:{os.environ['PATH']}", **env},
    )


@pytest.fixture
def stub(tmp_path):
    """A ``python`` that appends its arguments to calls.log and fails for shard 2 (as a regression would)."""
    d = tmp_path / "bin"
    d.mkdir()
    (d / "python").write_text(
        f'#!/bin/sh\necho "$*" >> {tmp_path}/calls.log\ncase "$*" in *"--llmbench-shard 2/"*) exit 1;; esac\n'
    )
    (d / "python").chmod(0o755)
    return d


def test_k8s_scripts_map_index_to_shard_and_merge_every_shard(tmp_path, stub):
    docs = k8s_docs()
    shards, merge = docs["llmbench-shards"], docs["llmbench-merge"]
    n = shards["spec"]["completions"]
    results = tmp_path / "results"
    results.mkdir()
    env = {e["name"]: e["value"] for e in container(shards)["env"]}
    for index in range(n):
        r = run_script(container(shards)["args"][0], results, stub, {**env, "JOB_COMPLETION_INDEX": str(index)})
        assert r.returncode == 0, r.stderr  # the exit status is kept for the merge Job, the pod succeeds
        (results / f"shard-{index + 1}").mkdir()
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [c.split("--llmbench-shard ")[1].split()[0] for c in calls] == [f"{k}/{n}" for k in range(1, n + 1)]
    assert all(c.startswith("-m pytest benches/ -m nvfp4") for c in calls)
    assert [(results / f"shard-{k}.exit").read_text().strip() for k in range(1, n + 1)] == ["0", "1", "0"]

    r = run_script(container(merge)["args"][0], results, stub, {"SHARDS": str(n)})
    assert r.returncode != 0  # shard 2 failed: the merge Job says so after merging and reporting
    calls = (tmp_path / "calls.log").read_text().splitlines()[n:]
    assert calls == [
        f"-m pytest_llmbench merge {results}/merged " + " ".join(f"{results}/shard-{k}" for k in range(1, n + 1)),
        f"-m pytest_llmbench report {results}/merged",
    ]


def _extras(install: str) -> set[str]:
    """The extras a ``pip install -e '.[a,b]'`` line names (none for a bare ``.``)."""
    m = re.search(r"-e\s+'?\.(?:\[([^\]]*)\])?", install)
    assert m, install
    return {e.strip() for e in (m.group(1) or "").split(",") if e.strip()}


def test_merge_job_installs_the_report_extra_it_needs_for_report_html():
    """Issue 54: the merge job installed bare ``.``, so ``report merged`` had no matplotlib/jinja2 and wrote
    no report.html, against the workflow's own comment."""
    merge = yaml.safe_load(WORKFLOW.read_text())["jobs"]["merge"]
    install = next(s["run"] for s in merge["steps"] if "pip install" in s.get("run", ""))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "report" in pyproject["project"]["optional-dependencies"]
    assert "report" in _extras(install), install
