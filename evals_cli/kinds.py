"""The registries of grader kinds and target kinds, on their own so that what reads them stands apart from what
they hold.

The suite's `graders:` and `target:` unions are built from these registries (evals_cli/suite/spec.py), so the
suite layer needs the registries but not the grader and target machinery the kinds build on (graders/base.py,
targets/base.py, which bind the same registries under a typed name for the kinds that register with them).
Registering and looking up work as for every family (evals_cli/registry.py): the first lookup discovers the kinds.
"""

from __future__ import annotations

from typing import Any

from evals_cli.registry import Registry

GRADERS: Registry[Any] = Registry("grader", "evals_cli.graders.kinds")
"""Every grader kind: `impl` a `Grader` subclass (graders/base.py), `spec` its options model."""

TARGETS: Registry[Any] = Registry("target", "evals_cli.targets")
"""Every target kind: `impl` a `Target` subclass (targets/base.py), `spec` its options model."""
