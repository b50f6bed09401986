"""The JSON Schemas shipped with the package, generated from the pydantic models so they cannot drift:
`session.schema.json` (the input: one session, or a list of them; each JSONL line is one session) and
`analysis.schema.json` (one session's analysis). A test fails when a shipped file differs from the generated one;
regenerate with `python -m evals_cli.sessions.schema`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.results import SessionAnalysis

HERE = Path(__file__).resolve().parent
SESSION_SCHEMA = HERE / "session.schema.json"
ANALYSIS_SCHEMA = HERE / "analysis.schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def session_schema() -> dict[str, Any]:
    schema = TypeAdapter(AgentSession | list[AgentSession]).json_schema(mode="validation")
    return {"$schema": DRAFT, "title": "evals-cli recorded multi-agent session(s)",
            "description": "A session file: one session, or a list of sessions (JSON); or one session per line "
                           "(JSONL), each line valid against this schema.", **schema}


def analysis_schema() -> dict[str, Any]:
    schema = SessionAnalysis.model_json_schema(mode="serialization")
    return {"$schema": DRAFT, **schema}


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas() -> list[Path]:
    for path, schema in ((SESSION_SCHEMA, session_schema()), (ANALYSIS_SCHEMA, analysis_schema())):
        path.write_text(dumps(schema), encoding="utf-8")
    return [SESSION_SCHEMA, ANALYSIS_SCHEMA]


if __name__ == "__main__":  # pragma: no cover
    for written in write_schemas():
        print(f"wrote {written}")
