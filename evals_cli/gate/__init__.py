"""The gate: the only place grades become verdicts. Graders return scores (per turn where they grade per turn)
and never see the gate's rules; the gate settles per-turn and per-reply grades (`turns.py`), decides each sample
(`gate.py`, `Gate.judge_sample`) and the run (`run_rule.py`), with one node class per gate kind (`kinds.py`) and
the numbers it reads (`scores.py`).
"""
