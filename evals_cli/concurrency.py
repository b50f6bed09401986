"""Bounded concurrency, once: `Workers` runs items from one iterator with at most N in flight.

Every place that runs many things at once uses it: the run's samples, the models of a matrix run, the recorded
sessions, a session's judge questions. It keeps the properties each of them relied on:

- items are taken from the iterator one at a time, as a worker frees up, so a dataset of any size streams
  (nothing is listed up front);
- an optional shared `slots` semaphore bounds items in flight across several pools (the models of a matrix
  share one limit), held from taking an item until it is done;
- `stop()` is asked before each item: once it says so, no item is started, and the ones in flight finish;
- each worker runs in its own copy of the caller's context, so what an item sets in a ContextVar (the step
  shown by the progress view, the repeat being played) stays with that worker (`contexts`);
- a worker whose item raises dies, and the others go on: nothing that finished is lost; the exceptions are
  returned, for the caller to record (the run: an internal error, its samples still counted) or raise
  (`each_or_raise`, once every other worker is done: as `asyncio.gather` raises, without orphaned tasks);
- cancelling one worker (`cancel`, the second Ctrl-C) ends it without it counting as a failure; cancelling the
  caller cancels every worker, as `asyncio.gather` does.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

def _never() -> bool:
    return False


class Workers(Generic[T]):
    """`count` workers over one iterator. `handle(item)` returning False ends its worker (the run could not save
    a result: the caller's `stop` says why); any other return value is ignored."""

    def __init__(self, count: int, *, slots: asyncio.Semaphore | None = None,
                 stop: Callable[[], bool] = _never) -> None:
        self.count = max(1, count)
        self.slots = slots
        self.stop = stop
        self.tasks: list[asyncio.Task[None]] = []
        self.contexts: dict[asyncio.Task[None], contextvars.Context] = {}

    async def run(self, items: Iterable[T], handle: Callable[[T], Awaitable[object]]) -> list[BaseException]:
        """Run every item (until `stop()`); what ended workers early, in the order of the workers: exceptions,
        and the BaseExceptions that are not a cancellation (an interrupted regex match: `safe_regex`)."""
        source = iter(items)
        for _ in range(self.count):
            context = contextvars.copy_context()
            task = asyncio.create_task(self._worker(source, handle), context=context)
            self.contexts[task] = context
            self.tasks.append(task)
        outcomes = await asyncio.gather(*self.tasks, return_exceptions=True)
        return [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, asyncio.CancelledError)]

    def cancel(self) -> None:
        """End every worker now: the items in flight are cancelled (the caller's `run` still returns)."""
        for task in self.tasks:
            task.cancel()

    async def _worker(self, source: Iterator[T], handle: Callable[[T], Awaitable[object]]) -> None:
        while not self.stop():
            if self.slots is None:
                if not await self._one(source, handle):
                    return
                continue
            async with self.slots:
                if self.stop() or not await self._one(source, handle):
                    return

    async def _one(self, source: Iterator[T], handle: Callable[[T], Awaitable[object]]) -> bool:
        try:
            item = next(source)
        except StopIteration:
            return False
        return await handle(item) is not False


async def each(items: Iterable[T], handle: Callable[[T], Awaitable[object]], count: int, *,
               slots: asyncio.Semaphore | None = None, stop: Callable[[], bool] = _never) -> list[BaseException]:
    """`Workers(count, slots=slots, stop=stop).run(items, handle)`: for callers that need no handle on it."""
    return await Workers[T](count, slots=slots, stop=stop).run(items, handle)


async def each_or_raise(items: Iterable[T], handle: Callable[[T], Awaitable[object]], count: int, *,
                        slots: asyncio.Semaphore | None = None, stop: Callable[[], bool] = _never) -> None:
    """`each`, raising the first exception once every worker is done (the others' work is not cut short)."""
    failures = await each(items, handle, count, slots=slots, stop=stop)
    if failures:
        raise failures[0]
