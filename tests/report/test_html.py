"""report.html from a real CPU-suite results folder (data/cpu-run-a, see data/README.md)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from pytest_llmbench.__main__ import main
from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import html

DATA = Path(__file__).parent / "data"
RUN = DATA / "cpu-run-a"
BASELINES = DATA / "baselines"


@pytest.fixture(scope="module")
def page() -> str:
    return html.render(read_folder(RUN), BASELINES)


def test_self_contained(page: str) -> None:
    """Opens offline: no scripts, no external stylesheet, image or font; every figure is inline SVG."""
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "url(http" not in page
    assert page.count("<figure") == page.count("<svg") >= 1


def test_ids_unique_and_references_resolve(page: str) -> None:
    """Several inline SVGs share one document: matplotlib's per-figure ids must not collide."""
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r"url\(#([^)]+)\)", page)) | set(re.findall(r'href="#([^"]+)"', page))
    assert refs and refs <= set(ids)


def test_expected_figures(page: str) -> None:
    """The CPU suite has serving scenarios, accept length, BFCL, decisions and gated baselines."""
    folder = read_folder(RUN)
    ids = set(re.findall(r'<figure id="([^"]+)"', page))
    assert {"plot-throughput", "plot-ttft-decode", "plot-accept-length", "plot-bfcl", "plot-calibration"} <= ids
    with_baseline = {v["config"] for v in folder.kind("verdict") if v.get("baseline") is not None}
    assert {f"plot-history-{c}" for c in with_baseline} <= ids


def test_verdict_rows_match_results(page: str) -> None:
    table = page.split('id="verdicts-table"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr class=\"([^\"]*)\">(.*?)</tr>", table, re.S)
    verdicts = read_folder(RUN).kind("verdict")
    assert len(rows) == len(verdicts)
    assert sorted(cls for cls, _ in rows) == sorted(v["status"] for v in verdicts)


def test_missing_data_means_fewer_figures(tmp_path: Path) -> None:
    """Only the serving scenarios of the config without drafting: no quality figures, no empty boxes."""
    import json

    (tmp_path / "results.jsonl").write_text(
        "".join(
            line + "\n"
            for line in (RUN / "results.jsonl").read_text().splitlines()
            if json.loads(line).get("record") in ("scenario", "server") and json.loads(line)["config"] == "smol-nospec"
        )
    )
    text = html.render(read_folder(tmp_path))
    ids = set(re.findall(r'<figure id="([^"]+)"', text))
    assert ids == {"plot-throughput", "plot-ttft-decode"}


def test_user_text_is_escaped(tmp_path: Path) -> None:
    import json

    (tmp_path / "results.jsonl").write_text(
        json.dumps(
            {
                "record": "verdict",
                "config": "<b>c</b>",
                "test_key": "t",
                "metric": "m",
                "status": "pass",
                "observed": 1.0,
            }
        )
        + "\n"
    )
    text = html.render(read_folder(tmp_path))
    assert "<b>c</b>" not in text and "&lt;b&gt;c&lt;/b&gt;" in text


def test_cli_writes_both_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    assert main(["report", str(run), "--baselines-dir", str(BASELINES)]) == 0
    out = capsys.readouterr().out
    assert f"report:  {run / 'report.html'}" in out and f"summary: {run / 'summary.md'}" in out
    assert (run / "report.html").stat().st_size > 10_000 and (run / "summary.md").is_file()


def test_without_matplotlib_summary_still_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    assert main(["report", str(run)]) == 1
    assert (run / "summary.md").is_file() and not (run / "report.html").exists()
    assert "pip install 'pytest-llmbench[report]'" in capsys.readouterr().err


def test_cli_bad_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing")]) == 1
    assert f"{tmp_path / 'missing'}: not a folder" in capsys.readouterr().err
