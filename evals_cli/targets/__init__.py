"""Targets: the agent under test. A target turns a Sample into a Trajectory."""
