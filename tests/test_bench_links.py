"""The benchmark reports' links resolve from where the report files are: the
committed ones, and those that ``bench/_common.publish`` writes (links written
relative to ``bench/``, as every suite writes them, rewritten for the file's
folder)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"

pytestmark = pytest.mark.skipif(not (BENCH / "_common.py").exists(),
                                reason="needs bench/ next to the tests")


@pytest.fixture
def common(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import _common
    yield _common
    sys.modules.pop("_common", None)


def _committed_reports():
    return [ROOT / "README.md", BENCH / "RESULTS.md", ROOT / "tests" / "RELIABILITY.md",
            *sorted((BENCH / "results").glob("*.md"))]


@pytest.mark.parametrize("path", _committed_reports(), ids=lambda p: str(p.name))
def test_committed_report_links_resolve(path, common):
    if not path.exists():
        pytest.skip(f"{path} absent")
    assert common.broken_links(str(path)) == []


@pytest.mark.parametrize("where", [".", "results", "results/quick", "../elsewhere"])
def test_published_links_resolve_from_the_report(where, tmp_path, common,
                                                  monkeypatch, capsys):
    # A report in a folder at another depth than bench/, as the quick mode's
    # bench/results/quick/REPORT.md is: written to a copy of bench/ under tmp_path.
    bench = tmp_path / "bench"
    (bench / "results" / "quick").mkdir(parents=True)
    (bench / "results" / "ep_profile.md").write_text("profile\n")
    (bench / "results" / "quick" / "fig.png").write_bytes(b"")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "RELIABILITY.md").write_text("reliability\n")
    monkeypatch.setattr(common, "BENCH", str(bench))
    text = ("[`results/ep_profile.md`](results/ep_profile.md), "
            "[notes](../tests/RELIABILITY.md#why \"title\"), "
            f"Figure: {common.figure_ref(str(bench / 'results' / 'quick' / 'fig.png'))}, "
            "[web](https://example.org/x), [here](#top)")
    report = bench / where / "REPORT.md"
    common.publish(text, str(report), echo=False)
    assert capsys.readouterr().out == ""
    written = report.read_text()
    assert common.broken_links(str(report)) == []
    assert "(https://example.org/x)" in written and "(#top)" in written
    assert "`results/quick/fig.png`" in written  # the link's text is unchanged
    if where == ".":
        assert written == text


def test_broken_links_finds_a_missing_file(tmp_path, common):
    report = tmp_path / "REPORT.md"
    report.write_text("[a](missing.md) [b](REPORT.md#x) [c](http://x.org/missing.md)")
    assert common.broken_links(str(report)) == ["missing.md"]


def test_reports_see_the_load_of_other_processes(common):
    # A process spinning beside the benchmark shows in machine_line's share of
    # the cores' time used by others (the own process's time is not counted).
    import os
    import subprocess
    import time

    common._START = common._cpu_snapshot()
    if common._START is None:
        pytest.skip("needs /proc/stat")
    spin = subprocess.Popen([sys.executable, "-c",
                             "import time\nt = time.time()\n"
                             "while time.time() - t < 2.0: pass"])
    try:
        time.sleep(1.5)
        share = common.others_busy()
    finally:
        spin.wait()
    assert 0.3 / os.cpu_count() < share <= 1.0
    assert "other processes used" in common.machine_line()


@pytest.mark.parametrize("where", ["root", "bench"])
def test_commands_name_no_path_of_this_machine(where, tmp_path, common, monkeypatch):
    # A report's command is typed from the repository root or from bench/, and
    # carries no folder of the machine it ran on; nor do its figures' links.
    monkeypatch.chdir(BENCH if where == "bench" else ROOT)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    argv = [str(BENCH / "paper_vb.py"), "--out", str(BENCH / "results"),
            "--write", str(tmp_path / "report.md")]
    command = common.command_line(argv)
    shown = {"root": "python bench/paper_vb.py --out bench/results --write report.md",
             "bench": "cd bench && python paper_vb.py --out results --write report.md"}
    assert command == shown[where]
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert "OPENBLAS_NUM_THREADS=1 python " in common.command_line(argv)
    figure = common.figure_ref(str(tmp_path / "fig.png"))
    assert str(tmp_path) not in figure and figure.startswith("[`fig.png`](")
