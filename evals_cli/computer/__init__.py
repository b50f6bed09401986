"""Computer tools: `bash` and an editor (`edit`) a model agent is offered by name (the suite's `computer:`), run
in the episode's sandbox, recorded and replayed like model calls; and the checks a `sandbox_check` grader runs
there after the episode."""
