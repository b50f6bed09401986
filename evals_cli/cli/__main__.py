"""`python -m evals_cli.cli` runs the command, as `python -m evals_cli` (which the `evals` script runs) does."""

from evals_cli.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
