"""OpenAI-compatible endpoints: resolution from suite/env, shared clients, record and replay."""
