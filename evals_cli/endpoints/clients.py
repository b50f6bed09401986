"""What a model caller needs of the run's clients: one client per endpoint.

The agent's targets, the judge graders, the user simulator and the sessions judge only ask for the client of an
endpoint; the run's `ClientPool` (endpoints/pool.py) is the one that hands it out, with the transports, the
recording and the concurrency bounds behind it, and only the code that builds the pool needs to know that.
"""

from __future__ import annotations

from typing import Any, Protocol

from evals_cli.endpoints.resolve import Endpoint


class ModelClients(Protocol):
    """Hands out the client of an endpoint: an AsyncOpenAI, or whatever answers in its place (a replay)."""

    def client(self, endpoint: Endpoint) -> Any: ...
