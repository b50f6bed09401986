"""Mocked tools: the agent sees real schemas; nothing is ever executed."""
