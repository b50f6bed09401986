"""Graders: registry, extractors, deterministic graders and the LLM judge."""
