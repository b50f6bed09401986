"""Judge score scales: what the judge is asked for, the structured-output schema that enforces it, and how
its answer is normalised to [0, 1] (VerdictError when it is not on the scale).

`verdict` reads a reply and asks the scale to normalise it; the scale never reads replies, so the two modules
depend one way only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evals_cli.models.grader_specs.judge import Choice

__all__ = ["Choice", "Scale", "ScaleSpec", "VerdictError", "number"]


class VerdictError(ValueError):
    """The judge's reply holds no usable verdict."""


def number(value: Any) -> float:
    """A score the judge gave, as a float (a boolean or text that is not a number is no score)."""
    if isinstance(value, bool):
        raise VerdictError(f"score is a boolean ({value})")
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            raise VerdictError(f"score {value!r} is not a number") from None
    else:
        raise VerdictError(f"score {value!r} is not a number")
    return result  # NaN passes here and fails every range check


ScaleSpec = str | list[Choice]


@dataclass(frozen=True)
class Scale:
    """A scale resolved from the spec: numeric (`1-10`, `0-1`), `pass-fail`, or labelled choices."""

    name: str
    key: str  # the verdict field holding the answer: score, verdict or choice
    low: float = 0.0
    high: float = 1.0
    labels: tuple[tuple[str, float], ...] = ()

    @classmethod
    def of(cls, spec: ScaleSpec) -> Scale:
        if isinstance(spec, list):
            return cls("choices", "choice", labels=tuple((c.label, c.score) for c in spec))
        if spec == "pass-fail":
            return cls("pass-fail", "verdict", labels=(("pass", 1.0), ("fail", 0.0)))
        if spec == "1-10":
            return cls("1-10", "score", 1.0, 10.0)
        return cls("0-1", "score", 0.0, 1.0)

    @property
    def numeric(self) -> bool:
        return not self.labels

    def instruction(self) -> str:
        if self.numeric:
            what = "an integer from 1 (worst) to 10 (best)" if self.name == "1-10" else "a number from 0 (worst) to 1 (best)"
            return f'{{"reason": "<one or two sentences>", "score": <{what}>}}'
        options = " or ".join(f'"{label}"' for label, _ in self.labels)
        return f'{{"reason": "<one or two sentences>", "{self.key}": {options}}}'

    def response_format(self) -> dict[str, Any]:
        if self.numeric:
            answer: dict[str, Any] = {"type": "integer" if self.name == "1-10" else "number",
                                      "minimum": self.low, "maximum": self.high}
        else:
            answer = {"type": "string", "enum": [label for label, _ in self.labels]}
        schema = {"type": "object", "additionalProperties": False, "required": ["reason", self.key],
                  "properties": {"reason": {"type": "string"}, self.key: answer}}
        return {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": schema}}

    def normalise(self, raw: Any) -> tuple[float, Any]:
        """(score in [0, 1], raw answer); ValueError when the answer is not on the scale."""
        if self.numeric:
            value = number(raw)
            if not self.low <= value <= self.high:
                raise VerdictError(f"score {value:g} is outside the {self.name} scale")
            return (value / 10.0 if self.name == "1-10" else value), value
        text = str(raw).strip().strip("\"'").casefold()
        for label, score in self.labels:
            if text == label.casefold():
                return score, label
        raise VerdictError(f"{self.key} {raw!r} is not one of {', '.join(label for label, _ in self.labels)}")
