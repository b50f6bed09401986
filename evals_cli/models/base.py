"""Base model shared by every spec: unknown keys are errors, so typos never pass silently."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, PrivateAttr


class StrictModel(BaseModel):
    """A pydantic model that rejects unknown keys (the loader turns them into 'did you mean' hints) and non-finite
    numbers: a NaN weight or threshold compares false with everything, so it would silently pass a gate."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class Record(BaseModel):
    """A model for data we write ourselves (results, trajectories): tolerant on read, for forward compatibility."""

    model_config = ConfigDict(extra="ignore")


class SuiteFile(StrictModel):
    """A model loaded from a suite file: paths in it are relative to that file (the loader sets `_base_dir`)."""

    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    def resolve(self, path: str) -> Path:
        """A path from the suite, relative to the suite file."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self._base_dir / p
