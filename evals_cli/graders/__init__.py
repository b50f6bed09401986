"""Graders: the registry and base class (base), one module per kind (kinds/), and the helpers the kinds
share (judge calls, rubrics, scales, argument matching). Extractors and spec models live in
evals_cli.models.grader_specs."""
