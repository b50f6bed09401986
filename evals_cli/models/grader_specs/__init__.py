"""What every grader spec shares, as pure data: `GraderBase` (the options every kind has, with its extractor
check), the field types several kinds use (`fields`), the extractors (`extractors`) and a judge scale's
labelled choices (`judge.Choice`).

A kind's own spec lives in its module under `evals_cli.graders.kinds`, next to its implementation, and
registers with it (`@GRADERS.register("tool_order", spec=ToolOrderSpec)`). The suite's grader union is built
from that registry one layer up (`evals_cli.suite.spec`), so nothing here lists the kinds and models never
import graders.
"""

from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.judge import Choice

__all__ = ["Choice", "GraderBase"]
