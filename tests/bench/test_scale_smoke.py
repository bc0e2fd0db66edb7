"""``bench/scale.py`` (issue 25's acceptance in one run) reports every figure of every measure
module that is there, as rows with a ratio and PASS/MISS, and draws its growth curves as SVG.

Only presence is checked, never a timing: which rows pass depends on the machine. A measure
whose module is missing is reported "not available", and its rows are not expected.
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def scale() -> Iterator[ModuleType]:
    """``bench/scale.py``, imported with bench/ on the path (as when it runs as a script)."""
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("scale")
    finally:
        sys.path.remove(str(BENCH))


#: Each measure of ``bench/scale.py`` and its module (as ``scale.MEASURES`` has them).
MEASURES = {
    "listing": "_listing",
    "cold_open": "_cold_open",
    "map": "_map_scale",
    "quality": "_quality_scale",
    "http": "_http_scale",
    "per_node": "_per_node",
    "pg_commits": "_pg_commits",
}


def test_the_measures_here_are_the_ones_scale_runs(scale: ModuleType) -> None:
    assert scale.MEASURES == MEASURES


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MEASURES))
def test_a_quick_run_reports_every_figure_of_a_measure(name: str, tmp_path: Path) -> None:
    """One measure at a time (``--only``): each module's quick mode takes its own while."""
    if not (BENCH / f"{MEASURES[name]}.py").is_file():
        pytest.skip(f"bench/{MEASURES[name]}.py is not there")
    plots = tmp_path / "plots"
    done = subprocess.run(
        [sys.executable, str(BENCH / "scale.py"), "--quick", "--json", "--only", name,
         "--dir", str(tmp_path), "--plots", str(plots)],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)  # stdout holds the report and nothing else
    state = report["measures"][name]
    if state.startswith("skipped:"):  # e.g. no PostgreSQL server to measure
        assert not report["rows"]
        pytest.skip(state)
    assert state == "ok", done.stderr[-3000:]
    rows = report["rows"]
    assert rows
    assert not [row for row in rows if row["verdict"] == "MISSING"]
    shown = [row for row in rows if row["ratio"] is not None]
    assert shown and all(math.isfinite(row["ratio"]) and row["ratio"] > 0 for row in shown)
    judged = [row for row in shown if row["target"] != "-"]
    assert all(row["verdict"] in ("PASS", "MISS") for row in judged)
    assert all(math.isfinite(value) for value in report["figures"].values())
    # Each growth curve drawn is an SVG with a line per series.
    for path in map(Path, report["plots"]):
        assert list(ElementTree.parse(path).getroot().iter(f"{SVG}polyline"))
    assert not list(tmp_path.glob(".flowkit-bench-*"))  # scratch stores are removed


def test_a_missing_module_is_reported_and_the_others_still_run(
    scale: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(scale.MEASURES, "listing", "_no_such_measure_module")
    assert scale.run_measure("listing", True, tmp_path) == ("not available", None)


def test_a_measure_that_fails_is_reported_not_raised(
    scale: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = ModuleType("_broken_measure")

    def measure(quick: bool) -> dict[str, float]:
        raise OSError("disk full")

    broken.measure = measure  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_broken_measure", broken)
    monkeypatch.setitem(scale.MEASURES, "per_node", "_broken_measure")
    state, result = scale.run_measure("per_node", True, tmp_path)
    assert state.startswith("failed: OSError") and result is None


def test_a_measure_without_its_server_is_reported_skipped(
    scale: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    away = ModuleType("_away_measure")
    away.measure = lambda quick: {"skipped": "no PostgreSQL"}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_away_measure", away)
    monkeypatch.setitem(scale.MEASURES, "pg_commits", "_away_measure")
    monkeypatch.chdir(tmp_path)
    assert scale.main(["--only", "pg_commits", "--json", "--dir", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["measures"] == {"pg_commits": "skipped: no PostgreSQL"}
    assert report["rows"] == []


def test_results_are_flattened_to_dotted_names(scale: ModuleType) -> None:
    numbers, words = scale.flatten(
        {"fsync": {"ratio": 0.5, "samples": {"a": [1, 2]}}, "fs": "ext4", "clients": 16}, ""
    )
    assert numbers == {"fsync.ratio": 0.5, "clients": 16.0}
    assert words == {"fs": "ext4"}


def test_rows_are_ratios_with_verdicts_and_missing_figures_are_flagged(
    scale: ModuleType,
) -> None:
    figures = {
        "listing.cli_s.200": 1.0,
        "listing.cli_s.20000": 2.5,
        "listing.page_ms.100000": 150.0,
        "per_node.durable_us": 30.0,
        "per_node.floor_us": 10.0,
        "http.fsync.flowkit_pairs_s": 90.0,
        "http.fsync.floor_pairs_s": 100.0,
    }
    status = {"listing": "ok", "per_node": "ok", "http": "ok", "quality": "ok", "map": "failed"}
    rows = {row.measure: row for row in scale.acceptance_rows(figures, status)}
    cli = rows["flowkit threads --json, 20,000 / 200 threads"]
    assert (cli.ratio, cli.verdict) == (2.5, "PASS")
    page = rows["GET /threads?limit=50 at 100,000 threads"]
    assert (page.ratio, page.verdict) == (1.5, "MISS")
    assert rows["per node, durable, new thread per 10-node run"].verdict == "MISS"
    assert rows["HTTP start+resume pairs/s, 16 clients, fsync"].verdict == "PASS"  # >= 0.8x
    quality = rows["quality resume of 200 issues (json)"]
    assert (quality.verdict, quality.missing) == ("MISSING", ("quality.json.resume_200.median_ms",))
    assert not [name for name in rows if "Map" in name]  # the map measure did not run
    assert "postgres" not in " ".join(rows)  # no server reached: no PostgreSQL rows


def test_growth_curves_become_svg_line_charts(scale: ModuleType, tmp_path: Path) -> None:
    figures = {f"listing.cli_s.{n}": n / 1000 for n in (200, 2000, 20000)}
    figures |= {f"listing.page_ms.{n}": 5.0 for n in (1000, 10000, 100000)}
    figures |= {f"map.sync.{n}.fsync_s": n / 100 for n in (10, 100)}
    figures |= {f"map.sync.{n}.nofsync_s": n / 1000 for n in (10, 100)}
    written = scale.write_plots(figures, tmp_path)
    assert sorted(path.name for path in written) == ["map.svg", "threads.svg"]
    threads = ElementTree.parse(tmp_path / "threads.svg").getroot()
    assert len(list(threads.iter(f"{SVG}polyline"))) == 2
    legend = [t.text for t in threads.iter(f"{SVG}text")]
    assert "flowkit threads --json (wall, fresh process)" in legend
    assert "GET /threads?limit=50 (first page)" in legend
    assert {"100", "1,000", "10,000", "100,000"} <= set(legend)  # log-scale ticks
    chart = ElementTree.parse(tmp_path / "map.svg").getroot()
    assert len(list(chart.iter(f"{SVG}polyline"))) == 2
