from evals_cli.shutdown import hold_collections

hold_collections()  # before the command's imports (main holds them too, for the `evals` script)

from evals_cli.cli import main  # noqa: E402

main()
