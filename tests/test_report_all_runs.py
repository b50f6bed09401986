"""`evals report` (table and --html) reads every kind of run the tool writes: `evals run` live, `evals run` on a
recorded_sessions suite, `evals analyze` (also with --html), `evals merge`, and a killed run of each pipeline."""

from __future__ import annotations

import json
from pathlib import Path

from evals_cli.report import load_sessions, run_kind
from tests.helpers import run_cli, write_suite
from tests.run_factory import scripted_run
from tests.scripted_server import ScriptedServer, agent_script, text
from tests.test_html_report import Page

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "datasets" / "multi_agent_sessions.jsonl"
SESSIONS_SUITE = ROOT / "suites" / "multi_agent.yaml"
IDS = ["refund-clean", "refund-unauthorized-tool", "refund-hallucinated-parameter", "refund-lost-handoff",
       "refund-user-reasks", "refund-user-corrects", "refund-hallucinated-answer", "refund-reviewer-redoes"]


def rows(html: Path) -> list[dict[str, str]]:
    page = Page(html.read_text(encoding="utf-8"))
    return [a for t, a in page.tags if t == "tr" and "data-sample" in a]


def report(run: Path, html: Path) -> tuple[str, str]:
    done = run_cli("report", str(run), "--html", str(html))
    assert done.returncode == 0, done.stdout + done.stderr
    assert html.is_file() and f"html report: {html}" in done.stdout
    return done.stdout, done.stderr


def test_live_run(server: ScriptedServer, tmp_path: Path) -> None:
    run = scripted_run(server, tmp_path)
    assert run_kind(run) == "samples" and run_kind(run / "results.jsonl") == "samples"
    out, err = report(run, tmp_path / "live.html")
    assert "Gate FAILED" in out and "warning" not in err
    assert len(rows(tmp_path / "live.html")) == 5


def test_sessions_suite_run(tmp_path: Path) -> None:
    """`evals run` on a recorded_sessions suite writes the results of every run (a SampleResult per session, the
    common gate), so `evals report` and its HTML read it like any run (it once exited 2: "not a results line")."""
    run = tmp_path / "run"
    assert run_cli("run", str(SESSIONS_SUITE), "--no-judge", "-o", str(run)).returncode == 1
    assert run_kind(run) == "samples"
    out, err = report(run, tmp_path / "sessions.html")
    assert "warning" not in err and "torn" not in err
    assert "Gate FAILED: all of (overall avg_score = 0.775 not ≥ 0.8" in out
    assert "8 samples: 5 passed, 3 failed, 0 errored" in out
    found = rows(tmp_path / "sessions.html")
    assert sorted(r["data-sample"] for r in found) == sorted(IDS)
    text = Page((tmp_path / "sessions.html").read_text(encoding="utf-8")).text
    assert "Gate FAILED" in text and "unauthorized_tool" in text and "torn" not in text
    table = run_cli("report", str(run / "results.jsonl"))  # the results file works as well as its folder
    assert table.returncode == 0 and "refund-user-corrects" in table.stdout


def test_analyze_run_and_its_html_option(tmp_path: Path) -> None:
    """`evals analyze` wrote an empty report with a false "torn last line" warning; --html writes it directly."""
    direct = tmp_path / "direct.html"
    done = run_cli("analyze", str(SESSIONS), "-o", str(tmp_path / "run"), "--html", str(direct))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"html report: {direct}" in done.stdout
    assert [r["data-sample"] for r in rows(direct)] == IDS
    out, err = report(tmp_path / "run", tmp_path / "later.html")
    assert "torn" not in err and "Gate PASSED" in out
    assert (tmp_path / "later.html").read_text(encoding="utf-8") == direct.read_text(encoding="utf-8")


def test_analyze_of_one_session(tmp_path: Path) -> None:
    """The case of the false warning: one line, a valid session analysis, read as a torn SampleResult."""
    one = tmp_path / "one.jsonl"
    one.write_text(SESSIONS.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    assert run_cli("analyze", str(one), "-o", str(tmp_path / "run"), "-q").returncode in (0, 1)
    out, err = report(tmp_path / "run", tmp_path / "one.html")
    assert "torn" not in err and "warning" not in err
    assert [r["data-sample"] for r in rows(tmp_path / "one.html")] == ["refund-clean"]


def test_analyze_json_keeps_stdout_one_document(tmp_path: Path) -> None:
    html = tmp_path / "a.html"
    done = run_cli("analyze", str(SESSIONS), "-o", str(tmp_path / "run"), "--json", "--html", str(html))
    assert done.returncode == 0
    assert json.loads(done.stdout)["summary"]["sessions"] == 8 and f"html report: {html}" in done.stderr
    assert html.is_file()


def test_analyze_html_without_output_folder(tmp_path: Path) -> None:
    html = tmp_path / "a.html"
    done = run_cli("analyze", str(SESSIONS), "-q", "--html", str(html), cwd=tmp_path)
    assert done.returncode == 0 and html.is_file()
    [folder] = (tmp_path / "results").iterdir()  # the default folder, the same one analyze writes without --html
    assert folder.name.startswith("analyze-multi_agent_sessions-") and (folder / "summary.json").is_file()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    refused = run_cli("analyze", str(bad), "--html", str(tmp_path / "b.html"), cwd=tmp_path)
    assert refused.returncode == 2 and not (tmp_path / "b.html").exists()
    assert len(list((tmp_path / "results").iterdir())) == 1  # no empty folder left by the refused run


def test_killed_sessions_run(tmp_path: Path) -> None:
    """No summary.json and a torn last line: the sessions that were written, no gate verdict, two warnings."""
    run = tmp_path / "run"
    assert run_cli("analyze", str(SESSIONS), "-o", str(run), "-q").returncode == 0
    (run / "summary.json").unlink()
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    (run / "results.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:100], encoding="utf-8")
    assert run_kind(run) == "sessions"
    view = load_sessions(run)
    assert [a.session_id for a in view.analyses] == IDS[:3]
    assert view.summary.gate is None and view.summary.exit_code == 3 and view.summary.sessions == 3
    assert any("torn last line" in w for w in view.warnings) and any("no summary.json" in w for w in view.warnings)
    out, err = report(run, tmp_path / "killed.html")
    assert "torn last line" in err and "no gate" in out
    assert len(rows(tmp_path / "killed.html")) == 3
    assert "No gate verdict." in Page((tmp_path / "killed.html").read_text(encoding="utf-8")).text


def test_merged_run(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"q": [text("fine")]})
    data = [{"id": f"s{i:02d}", "input": f"q{i}", "ground_truth": "fine" if i % 5 else "other"} for i in range(10)]
    suite = write_suite(tmp_path, data, base_url=server.url, graders={"answer": {"kind": "tool", "function": "contains"}},
                        gate={"value": 0.9})
    for k in (1, 2):
        assert run_cli("run", str(suite), "--shard", f"{k}/2", "-o", str(tmp_path / f"shard{k}")).returncode in (0, 1)
    merged = tmp_path / "merged"
    assert run_cli("merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), "-o", str(merged)).returncode == 1
    assert run_kind(merged) == "samples"
    out, err = report(merged, tmp_path / "merged.html")
    assert "Gate FAILED" in out and "warning" not in err
    found = rows(tmp_path / "merged.html")
    assert sorted(r["data-sample"] for r in found) == [d["id"] for d in data]
    assert [r["data-status"] for r in found].count("failed") == 2
    page = Page((tmp_path / "merged.html").read_text(encoding="utf-8"))
    assert "weighted score is ≥ 0.9" in page.text  # the pass rule, read from the merged run's run.json
