"""`kind: choice`: a multiple-choice row answered with the right option (inspect_ai's `choice()` scorer with its
`multiple_choice` solver).

The row gives its options (`choices: [...]`, 2 to 26) and the letter of the correct one (`ground_truth: "B"`);
its `input` is the question, one message. The suite's choice graders have the options shown to the agent after
the question, lettered `A) ...`, and with `shuffle: true` in an order drawn for each (sample id, repeat), the
ground-truth letter following its option (evals_cli/graders/choices.py, which also says how an answer's choice is
read: its letter in the forms inspect reads and a few more, or the option's text). A row without choices, or
without a ground truth, has nothing to check (n/a); a row whose options cannot be shown or whose ground truth names
no option is refused before the run (exit 2)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli.graders.answer_text import normalize
from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.choices import LETTERS, chosen, letter, letter_index
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import RECORDED_CUT_OFF, Grade, ending_without_answer
from evals_cli.models.sample import Sample


class ChoiceSpec(GraderBase):
    """The option the answer chose (by its letter or its text) is the one the row's ground_truth letter names;
    binary."""

    kind: Literal["choice"] = "choice"
    shuffle: bool = Field(default=False, strict=True, description="Show the options in an order drawn for each "
                          "(sample id, repeat), the same in every run; the ground-truth letter follows its option.")


def row_problems(sample: Sample) -> list[str]:
    """Why a row's options cannot be shown, or its ground truth names none of them (the field named)."""
    choices = sample.choices
    if not choices:
        return []
    problems = []
    if not isinstance(sample.input, str) or sample.user is not None:
        problems.append("choices: are shown after the row's input, which must be one message (a string), with no "
                        "simulated user (user:); write the question as input: \"...\"")
    blank = [i for i, choice in enumerate(choices) if not choice.strip()]
    if blank:
        problems.append(f"choices: option {letter(blank[0])} is empty; give every option its text")
    texts = [normalize(choice) for choice in choices]
    twice = sorted({letter(i) for i, text in enumerate(texts) if text and texts.count(text) > 1})
    if twice:
        problems.append(f"choices: options {', '.join(twice)} read the same (case, punctuation and articles "
                        "aside), so an answer naming one names both; make them differ")
    truth = sample.ground_truth
    if isinstance(truth, list):
        problems.append("ground_truth: give the letter of the one correct option (a string such as \"B\"), not a "
                        "list")
    elif truth is not None and truth.strip() and letter_index(truth, len(choices)) is None:
        last = LETTERS[len(choices) - 1]
        named = [letter(i) for i, choice in enumerate(choices) if normalize(choice) == normalize(truth)]
        hint = f" ({truth!r} is option {named[0]})" if named else ""
        problems.append(f"ground_truth: {truth!r} is not the letter of an option (A to {last}); write the letter "
                        f"of the correct option{hint}")
    return problems


@GRADERS.register("choice", spec=ChoiceSpec)
class ChoiceGrader(Grader[ChoiceSpec]):
    """1 when the answer chose the correct option, 0 when it chose another, several, or none it could be read as
    choosing (binary); n/a without choices or a ground truth."""

    def check_sample(self, sample: Sample) -> list[str]:
        return [f"sample {sample.id!r}: {problem} (read by grader {self.name})" for problem in row_problems(sample)]

    async def grade(self, ctx: GradeContext) -> Grade:
        choices = ctx.sample.choices
        if not choices:
            return Grade.not_applicable("the row has no choices: nothing to choose from")
        truth = ctx.ground_truth
        if truth is None or (isinstance(truth, str) and not truth.strip()):
            return Grade.not_applicable("no ground truth: no correct option to check the choice against")
        correct = letter_index(truth, len(choices))
        if correct is None:  # refused before the run (check_sample); reached only by a caller that skipped it
            return Grade.failed("; ".join(row_problems(ctx.sample)) or f"ground_truth {truth!r} names no option")
        submission = await ctx.asubmission(self.spec.extractor, self.spec.extractor_config)
        cut = ending_without_answer(self.spec.extractor, ctx.view.stop_reason, RECORDED_CUT_OFF)
        if cut is not None:
            return Grade(score=0.0, rationale=f"no answer: {cut}", submission=submission)
        pick = chosen(submission, choices)
        right = f"{letter(correct)}) {choices[correct][:60]}"
        metadata = {"chosen": letter(pick.index) if pick.index is not None else None, "correct": letter(correct),
                    "read_as": pick.how or None, "shuffled": self.spec.shuffle}
        if pick.index is None:
            said = (f"named {', '.join(pick.letters)}, no single option of A to {LETTERS[len(choices) - 1]}"
                    if pick.letters else "chose no option (no letter of one, nor its text)")
            return Grade(score=0.0, rationale=f"{said}; the answer is {right}", submission=submission,
                         metadata=metadata)
        if pick.index == correct:
            return Grade(score=1.0, rationale=f"chose {right} (read from its {pick.how}): correct",
                         submission=submission, metadata=metadata)
        wrong = f"{letter(pick.index)}) {choices[pick.index][:60]}"
        return Grade(score=0.0, rationale=f"chose {wrong} (read from its {pick.how}); the answer is {right}",
                     submission=submission, metadata=metadata)
