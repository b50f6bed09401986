"""Stateful mocked environments: the per-sample world, what tools' effects do to it, and what validate checks of
them. The declarations are pure data in evals_cli/models/ (environment.py the world, effects.py the effects,
expected_state.py the state it should be left in); the final state is checked by the
graders (evals_cli/graders/expectations.py), gold actions are replayed by the tools (evals_cli/tools/gold.py)."""
