"""Which conversations are graded: a share chosen by trace id alone, so every replica (and a restart) chooses
the same ones whatever order the spans arrive in.

The rule is OpenTelemetry's TraceIdRatioBased sampler's: the trace id's low 8 bytes as a number, below
`rate * 2**64`. A Collector or SDK that samples with the same ratio keeps the same traces.
"""

from __future__ import annotations

_SPACE = 1 << 64


def sampled(trace_id: str, rate: float) -> bool:
    """Whether the trace (32 hex digits) is in the graded share."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return int(trace_id[-16:], 16) < int(rate * _SPACE)
