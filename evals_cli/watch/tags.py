"""The tags a watch result carries, which the results files are read back by (a restart, `evals view`'s filter)."""

TRACE_TAG = "trace:"  # the trace a result was graded from: a restart skips what is on disk
FINISHED_TAG = "finished:"  # how its conversation was deemed finished: quiet, max_age or shutdown
