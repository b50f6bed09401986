"""One module per grader kind (or per small family of kinds): each defines its spec model and its grader and
registers both with `GRADERS`.

Nothing imports these modules by name: `GRADERS` imports every module here the first time a kind is looked
up, and the suite's grader union (evals_cli/suite/spec.py) is built from what registered, so adding a kind is
this module and its test. Helpers shared by several kinds live one level up, in `evals_cli.graders`.
"""
