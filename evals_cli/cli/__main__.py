"""`python -m evals_cli.cli`, as `python -m evals_cli` (which the `evals` script runs)."""

from evals_cli.__main__ import main

if __name__ == "__main__":  # pragma: no cover
    main()
