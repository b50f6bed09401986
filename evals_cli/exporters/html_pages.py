"""Where the HTML reports' pages come from: Jinja2 templates, a stylesheet and a script shipped as package data
in `templates/` (pyproject's [tool.setuptools.package-data]), so each is edited as what it is, HTML, CSS or JS.

Every page is rendered with autoescape on: whatever a run recorded (model output, tool results, sample ids) is
untrusted input here. The stylesheet and the script are ours and constant; `asset` inlines them whole, so a
written report refers to nothing outside itself and opens offline, in a CI artifact viewer, years later.
"""

from __future__ import annotations

from functools import cache

from jinja2 import Environment, PackageLoader
from markupsafe import Markup

TEMPLATES = "templates"


@cache
def asset(name: str) -> Markup:
    """A stylesheet or script of `templates/`, its text put into the page as it is (never escaped, never
    rendered: CSS and JS may hold `{#` or `{{`, which Jinja2 would read as its own)."""
    loader = PackageLoader("evals_cli.exporters", TEMPLATES)
    source, _, _ = loader.get_source(Environment(), name)
    return Markup(source)


def environment() -> Environment:
    """A fresh environment over the shipped templates (callers add their own filters and globals)."""
    env = Environment(loader=PackageLoader("evals_cli.exporters", TEMPLATES), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    env.globals["asset"] = asset
    return env


__all__ = ["asset", "environment"]
