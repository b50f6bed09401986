"""Exporters are plug-ins of one shape: each format is a module registering one function in EXPORTERS, and
`export_run` / `parse_export` reach every registered format by name (`--export FORMAT=PATH`), the older
`junit=` and `task_results=` keywords being aliases."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals_cli.errors import ConfigError
from evals_cli.exporters import EXPORTERS, FinishedRun, export_run, parse_export, parse_exports
from evals_cli.models.results import RunSummary, SampleResult
from tests.run_factory import make_result, make_summary, write_run


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, RunSummary]:
    results: list[SampleResult] = [make_result("good", {"answer": 1.0}, passed=True),
                                   make_result("mixed", {"answer": 0.0, "judge": 0.6}, passed=False)]
    summary = make_summary(results, suite="registry-suite")
    return write_run(tmp_path / "run", results, summary), summary


def failure_text(path: Path) -> str:
    failure = ET.parse(path).getroot().find("testsuite/testcase/failure")
    assert failure is not None
    return failure.text or ""


def test_every_format_is_a_module_of_the_package_registering_itself() -> None:
    assert set(EXPORTERS.kinds()) == {"html", "inspect", "junit", "task_results"}
    for entry in EXPORTERS.entries():
        assert entry.module.startswith("evals_cli.exporters.") and callable(entry.impl)


def test_export_run_writes_every_format_asked_for_by_name(run: tuple[Path, RunSummary], tmp_path: Path) -> None:
    run_dir, summary = run
    out = tmp_path / "exports"
    export_run(run_dir, summary, exports={"junit": out / "j.xml", "task_results": out / "t.jsonl",
                                          "html": out / "r.html"})
    assert ET.parse(out / "j.xml").getroot().get("tests") == "2"
    tasks = [json.loads(line) for line in (out / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [t["task_id"] for t in tasks] == ["good", "mixed"]
    assert (out / "r.html").read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


def test_the_old_keywords_are_aliases_and_the_threshold_still_applies(run: tuple[Path, RunSummary],
                                                                       tmp_path: Path) -> None:
    run_dir, summary = run
    export_run(run_dir, summary, junit=tmp_path / "alias.xml", task_results=tmp_path / "alias.jsonl")
    export_run(run_dir, summary, exports={"junit": tmp_path / "named.xml", "task_results": tmp_path / "named.jsonl"})
    assert (tmp_path / "alias.jsonl").read_text() == (tmp_path / "named.jsonl").read_text()
    assert failure_text(tmp_path / "alias.xml") == failure_text(tmp_path / "named.xml")
    assert "judge: score 0.60" in failure_text(tmp_path / "alias.xml")  # default 1.0: anything short of full marks
    export_run(run_dir, summary, junit=tmp_path / "lenient.xml", threshold=0.5)
    assert "judge" not in failure_text(tmp_path / "lenient.xml")
    export_run(run_dir, summary, junit=tmp_path / "same.xml", exports={"junit": tmp_path / "same.xml"})  # no clash


def test_an_unknown_format_or_a_clash_is_a_config_error_before_anything_is_written(
        run: tuple[Path, RunSummary], tmp_path: Path) -> None:
    run_dir, summary = run
    with pytest.raises(ConfigError, match="unknown export format 'xml'; known formats: html, inspect, junit, task_results"):
        export_run(run_dir, summary, junit=tmp_path / "j.xml", exports={"xml": tmp_path / "x.xml"})
    with pytest.raises(ConfigError, match="export junit: two files given"):
        export_run(run_dir, summary, junit=tmp_path / "j.xml", exports={"junit": tmp_path / "other.xml"})
    assert list(tmp_path.glob("*.xml")) == []


def test_parse_export_reads_format_equals_path_and_names_the_flag_on_mistakes() -> None:
    assert parse_export("junit=out/j.xml") == ("junit", Path("out/j.xml"))
    assert parse_export("html=a=b.html") == ("html", Path("a=b.html"))  # only the first '=' separates
    for bad in ("junit", "=out.xml", "junit="):
        with pytest.raises(ConfigError) as info:
            parse_export(bad)
        message = str(info.value)
        assert message.startswith(f"--export {bad!r}: expected FORMAT=PATH")
        assert "html, inspect, junit, task_results" in message
    with pytest.raises(ConfigError, match=r"--export 'xml=a.xml': unknown format 'xml'; known formats: html, inspect, "
                                          r"junit, task_results"):
        parse_export("xml=a.xml")


def test_parse_exports_reads_a_command_line_and_refuses_one_format_twice() -> None:
    assert parse_exports(["junit=a.xml", "html=r.html", "junit=a.xml"]) == {"junit": Path("a.xml"),
                                                                             "html": Path("r.html")}
    with pytest.raises(ConfigError, match=r"--export junit: two files given \(a.xml and b.xml\); give one"):
        parse_exports(["junit=a.xml", "junit=b.xml"])


@pytest.fixture
def csv_format() -> Iterator[None]:
    """A format registered the way a new module would: nothing else is edited to reach it."""

    @EXPORTERS.register("csv")
    def export_csv(run: FinishedRun, path: Path) -> None:
        path.write_text("".join(f"{r.sample_id},{r.passed}\n" for r in run.results()), encoding="utf-8")

    yield
    EXPORTERS.unregister("csv")


def test_a_registered_format_is_reachable_by_name(csv_format: None, run: tuple[Path, RunSummary],
                                                  tmp_path: Path) -> None:
    run_dir, summary = run
    fmt, path = parse_export(f"csv={tmp_path / 'out.csv'}")
    export_run(run_dir, summary, exports={fmt: path})
    assert path.read_text(encoding="utf-8") == "good,True\nmixed,False\n"
