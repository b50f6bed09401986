"""The process's entry point, for `python -m evals_cli` and the installed `evals` script alike (pyproject's
`[project.scripts]` names `main` here): collections are held before the command's imports (typer, rich, our
models), which is where most of the start-up's objects are made; `evals_cli.cli` would import them first."""

from evals_cli.shutdown import hold_collections


def main() -> None:
    hold_collections()
    from evals_cli.cli import main as run_command

    run_command()


if __name__ == "__main__":
    main()
