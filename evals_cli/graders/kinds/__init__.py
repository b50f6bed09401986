"""One module per grader kind (or per small family of kinds); each registers itself with `GRADERS`.

Nothing imports these modules by name: `GRADERS` imports every module here the first time a kind is looked
up. Helpers shared by several kinds live one level up, in `evals_cli.graders`.
"""
