"""The rest of letta-evals, loaded from letta-style suites as written and run against the scripted server:
custom extractors (`extractor: file.py:func`), the built-in `ascii_printable_only`, CSV datasets, per-sample
`rubric_path` and `extra_vars` rows, and `reward: {kind: custom, function: file.py:func}` (issue 17, 1-5)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, judge_score, text

LETTA = ROOT / "suites" / "letta"
JUDGE_ENV = {"EVAL_JUDGE_API_KEY": "sk-judge"}


def run_letta(server: ScriptedServer, suite: Path, target: str, out: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli("run", str(suite), "--target", str(LETTA / f"{target}.target.yaml"), "--base-url", server.url,
                   "--model", "scripted", "-o", str(out), *extra,
                   env={**JUDGE_ENV, "EVAL_JUDGE_BASE_URL": server.url})


def judge_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in request["body"]["messages"])


# --- reward: {kind: custom} with a CSV dataset, a letta rubric and ascii_printable_only ------------------------


ART = {"cat": "```\n /\\_/\\\n( o.o )\n > ^ <\n```", "fish": "```\n><(((°>\n```", "bird": "```\n  (o>\n//\\\n```"}


def ascii_agent(fish: str) -> Any:
    return agent_script({"a cat": [text(ART["cat"])], "a fish": [text(fish)], "a bird": [text(ART["bird"])]},
                        judge=lambda body: judge_score(0.9, "recognisable and tidy"))


def test_ascii_reward_suite_validates_as_written() -> None:
    result = run_cli("validate", str(LETTA / "ascii_reward.yaml"), "--target", str(LETTA / "ascii.target.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": ok: 3 samples" in result.stdout


def test_custom_reward_zeroes_non_ascii_art_and_the_run_fails_on_the_share_that_passed(
        server: ScriptedServer, tmp_path: Path) -> None:
    server.script = ascii_agent(ART["fish"])  # "°" is not ASCII: the reward is 0 whatever the judge says
    result = run_letta(server, LETTA / "ascii_reward.yaml", "ascii", tmp_path / "out")
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("Gate FAILED: share of samples whose reward (rewards.py:quality_if_ascii) is ≥ 0.7 (2 of 3) = 0.667 "
            "not ≥ 0.7") in result.stdout
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["cat"]["score"] == pytest.approx(0.9) and lines["cat"]["passed"] is True
    fish = lines["fish"]
    assert fish["grades"]["ascii_only"]["score"] == 0.0 and "U+00B0" in fish["grades"]["ascii_only"]["rationale"]
    assert fish["grades"]["quality"]["score"] == pytest.approx(0.9)
    assert fish["score"] == 0.0 and fish["passed"] is False
    assert fish["failed_by"][0]["reason"] == "reward 0.00 not ≥ 0.7 (rewards.py:quality_if_ascii)"
    # every judge call got its row's reference art from the CSV's rubric_vars column, in the letta rubric
    judged = [judge_text(r) for r in server.judge_requests()]
    assert len(judged) == 3 and any("( o.o )" in j for j in judged) and any("><(((°>" in j for j in judged)


def test_custom_reward_passes_when_every_art_is_ascii(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = ascii_agent("```\n><(((*>\n```")
    result = run_letta(server, LETTA / "ascii_reward.yaml", "ascii", tmp_path / "out", "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().startswith("Gate PASSED: share of samples whose reward")


def copy_ascii_suite(tmp_path: Path, rewards: str, function: str) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "ascii_art.csv").write_bytes((ROOT / "datasets" / "letta" / "ascii_art.csv").read_bytes())
    (folder / "rubric.txt").write_bytes((ROOT / "rubrics" / "letta" / "ascii_quality.txt").read_bytes())
    (folder / "rewards.py").write_text(rewards)
    text_ = (LETTA / "ascii_reward.yaml").read_text()
    text_ = text_.replace("../../datasets/letta/ascii_art.csv", "ascii_art.csv")
    text_ = text_.replace("../../rubrics/letta/ascii_quality.txt", "rubric.txt")
    text_ = text_.replace("rewards.py:quality_if_ascii", function)
    (folder / "suite.yaml").write_text(text_)
    return folder / "suite.yaml"


def test_a_reward_function_with_the_wrong_signature_is_exit_2_before_any_call(server: ScriptedServer,
                                                                              tmp_path: Path) -> None:
    suite = copy_ascii_suite(tmp_path, "def compose(ctx, weights):\n    return 1.0\n", "rewards.py:compose")
    for command in ("validate", "run"):
        extra = ("-o", str(tmp_path / "out")) if command == "run" else ()
        result = run_cli(command, str(suite), "--target", str(LETTA / "ascii.target.yaml"), "--base-url",
                         server.url, "--model", "scripted", *extra, env=JUDGE_ENV)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "rewards.py:compose takes (ctx, weights); it must take one argument" in result.stderr
        assert "Traceback" not in result.stderr
    assert server.requests == []


def test_a_reward_that_raises_leaves_its_sample_errored_never_zero(server: ScriptedServer, tmp_path: Path) -> None:
    rewards = ("def picky(ctx):\n"
               "    if ctx.sample.id == 'fish' and ctx.submissions['ascii_only'].startswith('```\\n><'):\n"
               "        raise ValueError('no fish allowed')\n"
               "    return ctx.grades['quality'].score\n")
    suite = copy_ascii_suite(tmp_path, rewards, "rewards.py:picky")
    server.script = ascii_agent("```\n><(((*>\n```")
    result = run_letta(server, suite, "ascii", tmp_path / "out")
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    fish = lines["fish"]
    assert fish["passed"] is None and fish["score"] is None
    assert fish["error"]["message"] == "incomplete: reward rewards.py:picky raised ValueError: no fish allowed"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errored"]) == (2, 0, 1)
    assert result.returncode != 0  # an errored sample is never a silent pass


# --- custom extractor + custom grader ---------------------------------------------------------------------------


TICKETS = {"checkout is down": '{"category": "incident", "priority": "high"}',
           "dark mode": '{"category": "feature", "priority": "low"}',
           "export button": '{"category": "bug", "priority": "medium"}'}


def ticket_agent(answers: dict[str, str]) -> Any:
    return agent_script({key: [text(f"Here you go:\n{answer}\nAnything else?")] for key, answer in answers.items()})


def test_custom_extractor_and_grader_suite_runs_as_written(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = ticket_agent(TICKETS)
    result = run_letta(server, LETTA / "tickets_custom.yaml", "tickets", tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Gate PASSED: ticket_classification avg_score = 1.000 ≥ 0.7" in result.stdout
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    grades = [r["grades"]["ticket_classification"] for r in lines]
    # the custom extractor picked the JSON object out of the chatty reply
    assert sorted(g["submission"] for g in grades) == sorted(TICKETS.values())


def test_custom_extractor_half_right_answers_fail_the_gate(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = ticket_agent({**TICKETS, "dark mode": '{"category": "feature", "priority": "high"}',
                                  "export button": "no idea"})
    result = run_letta(server, LETTA / "tickets_custom.yaml", "tickets", tmp_path / "out", "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.strip() == "Gate FAILED: ticket_classification avg_score = 0.500 not ≥ 0.7"


def copy_tickets_suite(tmp_path: Path, extractor: str, module: str | None = None) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(ROOT / "datasets" / "letta" / "tickets.jsonl", folder / "tickets.jsonl")
    (folder / "ticket_evaluators.py").write_text(module or (LETTA / "ticket_evaluators.py").read_text())
    text_ = (LETTA / "tickets_custom.yaml").read_text().replace("../../datasets/letta/tickets.jsonl",
                                                                "tickets.jsonl")
    text_ = text_.replace("ticket_evaluators.py:json_object_extractor", extractor)
    (folder / "suite.yaml").write_text(text_)
    return folder / "suite.yaml"


@pytest.mark.parametrize(("extractor", "module_tail", "expected"), [
    ("ticket_evaluators.py:one_arg", "\n\ndef one_arg(trajectory):\n    return ''\n",
     "graders.ticket_classification: extractor ticket_evaluators.py:one_arg takes (trajectory); it must be a "
     "function (trajectory, config) -> str"),
    ("ticket_evaluators.py:absent", "", "graders.ticket_classification: ticket_evaluators.py has no function "
                                        "'absent'"),
    ("other.py:f", "", "graders.ticket_classification: custom extractor file other.py not found"),
])
def test_a_custom_extractor_problem_is_exit_2_naming_the_grader(tmp_path: Path, extractor: str, module_tail: str,
                                                                expected: str) -> None:
    module = (LETTA / "ticket_evaluators.py").read_text() + module_tail
    suite = copy_tickets_suite(tmp_path, extractor, module)
    result = run_cli("validate", str(suite), "--target", str(LETTA / "tickets.target.yaml"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr


def test_a_custom_extractor_that_raises_is_a_grade_error_not_a_zero(server: ScriptedServer, tmp_path: Path) -> None:
    module = (LETTA / "ticket_evaluators.py").read_text() + (
        "\n\ndef strict(trajectory, config):\n"
        "    found = json_object_extractor(trajectory, config)\n"
        "    if not found.startswith('{'):\n"
        "        raise ValueError('no JSON object in the reply')\n"
        "    return found\n")
    suite = copy_tickets_suite(tmp_path, "ticket_evaluators.py:strict", module)
    server.script = ticket_agent({**TICKETS, "export button": "no idea"})
    run_letta(server, suite, "tickets", tmp_path / "out")
    broken = next(r for r in read_jsonl(tmp_path / "out" / "results.jsonl") if "export button" in r["input"])
    grade = broken["grades"]["ticket_classification"]
    assert grade["score"] is None and "no JSON object in the reply" in grade["error"]
    assert broken["passed"] is None


# --- per-sample rubric_path and extra_vars rows ------------------------------------------------------------------


PER_SAMPLE = """\
name: per-sample-rubric-example
dataset: dataset.jsonl
target:
  kind: letta_code
  model_handles: [openai/gpt-5-mini]
  base_url: https://api.letta.com/
