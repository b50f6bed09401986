"""Results JSONL and summary: written as a run goes, read back for reports."""
