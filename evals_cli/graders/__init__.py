"""Graders: the registry and base class (base), one module per kind (kinds/: each kind's spec model and its
implementation), and the helpers the kinds share (judge calls, rubrics, scales, argument matching). Extractors
and the spec parts every kind shares (GraderBase, shared field types) live in evals_cli.models.grader_specs."""
