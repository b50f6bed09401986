"""Calibration as a consumer of a finished run: the judges whose suite names `calibration:` labels get their pass
rate over the run's judged items, read back from the results file (resumed ones included), corrected for the
errors the labels measured. It reads finished grades only; the run itself knows nothing of labels."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals_cli.calibration.calibrate import calibrated
from evals_cli.calibration.items import Unjudged, judged_items
from evals_cli.calibration.judges import judge_records
from evals_cli.errors import ConfigError
from evals_cli.models.calibration import JudgeCalibration
from evals_cli.output.files import read_results


def calibrate_finished_run(graders: Mapping[str, Any], gate: Any,
                           results: Path) -> tuple[dict[str, JudgeCalibration], str | None]:
    """(judge name -> calibrated pass rate, why there is none when the results cannot be read back). Nothing for a
    suite without calibration labels."""
    wanted = {name: found for name, grader in graders.items()
              if (found := getattr(grader, "calibration", None)) is not None}
    if not wanted:
        return {}, None
    records = judge_records(graders, gate)
    unjudged = Unjudged()
    try:
        items = judged_items(read_results(results), records, None, unjudged=unjudged)
    except (OSError, ConfigError) as exc:
        return {}, f"no calibrated pass rate: cannot read back {results} ({exc})"
    return {name: calibrated(name, records[name], labels, path, items, unjudged.no_answer.get(name, 0))
            for name, (path, labels) in wanted.items()}, None
