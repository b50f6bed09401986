"""Built-in judge rubrics, usable as `rubric: builtin:NAME`."""
