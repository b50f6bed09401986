"""A corpus of malformed inputs: each case is a set of files (suite, dataset, rubric, ...) and the
fragments its error must contain. Every one must give exit 2, a message naming the file and the line or
field with the fix, and no traceback."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

GOOD_ROW = {"id": "a", "input": "hello", "ground_truth": "hi"}

SUITE = """\
name: corpus
dataset: data.jsonl
concurrency: 2
target:
  kind: openai_chat
  base_url: http://127.0.0.1:9/v1
  model: m
tools:
  read_file:
    description: Read a file
    parameters: {path: "File path"}
    returns: "x"
graders:
  answer:
    kind: tool
    function: contains
gate:
  kind: weighted_average
  value: 0.5
"""


@dataclass
class Case:
    name: str
    files: dict[str, str | bytes]
    expect: list[str]
    env: dict[str, str] = field(default_factory=dict)
    validate_args: tuple[str, ...] = ()  # what `evals validate` needs besides the suite to see the problem


def suite(old: str = "", new: str = "", extra: str = "") -> str:
    text = SUITE.replace(old, new) if old else SUITE
    assert not old or old in SUITE, old
    return text + extra


def data(*rows: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


OK = data(GOOD_ROW)

CASES = [
    # --- YAML itself -----------------------------------------------------------------------------------
    Case("yaml-syntax", {"suite.yaml": suite("concurrency: 2", "concurrency: [2"), "data.jsonl": OK},
         ["suite.yaml:", "YAML syntax error"]),
    Case("yaml-tab-indent", {"suite.yaml": suite("  model: m", "\tmodel: m"), "data.jsonl": OK},
         ["suite.yaml:", "YAML"]),
    Case("yaml-not-mapping", {"suite.yaml": "- just\n- a list\n", "data.jsonl": OK},
         ["suite.yaml", "expected a mapping"]),
    Case("yaml-empty", {"suite.yaml": "", "data.jsonl": OK}, ["suite.yaml", "expected a mapping"]),
    Case("yaml-non-utf8", {"suite.yaml": SUITE.encode() + b"description: caf\xe9\n", "data.jsonl": OK},
         ["suite.yaml:20", "UTF-8"]),
    Case("yaml-python-tag", {"suite.yaml": suite(extra="description: !!python/object/apply:os.system ['true']\n"),
                             "data.jsonl": OK}, ["suite.yaml:20", "YAML"]),
    Case("suite-missing", {"data.jsonl": OK}, ["suite.yaml", "not found"]),
    # --- keys and types -------------------------------------------------------------------------------
    Case("unknown-top-key", {"suite.yaml": suite(extra="concurency: 3\n"), "data.jsonl": OK},
         ["suite.yaml:20", "concurency", "did you mean 'concurrency'"]),
    Case("unknown-target-key", {"suite.yaml": suite("  model: m", "  model: m\n  temprature: 0"), "data.jsonl": OK},
         ["suite.yaml:8", "target.temprature", "did you mean 'temperature'"]),
    Case("unknown-grader-key", {"suite.yaml": suite("    function: contains", "    function: contains\n    extracter: x"),
                                "data.jsonl": OK}, ["suite.yaml:17", "graders.answer.extracter", "did you mean 'extractor'"]),
    Case("unknown-tool-key", {"suite.yaml": suite('    returns: "x"', '    retruns: "x"'), "data.jsonl": OK},
         ["suite.yaml:12", "tools.read_file.retruns", "did you mean 'returns'"]),
    Case("missing-name", {"suite.yaml": suite("name: corpus\n", ""), "data.jsonl": OK}, ["suite.yaml", "name", "missing"]),
    Case("missing-graders", {"suite.yaml": suite("graders:\n  answer:\n    kind: tool\n    function: contains\n", ""),
                             "data.jsonl": OK}, ["graders", "missing"]),
    Case("empty-graders", {"suite.yaml": suite("graders:\n  answer:\n    kind: tool\n    function: contains\n",
                                               "graders: {}\n"), "data.jsonl": OK}, ["suite.yaml:13", "graders"]),
    Case("concurrency-zero", {"suite.yaml": suite("concurrency: 2", "concurrency: 0"), "data.jsonl": OK},
         ["suite.yaml:3", "concurrency", "greater than or equal to 1"]),
    Case("concurrency-negative", {"suite.yaml": suite("concurrency: 2", "concurrency: -4"), "data.jsonl": OK},
         ["suite.yaml:3", "concurrency"]),
    Case("concurrency-string", {"suite.yaml": suite("concurrency: 2", "concurrency: many"), "data.jsonl": OK},
         ["suite.yaml:3", "concurrency", "integer"]),
    Case("max-steps-zero", {"suite.yaml": suite("  model: m", "  model: m\n  max_steps: 0"), "data.jsonl": OK},
         ["suite.yaml:8", "target.max_steps"]),
    Case("temperature-out-of-range", {"suite.yaml": suite("  model: m", "  model: m\n  temperature: 7"),
                                      "data.jsonl": OK}, ["suite.yaml:8", "target.temperature"]),
    Case("gate-op-unknown", {"suite.yaml": suite("  value: 0.5", "  value: 0.5\n  op: greater"), "data.jsonl": OK},
         ["suite.yaml:20", "gate.op"]),
    Case("gate-aggregation-unknown", {"suite.yaml": suite("  value: 0.5", "  value: 0.5\n  aggregation: mean"),
                                      "data.jsonl": OK}, ["suite.yaml:20", "gate.aggregation"]),
    Case("tools-not-mapping", {"suite.yaml": suite("tools:\n  read_file:\n    description: Read a file\n"
                                                   "    parameters: {path: \"File path\"}\n    returns: \"x\"\n",
                                                   "tools: [read_file]\n"), "data.jsonl": OK},
         ["suite.yaml:8", "tools", "dictionary"]),
    Case("tool-two-defaults", {"suite.yaml": suite('    returns: "x"', '    returns: "x"\n    error: "no"'),
                               "data.jsonl": OK}, ["suite.yaml:9", "tools.read_file", "only one of returns"]),
    # --- kinds ----------------------------------------------------------------------------------------
    Case("unknown-grader-kind", {"suite.yaml": suite("    kind: tool\n", "    kind: tools\n"), "data.jsonl": OK},
         ["suite.yaml:15", "graders.answer", "unknown kind 'tools'", "did you mean 'tool_args'"]),
    Case("missing-grader-kind", {"suite.yaml": suite("    kind: tool\n", ""), "data.jsonl": OK},
         ["suite.yaml:14", "graders.answer.kind", "missing 'kind'"]),
    Case("unknown-target-kind", {"suite.yaml": suite("  kind: openai_chat", "  kind: letta"), "data.jsonl": OK},
         ["suite.yaml:5", "target.kind"]),
    Case("unknown-gate-kind", {"suite.yaml": suite("  kind: weighted_average", "  kind: weighted"), "data.jsonl": OK},
         ["suite.yaml:18", "gate.kind"]),
    Case("unknown-extractor", {"suite.yaml": suite("    function: contains", "    function: contains\n    extractor: last_message"),
                               "data.jsonl": OK}, ["suite.yaml:1", "graders.answer", "unknown extractor 'last_message'"]),
    Case("extractor-missing-option", {"suite.yaml": suite("    function: contains",
                                                          "    function: contains\n    extractor: pattern"),
                                      "data.jsonl": OK}, ["graders.answer", "needs extractor_config.pattern"]),
    Case("unknown-function", {"suite.yaml": suite("function: contains", "function: containz"), "data.jsonl": OK},
         ["graders.answer", "unknown function 'containz'", "did you mean 'contains'"]),
    Case("weights-unknown-grader", {"suite.yaml": suite("  value: 0.5", "  value: 0.5\n  weights: {answr: 1}"),
                                    "data.jsonl": OK}, ["suite.yaml:20", "gate.weights", "did you mean 'answer'"]),
    # --- regexes, rubrics, custom code ----------------------------------------------------------------
    Case("invalid-extractor-regex", {"suite.yaml": suite("    function: contains",
                                                         "    function: contains\n    extractor: pattern\n"
                                                         "    extractor_config: {pattern: '(unclosed'}"),
                                     "data.jsonl": OK}, ["graders.answer", "not a valid regex"]),
    Case("invalid-ground-truth-regex", {"suite.yaml": suite("function: contains", "function: regex_match"),
                                        "data.jsonl": data({"id": "r", "input": "x", "ground_truth": "([a-z"})},
         ["data.jsonl:1", "sample 'r'", "ground_truth", "not a valid regex"]),
    Case("rubric-missing-file", {"suite.yaml": suite("graders:\n", "graders:\n  judge:\n    kind: model_judge\n"
                                                     "    rubric: nope.j2\n"), "data.jsonl": OK},
         ["graders.judge", "rubric file nope.j2 cannot be read", "relative to the suite file"]),
    Case("rubric-syntax-error", {"suite.yaml": suite("graders:\n", "graders:\n  judge:\n    kind: model_judge\n"
                                                     "    rubric: r.j2\n"), "r.j2": "Grade {{ submission }\n",
                                 "data.jsonl": OK}, ["graders.judge", "r.j2", "line 1", "syntax error"]),
    Case("rubric-undefined-variable", {"suite.yaml": suite("graders:\n", "graders:\n  judge:\n    kind: model_judge\n"
                                                           "    rubric: r.j2\n"), "r.j2": "{{ submission }} {{ persona }}",
                                       "data.jsonl": OK}, ["graders.judge", "'persona' is undefined", "samples: a",
                                                           "available variables"]),
    Case("rubric-and-prompt", {"suite.yaml": suite("graders:\n", "graders:\n  judge:\n    kind: model_judge\n"
                                                   "    rubric: r.j2\n    prompt: inline\n"), "r.j2": "x",
                               "data.jsonl": OK}, ["suite.yaml:14", "graders.judge", "exactly one of 'rubric'"]),
    Case("custom-grader-missing-file", {"suite.yaml": suite("function: contains", "function: nope.py:f"),
                                        "data.jsonl": OK}, ["graders.answer", "nope.py not found"]),
    Case("custom-grader-bad-signature", {"suite.yaml": suite("function: contains", "function: g.py:f"),
                                         "g.py": "from evals_cli import grader\n@grader\ndef f(x):\n    return 1\n",
                                         "data.jsonl": OK}, ["graders.answer", "expected parameters (sample, submission)"]),
    Case("custom-grader-undecorated", {"suite.yaml": suite("function: contains", "function: g.py:f"),
                                       "g.py": "def f(sample, submission):\n    return 1\n", "data.jsonl": OK},
         ["graders.answer", "not decorated with @evals_cli.grader"]),
    Case("custom-grader-import-error", {"suite.yaml": suite("function: contains", "function: g.py:f"),
                                        "g.py": "import not_a_module_anywhere\n", "data.jsonl": OK},
         ["graders.answer", "g.py: importing failed", "ModuleNotFoundError"],
         validate_args=("--import-code",)),  # validate runs the suite's code only when asked
    Case("system-prompt-file-missing", {"suite.yaml": suite("  model: m", "  model: m\n  system_prompt_file: p.txt"),
                                        "data.jsonl": OK}, ["system_prompt_file", "p.txt not found"]),
    # --- environment ----------------------------------------------------------------------------------
    Case("env-missing-no-default", {"suite.yaml": suite("  model: m", "  model: ${CORPUS_MODEL_NOT_SET}"),
                                    "data.jsonl": OK}, ["suite.yaml:7", "target.model", "CORPUS_MODEL_NOT_SET is not set"]),
    Case("no-model-anywhere", {"suite.yaml": suite("  model: m\n", ""), "data.jsonl": OK},
         ["no model set", "EVAL_AGENT_MODEL"]),
    # --- datasets -------------------------------------------------------------------------------------
    Case("dataset-missing", {"suite.yaml": suite("dataset: data.jsonl", "dataset: nowhere.jsonl")},
         ["nowhere.jsonl", "dataset not found"]),
    Case("dataset-empty", {"suite.yaml": SUITE, "data.jsonl": ""}, ["data.jsonl", "no samples"]),
    Case("dataset-blank-lines-only", {"suite.yaml": SUITE, "data.jsonl": "\n\n  \n"}, ["data.jsonl", "no samples"]),
    Case("dataset-invalid-json", {"suite.yaml": SUITE, "data.jsonl": data(GOOD_ROW, "{'id': 'b'}")},
         ["data.jsonl:2", "invalid JSON"]),
    Case("dataset-pretty-printed", {"suite.yaml": SUITE, "data.jsonl": json.dumps(GOOD_ROW, indent=2) + "\n"},
         ["data.jsonl:1", "invalid JSON", "one complete JSON object per line"]),
    Case("dataset-array-of-strings", {"suite.yaml": SUITE, "data.jsonl": '["hello", "world"]\n'},
         ["data.jsonl: item 1", "expected a JSON object"]),
    Case("dataset-non-utf8", {"suite.yaml": SUITE, "data.jsonl": b'{"id": "a", "input": "caf\xe9"}\n'},
         ["data.jsonl:1", "UTF-8"]),
    Case("dataset-row-not-object", {"suite.yaml": SUITE, "data.jsonl": data(GOOD_ROW, "42")},
         ["data.jsonl:2", "expected a JSON object"]),
    Case("dataset-unknown-field", {"suite.yaml": SUITE, "data.jsonl": data({"id": "b", "input": "x", "groundtruth": "y"})},
         ["data.jsonl:1", "sample 'b'", "groundtruth", "did you mean 'ground_truth'"]),
    Case("dataset-wrong-type", {"suite.yaml": SUITE, "data.jsonl": data({"id": "b", "input": 42})},
         ["data.jsonl:1", "sample 'b'", "input"]),
    Case("dataset-no-input", {"suite.yaml": SUITE, "data.jsonl": data({"id": "b", "ground_truth": "x"})},
         ["data.jsonl:1", "sample 'b'", "needs 'input'"]),
    Case("dataset-per-turn-mismatch", {"suite.yaml": SUITE,
                                       "data.jsonl": data({"id": "t", "input": ["a", "b"], "ground_truth": ["x", "y", "z"]})},
         ["data.jsonl:1", "sample 't'", "'input' has 2 messages but 'ground_truth' has 3"]),
    Case("dataset-duplicate-ids", {"suite.yaml": SUITE, "data.jsonl": data(GOOD_ROW, {"id": "b", "input": "x"}, GOOD_ROW)},
         ["data.jsonl", "duplicate sample id 'a'", "rows 1, 3"]),
    Case("dataset-negative-max-steps", {"suite.yaml": SUITE, "data.jsonl": data({"id": "b", "input": "x", "max_steps": -1})},
         ["data.jsonl:1", "sample 'b'", "max_steps"]),
    Case("dataset-bad-tool-override", {"suite.yaml": SUITE,
                                       "data.jsonl": data({"id": "b", "input": "x", "tools": {"t": {"retuns": "y"}}})},
         ["data.jsonl:1", "sample 'b'", "tools.t.retuns", "did you mean 'returns'"]),
    Case("dataset-10mb-line", {"suite.yaml": SUITE, "data.jsonl": data(GOOD_ROW) + '{"id": "big", "input": "' +
                               "x" * (10 * 1024 * 1024) + '", "oops": 1}\n'},
         ["data.jsonl:2", "sample 'big'", "oops"]),
    Case("dataset-is-directory", {"suite.yaml": suite("dataset: data.jsonl", "dataset: ."), "data.jsonl": OK},
         ["dataset not found"]),
    # --- non-finite numbers (issue 11, item 9) ----------------------------------------------------------
    Case("gate-value-nan", {"suite.yaml": suite("  value: 0.5", "  value: .nan"), "data.jsonl": OK},
         ["suite.yaml:19", "gate.value", "NaN and infinity are not allowed"]),
    Case("gate-weight-inf", {"suite.yaml": suite("  value: 0.5", "  value: 0.5\n  weights: {answer: .inf}"),
                             "data.jsonl": OK}, ["suite.yaml:20", "gate.weights.answer", "NaN and infinity"]),
    Case("gate-pass-value-nan", {"suite.yaml": suite("  value: 0.5", "  value: 0.5\n  pass_value: .NaN"),
                                 "data.jsonl": OK}, ["suite.yaml:20", "gate.pass_value", "NaN and infinity"]),
    Case("tool-returns-inf", {"suite.yaml": suite('    returns: "x"', "    returns: -.inf"), "data.jsonl": OK},
         ["suite.yaml:12", "tools.read_file.returns", "NaN and infinity"]),
    Case("env-value-nan", {"suite.yaml": suite("  value: 0.5", "  value: ${CORPUS_NAN_VALUE}"), "data.jsonl": OK},
         ["suite.yaml:19", "gate.value", "finite"], env={"CORPUS_NAN_VALUE": "nan"}),
    # --- rows that once vanished or crashed the reader (issue 11 item 7, issue 12 items 10, 11) ----------
    Case("dataset-lone-surrogate", {"suite.yaml": SUITE, "data.jsonl": data(GOOD_ROW, '{"id": "s", "input": "\\ud800"}')},
         ["data.jsonl:2", "input", "lone UTF-16 surrogate"]),
    Case("dataset-nan-value", {"suite.yaml": SUITE, "data.jsonl": data('{"id": "n", "input": "x", "metadata": {"w": NaN}}')},
         ["data.jsonl:1", "NaN is not a JSON value"]),
    Case("dataset-null-id", {"suite.yaml": SUITE, "data.jsonl": data(GOOD_ROW, {"id": None, "input": "x"})},
         ["data.jsonl:2", "id: is null"]),
    Case("dataset-nan-id", {"suite.yaml": SUITE, "data.jsonl": data('{"id": NaN, "input": "x"}')},
         ["data.jsonl:1", "NaN is not a JSON value"]),
    Case("dataset-5000-digit-id", {"suite.yaml": SUITE, "data.jsonl": data('{"id": ' + "9" * 5000 + ', "input": "x"}')},
         ["data.jsonl:1", "more than 4300 digits", "write long ids as strings"]),
    Case("dataset-nested-200000-deep", {"suite.yaml": SUITE, "data.jsonl": data(
        '{"id": "d", "input": "x", "metadata": ' + "[" * 200_000 + "]" * 200_000 + "}")},
         ["data.jsonl:1", "nested too deeply"]),
    Case("dataset-2mb-id", {"suite.yaml": SUITE, "data.jsonl": data({"id": "i" * 2_000_000, "input": "x", "oops": 1})},
         ["data.jsonl:1", "oops", "(2000002 characters)"]),
    Case("dataset-bad-role", {"suite.yaml": SUITE, "data.jsonl": data(
        {"id": "r", "input": "x", "messages": [{"role": "bot", "content": "hi"}]})},
         ["data.jsonl:1", "sample 'r'", "messages.0.role", "'system', 'user', 'assistant' or 'tool'"]),
    Case("dataset-bad-tool-name", {"suite.yaml": SUITE, "data.jsonl": data(
        {"id": "t", "input": "x", "tools": {"read file": {"returns": "x"}}})},
         ["data.jsonl:1", "sample 't'", "tool name 'read file'"]),
    # --- mocked tools (issue 11 item 3, issue 12 item 11) -------------------------------------------------
    Case("tool-no-return", {"suite.yaml": suite('    returns: "x"\n', ""), "data.jsonl": OK},
         ["tools.read_file", "no return configured", 'returns: ""', "samples a"]),
    Case("dataset-tool-no-return", {"suite.yaml": SUITE, "data.jsonl": data(
        {"id": "t", "input": "x", "tools": {"read_file": {"description": "d"}}})},
         ["data.jsonl:1", "sample 't'", "'read_file' has no return configured"]),
    Case("array-row-tool-no-return", {"suite.yaml": suite("dataset: data.jsonl", "dataset: data.json"),
                                      "data.json": json.dumps([{"id": "t", "input": "x",
                                                                "tools": {"get_weather": {"description": "W"}}}])},
         ["data.json: item 1", "'get_weather' has no return configured"]),
    Case("tool-name-space", {"suite.yaml": suite("  read_file:", "  read file:"), "data.jsonl": OK},
         ["suite.yaml:9", "tools.read file", "characters endpoints reject"]),
    Case("tool-name-too-long", {"suite.yaml": suite("  read_file:", "  " + "r" * 65 + ":"), "data.jsonl": OK},
         ["suite.yaml:9", "65 characters; endpoints accept at most 64"]),
    Case("tool-name-bad-character", {"suite.yaml": suite("  read_file:", "  read.file:"), "data.jsonl": OK},
         ["suite.yaml:9", "('.')"]),
    Case("tool-schema-bad-type", {"suite.yaml": suite('parameters: {path: "File path"}', "parameters: {type: strin}"),
                                  "data.jsonl": OK}, ["suite.yaml:9", "tools.read_file", "'strin' is not a JSON Schema type"]),
    Case("tool-schema-invalid", {"suite.yaml": suite('parameters: {path: "File path"}',
                                                     "parameters: {type: object, properties: {path: {type: 3}}}"),
                                 "data.jsonl": OK}, ["suite.yaml:9", "parameters.properties.path.type: not a valid JSON Schema"]),
    Case("env-unterminated", {"suite.yaml": suite("  model: m", "  model: ${CORPUS_MODEL"), "data.jsonl": OK},
         ["suite.yaml:7", "target.model", "'${CORPUS_MODEL' is not a variable reference"]),
    # --- YAML bounds (issue 12, items 6 and 10) -----------------------------------------------------------
    Case("yaml-alias-bomb", {"suite.yaml": suite(extra='a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))),
                             "data.jsonl": OK}, ["suite.yaml:", "once aliases are expanded (an alias bomb"]),
    Case("yaml-duplicate-key", {"suite.yaml": suite("concurrency: 2\n", "concurrency: 2\nconcurrency: 3\n"), "data.jsonl": OK},
         ["suite.yaml:4", "key 'concurrency' is written twice (lines 3 and 4)"]),
    Case("yaml-5000-deep", {"suite.yaml": suite(extra="description: " + "[" * 5000 + "]" * 5000 + "\n"), "data.jsonl": OK},
         ["suite.yaml:20", "nested more than 100 levels"]),
    Case("yaml-5000-digit-number", {"suite.yaml": suite("concurrency: 2", "concurrency: " + "9" * 5000), "data.jsonl": OK},
         ["suite.yaml:3", "more than 4300 digits", "quote it"]),
    Case("gate-logical-300-deep", {"suite.yaml": SUITE.split("gate:")[0] + "gate: " + "{kind: logical, gates: [" * 300
                                   + "{kind: weighted_average, value: 0.5}" + "]}" * 300 + "\n", "data.jsonl": OK},
         ["suite.yaml:17", "nested more than 100 levels"]),
]
