"""A judge you can measure: a person labels a run's judged items (`labeller`, or the HTML report's buttons), the
judge's true-positive and true-negative rates against those labels correct its observed pass rate
(`calibrate`, `stats`), and two judge configurations are compared on the same labels (`compare`).

The modules: `items` (a finished run's judged items: per sample, per turn, per reply), `stats` (confusion counts,
kappa, the Rogan-Gladen correction, bootstrap intervals), `calibrate`, `compare`, `judges` (what run.json records
of each judge), `labeller` (the terminal UI), `render` (the terminal views), `figures` (how a calibrated judge's
figures are written, there and in a run's footer). The labels file itself is `evals_cli.labels`, beneath the
graders, since the model_judge grader reads it too.
"""
