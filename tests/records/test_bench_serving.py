"""records/bench_serving.py and the bench-serving command: our scenarios out as sglang bench_serving JSONL, and
bench_serving files (data/bench_serving/: the shape its --output-file writes, two nights and one with
--output-details) read by ``compare`` and ``history`` where they take a results folder."""

import json
import math
from pathlib import Path

import pytest

from pytest_llmbench.__main__ import main
from pytest_llmbench.history.series import build_series, read_nights
from pytest_llmbench.records.bench_serving import KEYS, export_line, is_bench_serving, read_records
from pytest_llmbench.records.folder import ResultsFolderError, read_folder

DATA = Path(__file__).parents[1] / "report" / "data" / "bench_serving"
SESSION = Path(__file__).parents[2] / "experiments" / "data" / "report" / "headline_session"


def test_a_bench_serving_file_reads_as_one_session():
    folder = read_folder(DATA / "night1.jsonl")
    scenarios = folder.kind("scenario")
    assert [(s["config"], s["scenario"]) for s in scenarios] == [
        ("sglang", "random rate inf conc 16 in 1024 out 256"),
        ("sglang", "random rate 2 conc 16 in 1024 out 256"),
    ]
    assert scenarios[0]["metrics"]["output_throughput"] == 410.0
    assert scenarios[0]["source"] == "night1.jsonl:1"
    assert folder.server("sglang")["server_info"]["version"] == "0.5.6"
    checks = folder.kind("check")
    assert {c["metric"] for c in checks} >= {"output_throughput", "median_tpot_ms", "mean_ttft_ms"}
    assert {c["status"] for c in checks} == {"imported"}  # nothing judged them: the headline says so


def test_output_details_become_requests():
    (s,) = read_folder(DATA / "details.jsonl").kind("scenario")
    ok, ok2, failed = s["requests"]
    assert ok["ok"] and ok["ttft_s"] == 0.12 and ok["e2e_s"] == pytest.approx(0.12 + 255 * 0.03)
    assert ok["tpot_s"] == pytest.approx(0.03) and ok2["tpot_s"] == pytest.approx(0.031)
    assert (failed["ok"], failed["error"], failed["ttft_s"]) == (False, "Bad Gateway", None)


def test_compare_takes_two_bench_serving_files(capsys):
    assert main(["compare", str(DATA / "night1.jsonl"), str(DATA / "night2.jsonl")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "rate inf" in line and "output_throughput" in line)
    assert "410" in row and "352" in row and "0.859" in row  # 352 / 410


def test_history_takes_bench_serving_files(tmp_path, capsys):
    files = [DATA / "night1.jsonl", DATA / "night2.jsonl"]
    code = main(["history", *map(str, files), "--out", str(tmp_path), "--no-html", "--no-step-summary"])
    assert code == 0, capsys.readouterr().err
    assert "2 nights (night1.jsonl … night2.jsonl), 16 series" in (tmp_path / "history.md").read_text()
    series = {(s.key.test, s.key.metric): s for s in build_series(read_nights(files))}
    points = series["random rate inf conc 16 in 1024 out 256", "output_throughput"].points
    assert [p.value for p in points] == [410.0, 352.0]
    assert [p.build for p in points] == ["0.5.6", "0.5.7"]  # the build from bench_serving's server_info


def test_history_finds_the_step_in_a_team_s_bench_serving_nights(tmp_path, capsys):
    """Ten nights of one bench_serving run, throughput ~410 then ~350 from night 6: the change point."""
    template = json.loads((DATA / "night1.jsonl").read_text().splitlines()[0])
    files = []
    for night, tp in enumerate([410, 404, 413, 407, 411, 352, 349, 355, 350, 353], start=1):
        path = tmp_path / f"night{night:02d}.jsonl"
        path.write_text(json.dumps({**template, "output_throughput": float(tp)}) + "\n")
        files.append(str(path))
    out = tmp_path / "history"
    assert main(["history", *files, "--out", str(out), "--no-html", "--no-step-summary", "--last", "5"]) == 0
    found = [json.loads(x) for x in (out / "change_points.jsonl").read_text().splitlines()]
    step = [f for f in found if f["metric"] == "output_throughput"]
    assert len(step) == 1, found
    assert "night06" in json.dumps(step[0]) and step[0]["new"]


def test_export_writes_bench_serving_keys_and_reads_back(tmp_path, capsys):
    out = tmp_path / "bench.jsonl"
    assert main(["bench-serving", str(SESSION), str(out)]) == 0
    ours = read_folder(SESSION).kind("scenario")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == len(ours) >= 1
    line, record = lines[0], ours[0]
    assert line["tag"] == f"{record['config']}/{record['scenario']}"
    for key in KEYS:
        if key in record["metrics"]:
            assert line[key] == record["metrics"][key], key
    assert line["request_rate"] == math.inf and line["max_concurrency"] == record["max_concurrency"]
    assert len(line["ttfts"]) == len(record["requests"])
    assert is_bench_serving(out)
    (back,) = read_folder(out).kind("scenario")
    assert (back["config"], back["scenario"]) == (record["config"], record["scenario"])
    assert main(["compare", str(SESSION), str(out)]) == 0  # ours against its own export: every ratio 1
    table = capsys.readouterr().out
    rows = [r for r in table.splitlines() if r.startswith("|") and "output_throughput" in r]
    assert rows and all("1.000" in r for r in rows)


def test_a_line_that_is_not_bench_serving_names_file_and_line(tmp_path):
    bad = tmp_path / "mixed.jsonl"
    good = (DATA / "night1.jsonl").read_text().splitlines()[0]
    bad.write_text(good + "\n" + json.dumps({"backend": "sglang", "completed": 3}) + "\n")
    with pytest.raises(
        ResultsFolderError, match=r"mixed.jsonl:2: not a bench_serving line \(missing duration, output_throughput\)"
    ):
        read_folder(bad)
    with pytest.raises(ResultsFolderError, match="not a folder"):
        read_folder(tmp_path / "nothing.jsonl")


def test_the_same_run_twice_in_one_file_stays_apart(tmp_path):
    twice = tmp_path / "twice.jsonl"
    first = (DATA / "night1.jsonl").read_text().splitlines()[0]
    twice.write_text(first + "\n" + first + "\n")
    names = [r["scenario"] for r in read_records(twice) if r["record"] == "scenario"]
    assert names == ["random rate inf conc 16 in 1024 out 256", "random rate inf conc 16 in 1024 out 256 #2"]


def test_export_line_of_an_open_loop_scenario_keeps_its_rate():
    line = export_line({"config": "c", "scenario": "s", "scenario_params": {"request_rate": 2.5}, "metrics": {}})
    assert line["request_rate"] == 2.5 and line["tag"] == "c/s"
