"""One isolated machine per episode: what a `sandbox:` kind gives the episode (base.py), and the kinds."""
