"""Where the HTML reports' pages come from: Jinja2 templates, a stylesheet and a script shipped as package data
in `templates/` (pyproject's [tool.setuptools.package-data]), so each is edited as what it is, HTML, CSS or JS.

Every page is rendered with autoescape on: whatever a run recorded (model output, tool results, sample ids) is
untrusted input here. The stylesheet and the script are ours and constant; `asset` inlines them whole, so a
written report refers to nothing outside itself and opens offline, in a CI artifact viewer, years later.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader
from markupsafe import Markup

from evals_cli.exporters.common import fmt_score

TEMPLATES = "templates"


@cache
def asset(name: str) -> Markup:
    """A stylesheet or script of `templates/`, its text put into the page as it is (never escaped, never
    rendered: CSS and JS may hold `{#` or `{{`, which Jinja2 would read as its own)."""
    loader = PackageLoader("evals_cli.exporters", TEMPLATES)
    source, _, _ = loader.get_source(Environment(), name)
    return Markup(source)


def pretty(value: Any) -> str:
    """JSON for people (indented, unicode kept); a plain string stays as it is."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def environment() -> Environment:
    """A fresh environment over the shipped templates, with the filters every page uses (`score`, `pretty`);
    callers add their own globals (how a page colours a score)."""
    env = Environment(loader=PackageLoader("evals_cli.exporters", TEMPLATES), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    env.globals["asset"] = asset
    env.filters["score"] = fmt_score
    env.filters["pretty"] = pretty
    return env


__all__ = ["asset", "environment", "pretty"]
