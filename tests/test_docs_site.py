"""A README a newcomer can navigate (issue 29 item 7): at most 400 lines, holding the quick start, the tour and a
map of the docs; every topic a page of docs/, each page on the map, in the site's nav and built by `make docs`,
whose strict build fails on a link to a missing page or heading."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs_pages import DOCS, page
from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent  # the virtualenv running the tests: .venv, or .venv-latest under make test-latest


def _pages() -> set[str]:
    return {p.name for p in DOCS.glob("*.md")} - {"index.md"}


def _nav(entries: list[object]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        for value in (entry.values() if isinstance(entry, dict) else [entry]):
            out += _nav(value) if isinstance(value, list) else [str(value)]
    return out


def test_the_readme_is_short_and_holds_the_quick_start_the_tour_and_the_map() -> None:
    assert len(README.splitlines()) <= 400
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    assert headings[:1] == ["Quick start"] and {"A five-minute tour", "Map of the docs"} <= set(headings)
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "make demo" in quick_start and "make test" in quick_start and ". .venv/bin/activate" in quick_start
    tour = README.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    steps = re.findall(r"^### \d\. (.+)$", tour, flags=re.M)
    assert len(steps) == 4 and "demo" in steps[0] and "evals init" in steps[1] and "CI" in steps[3], steps


def test_every_page_is_on_both_maps_and_in_the_sites_nav() -> None:
    """One page per topic, none orphaned: the README's map, the site's home page and mkdocs.yml's nav list every
    page, and every page any of them names exists."""
    pages = _pages()
    assert len(pages) >= 15
    readme_map = README.split("## Map of the docs", 1)[1]
    assert set(re.findall(r"\]\(docs/([\w-]+\.md)\)", readme_map)) == pages
    assert set(re.findall(r"\]\(([\w-]+\.md)\)", page("index.md"))) == pages
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav(config["nav"])
    assert sorted(nav) == sorted(pages | {"index.md"}) and len(nav) == len(set(nav))
    for name in pages:
        assert page(name).startswith("# "), f"docs/{name} opens without its title"


def test_the_readmes_links_into_docs_name_pages_and_headings_that_exist() -> None:
    """The README is read on GitHub, outside the site's strict build: its own links are checked here."""
    for target, anchor in re.findall(r"\]\(docs/([\w.-]+)(?:#([\w-]+))?\)", README):
        assert (DOCS / target).is_file(), target
        if anchor:
            slugs = {re.sub(r"[^\w\s-]", "", h).strip().lower().replace(" ", "-")
                     for h in re.findall(r"^#+ (.+)$", page(target), flags=re.M)}
            assert anchor in slugs, f"docs/{target}#{anchor}"


def _docs_recipe() -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^docs:.*\n\t(.+)$", makefile, flags=re.M)
    assert recipe, "the Makefile has no docs target"
    return recipe.group(1).split("  #", 1)[0].replace("$(BIN)", str(BIN))


@pytest.mark.slow  # two mkdocs builds, a few seconds
@pytest.mark.skipif(not (BIN / "mkdocs").exists(), reason="mkdocs is not installed (make .venv/.installed-dev)")
def test_make_docs_builds_the_site_and_fails_on_a_broken_anchor(tmp_path: Path) -> None:
    """The Makefile's own recipe, run on a copy: the docs build clean, and one link to a missing heading fails
    the build naming it (a `--quiet` beside `--strict` would hide the warning and pass)."""
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copytree(DOCS, copy / "docs")
    built = subprocess.run(_docs_recipe(), shell=True, cwd=copy, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (copy / "site" / "index.html").is_file() and (copy / "site" / "judge.html").is_file()
    # opened from disk, a link to a folder lands on a directory listing: every page link names its .html file
    links = re.findall(r'href="([^"#:]+)"', (copy / "site" / "index.html").read_text(encoding="utf-8"))
    pages = [link for link in links if not link.startswith(("assets", "http")) and "." not in link.rsplit("/", 1)[-1]]
    assert not pages, pages
    running = copy / "docs" / "running.md"
    running.write_text(running.read_text(encoding="utf-8") + "\nSee [the cache](reliability.md#no-such-heading).\n",
                       encoding="utf-8")
    broken = subprocess.run(_docs_recipe(), shell=True, cwd=copy, capture_output=True, text=True, timeout=120)
    assert broken.returncode != 0
    assert "#no-such-heading" in broken.stdout + broken.stderr


SHELL = ("bash", "sh", "shell")
ENDS = {"|", "||", "&&", ">", ">>", ";"}


def _shell_lines() -> list[tuple[str, list[str]]]:
    """Each command of every shell block of the README and docs/, comments cut, as its words."""
    from tests.test_readme_blocks import all_blocks

    found = []
    for block in all_blocks():
        if block.lang in SHELL:
            for line in block.text.splitlines():
                code = re.split(r"\s#", " " + line, maxsplit=1)[0].strip()
                if code:
                    words = shlex.split(code)
                    cut = next((i for i, w in enumerate(words) if w in ENDS), len(words))
                    found.append((f"{block.label}: {code}", words[:cut]))
    return found


def test_every_shell_example_runs_a_real_command_with_real_options() -> None:
    """What the README and the pages tell a user to type exists: `make` targets in the Makefile, `evals`
    subcommands with the options (and choices) each one takes, and the repository files they name."""
    import typer.main

    from evals_cli.cli import app

    commands: Any = typer.main.get_command(app)  # a group of typer's own click: read by attribute
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lines = _shell_lines()
    assert sum(1 for _, words in lines if words[:1] == ["make"]) >= 10
    checked = 0
    for where, words in lines:
        if words[0] == "make":
            for target in words[1:]:
                assert re.search(rf"^{re.escape(target)}:", makefile, flags=re.M), f"{where}: no make target {target}"
            continue
        if Path(words[0]).name != "evals":
            continue
        command = commands.commands.get(words[1])
        assert command is not None, f"{where}: evals has no command {words[1]!r}"
        options = {opt: param for param in command.params if param.param_type_name == "option"
                   for opt in (*param.opts, *param.secondary_opts)}
        for i, word in enumerate(words[2:], start=2):
            if word.startswith("-"):
                name, _, value = word.partition("=")
                assert name in options, f"{where}: `evals {words[1]}` has no option {name}"
                choices = getattr(getattr(options[name], "type", None), "choices", None)
                if choices and not options[name].is_flag:
                    given = value or words[i + 1]
                    assert given in choices, f"{where}: {name} takes {list(choices)}, not {given!r}"
            elif re.match(r"(suites|datasets|examples)/", word):
                assert (ROOT / word).exists(), f"{where}: {word} is not in the repository"
        checked += 1
    assert checked >= 30
