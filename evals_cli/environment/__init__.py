"""Stateful mocked environments: the per-sample world, what tools' effects do to it, and checking its final
state. The declarations are pure data in evals_cli/models/environment.py."""
