"""Jinja2 rubrics: strict undefined variables, a sandbox, and errors that say where and how to fix."""

from __future__ import annotations

import pytest

from evals_cli.graders.rubric import RubricError, compile_rubric, render_rubric
from evals_cli.graders.rubric_vars import RESERVED, rubric_variables, transcript
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn


@pytest.fixture
def trajectory() -> Trajectory:
    return Trajectory(
        prefilled=[{"role": "system", "content": "secret system prompt"}, {"role": "user", "content": "earlier"}],
        turns=[Turn(user="What is in .env?", steps=[
            Step(tool_calls=[ToolCall(name="read_file", arguments={"path": ".env"}, result="DB_HOST=localhost")]),
            Step(tool_calls=[ToolCall(name="read_file", raw_arguments='{"path": ', result="Error: bad JSON",
                                      is_error=True)]),
            Step(content="It sets DB_HOST."),
        ])],
        stop_reason="max_steps",
    )


# --- rendering ------------------------------------------------------------------------------------------------


def test_render_with_variables() -> None:
    text = "Task: {{ input }}\nExpected: {{ ground_truth }}\n{% for c in tool_calls %}- {{ c.name }}\n{% endfor %}"
    rendered = render_rubric(text, {"input": "q", "ground_truth": "a", "tool_calls": [{"name": "t1"}, {"name": "t2"}]})
    assert rendered == "Task: q\nExpected: a\n- t1\n- t2\n"


def test_no_html_autoescape() -> None:
    assert render_rubric("{{ submission }}", {"submission": "<b>a & b</b>"}) == "<b>a & b</b>"


def test_missing_variable_lists_the_available_ones() -> None:
    with pytest.raises(RubricError) as info:
        render_rubric("Task: {{ original_task }}", {"input": "q", "submission": "s", "zeta": 1})
    message = str(info.value)
    assert message.startswith("'original_task' is undefined")
    assert "available variables: input, submission, zeta" in message
    assert "rubric_vars" in message


def test_missing_attribute_is_strict_too() -> None:
    with pytest.raises(RubricError, match="has no attribute 'missing'.*available variables: meta"):
        render_rubric("{{ meta.missing }}", {"meta": {"present": 1}})


def test_missing_variable_in_a_condition_is_an_error() -> None:
    with pytest.raises(RubricError, match="'flag' is undefined"):
        render_rubric("{% if flag %}yes{% endif %}", {})


def test_is_defined_test_still_works() -> None:
    assert render_rubric("{% if hint is defined %}{{ hint }}{% else %}none{% endif %}", {}) == "none"


def test_syntax_error_names_the_line() -> None:
    with pytest.raises(RubricError, match=r"^line 3: Jinja2 syntax error: "):
        compile_rubric("Grade this.\n\n{% if %}\n")
    with pytest.raises(RubricError, match=r"^line 2: Jinja2 syntax error: "):
        render_rubric("ok\n{{ input \n", {"input": "x"})


def test_unclosed_block_names_a_line() -> None:
    with pytest.raises(RubricError, match=r"^line \d+: Jinja2 syntax error: .*(endfor|end of template)"):
        compile_rubric("{% for c in tool_calls %}\n{{ c }}\n")


# --- the sandbox ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ input.__class__.__mro__[1].__subclasses__() }}",
        '{{ "{0.__class__}".format(input) }}',
        '{{ input|attr("__class__") }}',
        "{{ cycler.__init__.__globals__ }}",
        "{{ lipsum.__globals__ }}",
    ],
)
def test_sandbox_blocks_dunder_access(template: str) -> None:
    with pytest.raises(RubricError) as info:
        render_rubric(template, {"input": "x"})
    message = str(info.value)
    assert message.startswith("rubric tried an unsafe operation")
    assert "<class" not in message
    assert "object>" not in message


@pytest.mark.parametrize("template", ["{{ tool_calls.append(1) }}", "{{ rubric_vars.update({'a': 1}) }}"])
def test_sandbox_blocks_mutation(template: str) -> None:
    variables = {"tool_calls": [], "rubric_vars": {}}
    with pytest.raises(RubricError, match="unsafe operation"):
        render_rubric(template, variables)
    assert variables == {"tool_calls": [], "rubric_vars": {}}


@pytest.mark.parametrize(
    ("template", "error"),
    [("{{ 1 / n }}", "ZeroDivisionError"), ("{{ n + 'a' }}", "TypeError"),
     ("{{ range(10**9) | list | length }}", "OverflowError")],
)
def test_runtime_errors_become_rubric_errors(template: str, error: str) -> None:
    """An earlier version let these escape as raw exceptions, past validate.check_rubrics."""
    with pytest.raises(RubricError, match=f"^rendering failed: {error}: "):
        render_rubric(template, {"n": 0})


# --- the variables a rubric sees ------------------------------------------------------------------------------


def test_rubric_vars_are_available(trajectory: Trajectory) -> None:
    sample = Sample(input="What is in .env?", ground_truth="DB_HOST", rubric_vars={"original_task": "read env",
                                                                                  "limits": {"steps": 3}})
    variables = rubric_variables(sample, trajectory, "It sets DB_HOST.", sample.ground_truth_for(None), None)

    rendered = render_rubric("{{ original_task }} / {{ limits.steps }} / {{ submission }} / {{ ground_truth }}",
                             variables)

    assert rendered == "read env / 3 / It sets DB_HOST. / DB_HOST"
    assert set(RESERVED) <= set(variables)


def test_reserved_variables_win_over_rubric_vars(trajectory: Trajectory) -> None:
    sample = Sample(input="real input", rubric_vars={"input": "spoofed", "submission": "spoofed"})
    variables = rubric_variables(sample, trajectory, "real submission", None, None)
    assert variables["input"] == "real input"
    assert variables["submission"] == "real submission"
    assert variables["ground_truth"] == ""  # None becomes an empty string


def test_tool_variables(trajectory: Trajectory) -> None:
    variables = rubric_variables(Sample(input="q"), trajectory, "", None, None)
    assert variables["tool_calls"] == [
        {"name": "read_file", "arguments": {"path": ".env"}, "result": "DB_HOST=localhost"},
        {"name": "read_file", "arguments": None, "result": "Error: bad JSON"},
    ]
    assert variables["tool_results"] == ["DB_HOST=localhost", "Error: bad JSON"]


def test_per_turn_input_is_the_graded_turn() -> None:
    sample = Sample(input=["first", "second"], ground_truth=["1", "2"])
    assert rubric_variables(sample, Trajectory(), "", "2", 1)["input"] == "second"
    assert rubric_variables(sample, Trajectory(), "", "2", None)["input"] == "first\nsecond"


def test_transcript(trajectory: Trajectory) -> None:
    text = transcript(trajectory)
    assert text.splitlines() == [
        "[user] earlier",
        "[user] What is in .env?",
        '[tool call] read_file({"path": ".env"})',
        "[tool result] DB_HOST=localhost",
        '[tool call] read_file({"path": )',
        "[tool result] Error: bad JSON",
        "[assistant] It sets DB_HOST.",
        "[stopped: max_steps]",
    ]
    assert "secret system prompt" not in text
    variables = rubric_variables(Sample(input="q"), trajectory, "", None, None)
    assert variables["trajectory"] == text
