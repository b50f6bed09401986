"""`evals generate`: dataset rows written by a model from a policy and a suite's tools.

`prompt` the request's template and its variables (the suite's tools and world, the policy); `replies` reading
rows out of a model's reply; `rows` turning a candidate into a dataset row and checking it (the row model, the
gold actions applied by the suite's own tools, duplicates); `endpoint` which model writes them; `run` the bounded,
seeded loop of requests and its outcome. The command (cli/generate.py) only parses options and prints the outcome."""
