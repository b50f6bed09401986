"""The task a row gives (the tutorial's `original_task`, `task`, `goal`, in rubric_vars or metadata) reaches the
built-in rubrics: a judge that never sees the task grades the agent against the wrong question."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evals_cli import load_suite, run_suite
from evals_cli.graders.rubric import load_rubric, render_rubric
from evals_cli.graders.rubric_vars import rubric_variables
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory
from evals_cli.runner import RunOptions
from tests.helpers import read_jsonl, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text


def unfenced(text: str) -> str:
    """A judge message as the judge reads it once the data fence around each quoted value is gone."""
    return re.sub(r"</?data-[0-9a-f]{10}>", "", text)


def rendered(sample: Sample, name: str = "task_completion") -> str:
    text_ = load_rubric(f"builtin:{name}", None, Path("."))
    return render_rubric(text_, rubric_variables(sample, Trajectory(), "version 1.2.0", sample.ground_truth, None))


@pytest.mark.parametrize("name", ["task_completion", "needless_work"])
@pytest.mark.parametrize(("where", "key"), [("rubric_vars", "original_task"), ("rubric_vars", "originalTask"),
                                            ("rubric_vars", "task"), ("rubric_vars", "goal"),
                                            ("metadata", "original_task"), ("metadata", "task")])
def test_every_form_of_the_task_reaches_the_builtin_rubrics(name: str, where: str, key: str) -> None:
    sample = Sample(input="thanks, go on", **{where: {key: "report the project's version"}})
    body = rendered(sample, name)
    assert "Task: report the project's version" in body
    assert "Latest user message: thanks, go on" in body


def test_without_a_task_the_users_message_is_the_task() -> None:
    body = rendered(Sample(input="What version is the project?"))
    assert "Task: What version is the project?" in body and "Latest user message" not in body


def test_a_rubric_can_still_name_its_own_task() -> None:
    sample = Sample(input="go on", rubric_vars={"task": "mine", "original_task": "theirs"})
    assert render_rubric("{{ task }}", rubric_variables(sample, Trajectory(), "", None, None)) == "mine"


def test_the_tutorials_original_task_reaches_the_judge(server: ScriptedServer, tmp_path: Path) -> None:
    """A tutorial JSON-array row, mid-conversation: its last user message is not the task."""
    item = {"data": {"messages": [{"role": "user", "content": "Hi"},
                                  {"role": "assistant", "content": "Hello! What do you need?"},
                                  {"role": "user", "content": "ok, go ahead"}]},
            "target": {"original_task": "Find the project's version in pyproject.toml"}}
    (tmp_path / "tutorial.json").write_text(json.dumps([item]), encoding="utf-8")
    server.script = agent_script({"": [text("The version is 1.2.0.")]},
                                 judge=lambda body: text(json.dumps({"reason": "ok", "score": 9})))
    path = write_suite(tmp_path, [], base_url=server.url, dataset="tutorial.json", gate={"value": 0.5},
                       graders={"judge": {"kind": "model_judge", "rubric": "builtin:task_completion"}})
    run_suite(load_suite(path), RunOptions(output=tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["judge"]["score"] == pytest.approx(0.9)
    sent: Any = unfenced(server.judge_requests()[0]["body"]["messages"][1]["content"])
    assert "Task: Find the project's version in pyproject.toml" in sent
    assert "Latest user message: ok, go ahead" in sent
