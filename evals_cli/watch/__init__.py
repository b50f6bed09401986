"""`evals watch`: live OpenTelemetry traffic graded as it happens, as the samples of an ordinary run.

The pieces, each a module: spec.py (the suite's `watch:` block), suite.py (a watch suite loaded as the
ordinary suite it is), server.py (the OTLP/HTTP endpoint on the shared body handling of traces/otlp_body.py),
assembler.py (spans held per trace until the conversation is finished), sampler.py, budget.py, grading.py (one
finished conversation through the Episode, the graders and the gate: a SampleResult), windows.py (results
folders per window, rotated, resumed), rolling.py (the gate over a sliding window) and verdict.py (what it
says), metrics.py (/metrics), alerts.py, export.py (grades back out as OTLP), recent.py (the bounded memory of
traces and ids seen), tags.py (what a result is tagged with), service.py (the process that ties them together).
"""
