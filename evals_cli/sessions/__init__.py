"""Multi-agent sessions: evaluate recorded sessions (no live agents) at session, turn and agent level.

Kept import-free on purpose: `evals_cli.models.specs` imports `evals_cli.sessions.spec` for its target union,
and anything imported here would run first and could close an import cycle. Entry points:
`evals_cli.sessions.cli` (analyze_command, run_sessions_suite), `evals_cli.sessions.analysis` (one session).
"""