graders:
  quality:
    kind: model_judge
    prompt_path: rubric.txt
    model: gpt-5-mini
    provider: openai
    extractor: last_assistant
reward:
  kind: metric
  metric_key: quality
"""


def per_sample_suite(tmp_path: Path, dog_path: str = "rubrics/dog.txt") -> Path:
    folder = tmp_path / "suite"
    (folder / "rubrics").mkdir(parents=True)
    (folder / "rubric.txt").write_text("SUITE-RUBRIC. Task: {input}\nSubmission: {submission}\n")
    (folder / "rubrics" / "dog.txt").write_text("DOG-RUBRIC for the {animal}. Submission: {submission}\n")
    rows = [{"input": "draw a cat", "rubric": "CAT-RUBRIC. Submission: {submission}"},
            {"input": "draw a dog", "rubric_path": dog_path, "extra_vars": {"animal": "dog"},
             "rubric_vars": {"animal": "dog"}},
            {"input": "draw a fish", "extra_vars": {"owner": "ops"}}]
    (folder / "dataset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "suite.yaml").write_text(PER_SAMPLE)
    return folder / "suite.yaml"


def test_rubric_path_and_extra_vars_rows_load_and_each_sample_is_judged_by_its_own_rubric(
        server: ScriptedServer, tmp_path: Path) -> None:
    suite = per_sample_suite(tmp_path)
    server.script = agent_script({"cat": [text("=^.^=")], "dog": [text("U・ᴥ・U")], "fish": [text("><>")]},
                                 judge=lambda body: judge_score(0.8))
    result = run_letta(server, suite, "ascii", tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    judged = sorted(judge_text(r) for r in server.judge_requests())
    assert len(judged) == 3
    assert sum("CAT-RUBRIC" in j for j in judged) == 1
    # the file rubric_path named, rendered with the row's variables (quoted as data in the judge's message)
    assert sum(re.search(r"DOG-RUBRIC for the (<data-\w+>)?dog\b", j) is not None for j in judged) == 1
    assert sum("SUITE-RUBRIC" in j for j in judged) == 1  # the row without one: the grader's rubric


@pytest.mark.parametrize("dog_path", ["../outside.txt", "/etc/passwd", "../../../../../../etc/hostname"])
def test_a_rubric_path_outside_the_suite_folder_is_exit_2_naming_the_row(tmp_path: Path, dog_path: str) -> None:
    (tmp_path / "outside.txt").write_text("SECRET {submission}")
    suite = per_sample_suite(tmp_path, dog_path)
    result = run_cli("validate", str(suite), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", env=JUDGE_ENV)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "dataset.jsonl:2" in result.stderr and "resolves outside the suite's folder" in result.stderr
    assert "SECRET" not in result.stdout + result.stderr


def test_rubric_and_rubric_path_on_one_row_is_a_problem(tmp_path: Path) -> None:
    suite = per_sample_suite(tmp_path)
    data = suite.parent / "dataset.jsonl"
    data.write_text(json.dumps({"input": "x", "rubric": "inline", "rubric_path": "rubrics/dog.txt"}) + "\n")
    result = run_cli("validate", str(suite), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", env=JUDGE_ENV)
    assert result.returncode == 2
    assert "dataset.jsonl:1: sample 'line-1': rubric_path: give rubric (text or a file) or rubric_path " \
           "(letta-evals), not both" in result.stderr


def test_letta_custom_files_use_the_stand_ins_even_with_letta_evals_installed(
        server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real letta-evals importable (here a fake one whose decorators mark nothing, as the real ones mark
    nothing of ours), its custom files were refused ('not decorated with @evals_cli.grader'); its helpers would
    read Letta messages, not our trajectory. The stand-ins take its place for those files."""
    import sys

    fake = tmp_path / "site" / "letta_evals"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("def grader(fn=None, **kw):\n    return fn if fn else (lambda f: f)\n"
                                      "extractor = reward_composer = grader\nclass GradeResult:\n    pass\n")
    (fake / "decorators.py").write_text("from letta_evals import grader, extractor, reward_composer\n")
    (fake / "models.py").write_text("from letta_evals import GradeResult\nclass Sample:\n    pass\n")
    for name in [n for n in sys.modules if n == "letta_evals" or n.startswith("letta_evals.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    import letta_evals  # the "installed" package, already imported by the user's own code

    assert not getattr(letta_evals, "__evals_stand_in__", False)
    server.script = ticket_agent(TICKETS)
    result = run_letta(server, LETTA / "tickets_custom.yaml", "tickets", tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Gate PASSED" in result.stdout
