"""`final_state`'s assertions over the world (tau2-bench's `env_assertions`): the suite's own functions, beside the
field expectations, for what a matcher cannot say (a refund equals the order's total less its fees, no two
bookings share a seat).

    def refund_matches(final, initial, sample, order_id):
        order = final.records["orders"][order_id]
        refund = sum(r["amount"] for r in final.records.get("refunds", {}).values() if r["order"] == order_id)
        return refund == order["total"] - order["fee"], f"refunded {refund}, order total {order['total']}"

A function is called as `fn(final, initial, sample, **arguments)`: `final` is the world as the agent left it and
`initial` the world it started from (after setup), each a World with `.files` (path -> text) and `.records`
(collection -> id -> object), a copy of its own (changing it changes nothing else); `sample` the dataset row (a
`Sample`: `.id`, `.metadata`, `.expected_state`, ...). It returns a bool, or `(bool, reason)` with a str reason.

It is the suite's own code, so it is loaded and run as every custom function is (evals_cli/custom_code/): only
from the suite's folders, read but not run by `evals validate` without --import-code, called in a worker thread of
its own with what is left of the sample's `sample_timeout`. A function that raises, or returns anything else, gives
the grade no score (an error, never a fail or a pass); a missing file or function, or a signature that cannot take
`(final, initial, sample, **arguments)`, is a load error naming `assertions[i].python` (exit 2).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from evals_cli import custom_code
from evals_cli.environment.world import World
from evals_cli.graders.expectations import Outcome
from evals_cli.models.base import StrictModel
from evals_cli.models.sample import Sample

SHAPE = "fn(final, initial, sample, **arguments) -> bool | (bool, reason)"


class StateAssertion(StrictModel):
    """One function over the final world."""

    python: str = Field(description="'path/to/checks.py:function' (relative to the suite) or 'package.module:"
                        "function', called as function(final, initial, sample, **arguments) and returning a bool or "
                        "(bool, reason); final and initial are Worlds (.files: path -> text, .records: collection "
                        "-> id -> object), sample the dataset row.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments the function is called "
                                      "with (tau2-bench's `arguments`).")
    message: str | None = Field(default=None, description="What the rationale says when it fails, before the "
                                "function's own reason (tau2-bench's `message`).")

    @field_validator("python")
    @classmethod
    def _file_and_name(cls, value: str) -> str:
        file_part, sep, name = value.rpartition(":")
        if (not sep or not file_part.endswith(".py") or not name.isidentifier()) and not custom_code.is_module_ref(
                value):
            raise ValueError(f"'{value}' is not 'path/to/checks.py:function' (a .py file relative to the suite, and "
                             "the function's name) nor 'package.module:function' (an installed module)")
        return value


@dataclass(frozen=True)
class LoadedAssertion:
    """An assertion with its function loaded (None: only read, by `evals validate` without --import-code)."""

    index: int
    spec: StateAssertion
    fn: Callable[..., Any] | None

    @property
    def where(self) -> str:
        return f"final_state assertion {self.spec.python}"


def load_assertions(specs: list[StateAssertion], base_dir: Path) -> list[LoadedAssertion]:
    """Each assertion's function, loaded and its signature checked; ValueError naming `assertions[i].python`."""
    from evals_cli.code_loading import NotImported, load_object

    loaded = []
    for i, spec in enumerate(specs):
        try:
            found, _ = load_object(spec.python, base_dir, "final_state assertion")
            if isinstance(found, NotImported):
                if found.static is not None:
                    _check_signature(found.static.signature, spec)
                loaded.append(LoadedAssertion(i, spec, None))
                continue
            if not callable(found) or inspect.isclass(found):
                raise ValueError(f"{spec.python} is not a function; it must be {SHAPE}")
            try:
                signature = inspect.signature(found)
            except (TypeError, ValueError):
                signature = None  # a builtin or C function: its call tells
            if signature is not None:
                _check_signature(signature, spec)
            loaded.append(LoadedAssertion(i, spec, found))
        except (ValueError, custom_code.CustomCodeError) as exc:
            raise ValueError(f"assertions[{i}].python: {exc}") from None
    return loaded


def _check_signature(signature: inspect.Signature, spec: StateAssertion) -> None:
    try:
        signature.bind(None, None, None, **spec.arguments)
    except TypeError as exc:
        params = ", ".join(str(p) for p in signature.parameters.values())
        raise ValueError(f"{spec.python} takes ({params}), which cannot be called as {SHAPE}"
                         f"{' with arguments ' + ', '.join(spec.arguments) if spec.arguments else ''} ({exc})") from None


class NoVerdict(Exception):
    """An assertion gave no verdict (it raised, or returned something else): the grade has no score."""


async def run_assertion(item: LoadedAssertion, final: World, initial: World, sample: Sample) -> Outcome:
    """The assertion's outcome; NoVerdict when it gave no verdict. An exit, an interrupt or running out of
    the sample's time raises CustomCodeError (the grade's error, marked custom_code)."""
    ref = item.spec.python
    if item.fn is None:
        raise NoVerdict(f"assertions[{item.index}] {ref} was only read, not imported (evals validate)")
    try:
        value = await custom_code.call(item.fn, final.copy(), initial.copy(), sample.model_copy(deep=True),
                                       where=item.where, keywords=dict(item.spec.arguments),
                                       thread_name=f"evals-assert {ref}"[:60])
    except custom_code.CustomCodeError:
        raise
    except Exception as exc:  # the suite's code: no verdict, never a fail
        raise NoVerdict(f"assertions[{item.index}] {ref} raised {type(exc).__name__}: {exc}") from None
    met, reason = _verdict(value, item.index, ref)
    label = f"assertion {ref}"
    if met:
        return Outcome(label, True)
    said = "; ".join(part for part in (item.spec.message, reason) if part) or "returned False"
    return Outcome(label, False, f"{ref}: {said}")


def _verdict(value: Any, index: int, ref: str) -> tuple[bool, str]:
    if isinstance(value, bool):
        return value, ""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool) and isinstance(value[1], str):
        return value[0], value[1]
    shown = type(value).__name__ if not isinstance(value, tuple) else \
        f"a tuple ({', '.join(type(v).__name__ for v in value)})"
    raise NoVerdict(f"assertions[{index}] {ref} returned {shown}; return a bool or (bool, reason) with a str "
                          "reason")
