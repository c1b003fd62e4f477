"""The runner recipes under docs/nightly are checked, not just read: the GitHub workflow against the GitHub
workflow schema check-jsonschema ships (offline), the CronJob against docs/nightly/cronjob.schema.json (the
batch/v1 CronJob's required fields and types: check-jsonschema bundles no Kubernetes schema), and both run
the nightly command with the arguments its parser accepts."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from pytest_llmbench.cli.nightly import _parser

DOCS = Path(__file__).resolve().parents[2] / "docs" / "nightly"
WORKFLOW, CRONJOB, SCHEMA = DOCS / "github-actions.yml", DOCS / "cronjob.yaml", DOCS / "cronjob.schema.json"


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", *args], capture_output=True, text=True, timeout=120
    )


def test_the_workflow_passes_the_github_workflow_schema_and_a_broken_one_does_not(tmp_path):
    r = check("--builtin-schema", "vendor.github-workflows", str(WORKFLOW))
    assert r.returncode == 0, r.stdout + r.stderr
    wf = yaml.safe_load(WORKFLOW.read_text())
    del wf["jobs"]["nightly"]["runs-on"]
    (tmp_path / "bad.yml").write_text(yaml.safe_dump(wf))
    r = check("--builtin-schema", "vendor.github-workflows", str(tmp_path / "bad.yml"))
    assert r.returncode != 0 and "runs-on" in r.stdout + r.stderr


def test_the_cronjob_passes_its_schema_and_a_broken_one_does_not(tmp_path):
    r = check("--schemafile", str(SCHEMA), str(CRONJOB))
    assert r.returncode == 0, r.stdout + r.stderr
    job = yaml.safe_load(CRONJOB.read_text())
    job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"  # not allowed for a Job
    del job["spec"]["schedule"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(job))
    r = check("--schemafile", str(SCHEMA), str(tmp_path / "bad.yaml"))
    assert r.returncode != 0 and "schedule" in r.stdout + r.stderr


def _own_args(argv: list[str]) -> list[str]:
    return argv[: argv.index("--")] if "--" in argv else argv


def test_both_run_the_nightly_command_with_arguments_it_accepts():
    wf = yaml.safe_load(WORKFLOW.read_text())
    (run,) = [s["run"] for s in wf["jobs"]["nightly"]["steps"] if "pytest_llmbench nightly" in s.get("run", "")]
    argv = shlex.split(run.replace("\\\n", " "))
    argv = argv[argv.index("nightly") + 1 :]
    args = _parser().parse_args(_own_args(argv))
    assert args.store == "$STORE" and args.bisect_budget == 3600 and args.candidates_from == "hook"
    assert "git+https://" in wf["env"]["STORE"] and wf["env"]["STORE"].endswith("#llmbench-nights")
    assert wf["permissions"]["contents"] == "write"  # the job pushes the night to the branch
    job = yaml.safe_load(CRONJOB.read_text())
    (c,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert c["command"] == ["python", "-m", "pytest_llmbench", "nightly"]
    args = _parser().parse_args(_own_args(c["args"]))
    assert args.store.startswith("s3://") and args.budget == "40m" and args.bisect_budget == 3600
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
