"""Dataset readers: JSONL streamed line by line, and importers of other formats."""

from evals_cli.datasets.reader import iter_samples, select_samples

__all__ = ["iter_samples", "select_samples"]
