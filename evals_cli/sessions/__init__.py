"""Multi-agent sessions: evaluate recorded sessions (no live agents) at session, turn and agent level.

A sibling pipeline of the live one, with the same shape: `suite.py` (the document: `SessionsSuiteSpec`,
`load_sessions_suite`), `prepare.py` (`PreparedSessions`: everything checked before a judge call; `evals
validate` collects its problems), `runner.py` (`SessionsRun`: stream, write, summarise), `cli.py` (printing for
`evals analyze` and `evals run`). It shares `RunOptions`, `RunOutcome`, the summary base and the JSONL reader
with the live pipeline; `evals_cli.run` dispatches to it by the suite's kind. Kept import-free on purpose.
"""
