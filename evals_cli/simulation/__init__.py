"""Simulated users: a model (or a script, or an earlier run) plays the user of a conversation, turn by turn.

`player` is the seam the conversation loop calls; `simulator` the model-backed player; `loop` the conversation
driver every target kind runs its turns through; `prompt` the simulator's system prompt; `endpoint` where the
simulator lives and the check that it answers before a run starts."""
