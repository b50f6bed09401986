"""Base model shared by every spec: unknown keys are errors, so typos never pass silently."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A pydantic model that rejects unknown keys (the loader turns them into 'did you mean' hints)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Record(BaseModel):
    """A model for data we write ourselves (results, trajectories): tolerant on read, for forward compatibility."""

    model_config = ConfigDict(extra="ignore")
