from evals_cli.cli import main

main()
