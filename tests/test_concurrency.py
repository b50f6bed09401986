"""The one concurrency helper (evals_cli/concurrency.py) that the run, the models of a matrix run, the recorded
sessions, their judge questions and the judge graders of a sample all go through: bounded, streaming, stoppable,
a context per worker, failures kept apart from cancellations."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator

import pytest

from evals_cli.concurrency import Workers, each, each_or_raise

STEP: contextvars.ContextVar[str] = contextvars.ContextVar("STEP", default="")


def test_at_most_n_in_flight_and_items_taken_as_workers_free_up() -> None:
    taken: list[int] = []
    in_flight = peak = 0

    def source() -> Iterator[int]:
        for i in range(20):
            taken.append(i)
            yield i

    async def handle(item: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        assert len(taken) <= item + 3  # streamed: never more than the workers' share ahead of the work
        await asyncio.sleep(0.001)
        in_flight -= 1

    assert asyncio.run(each(source(), handle, 3)) == []
    assert peak == 3 and taken == list(range(20))


def test_stop_ends_scheduling_and_lets_the_items_in_flight_finish() -> None:
    done: list[int] = []
    stopped = False

    async def handle(item: int) -> None:
        nonlocal stopped
        await asyncio.sleep(0.001)
        done.append(item)
        stopped = stopped or item == 4

    asyncio.run(each(range(100), handle, 2, stop=lambda: stopped))
    assert 4 in done and len(done) <= 6


def test_a_failing_item_ends_its_worker_only_and_is_returned() -> None:
    done: list[int] = []

    async def handle(item: int) -> None:
        if item == 1:
            raise ValueError("boom")
        await asyncio.sleep(0.001)
        done.append(item)

    failures = asyncio.run(each(range(10), handle, 3))
    assert [type(f) for f in failures] == [ValueError]
    assert sorted(done) == [0, 2, 3, 4, 5, 6, 7, 8, 9]  # the other workers took the rest


def test_false_from_the_handler_ends_that_worker() -> None:
    done: list[int] = []

    async def handle(item: int) -> bool:
        done.append(item)
        return item != 0

    asyncio.run(each(range(5), handle, 1))
    assert done == [0]


def test_cancelled_workers_are_no_failures_and_the_caller_returns() -> None:
    async def main() -> list[BaseException]:
        workers: Workers[int] = Workers(2)

        async def handle(item: int) -> None:
            await asyncio.sleep(10)

        asyncio.get_running_loop().call_later(0.05, workers.cancel)
        return await workers.run(range(5), handle)

    assert asyncio.run(asyncio.wait_for(main(), 5)) == []


def test_cancelling_the_caller_cancels_every_worker() -> None:
    cancelled = 0

    async def handle(item: int) -> None:
        nonlocal cancelled
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled += 1
            raise

    async def main() -> None:
        task = asyncio.ensure_future(each(range(5), handle, 3))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert cancelled == 3


def test_shared_slots_bound_several_pools_together() -> None:
    in_flight = peak = 0

    async def handle(item: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.002)
        in_flight -= 1

    async def main() -> None:
        slots = asyncio.Semaphore(3)
        await asyncio.gather(each(range(10), handle, 3, slots=slots), each(range(10), handle, 3, slots=slots))

    asyncio.run(main())
    assert peak == 3  # six workers, three slots


def test_each_worker_has_its_own_context() -> None:
    async def main() -> dict[int, str]:
        workers: Workers[int] = Workers(2)
        seen: dict[int, str] = {}

        async def handle(item: int) -> None:
            seen[item] = STEP.get()  # what this worker set for its previous item, never another worker's
            STEP.set(f"item {item}")
            await asyncio.sleep(0.001 * (item % 2))

        await workers.run(range(6), handle)
        assert sorted(c.get(STEP) for c in workers.contexts.values()) == ["item 4", "item 5"]
        return seen

    seen = asyncio.run(main())
    assert STEP.get() == ""  # the caller's context is untouched
    assert seen[0] == seen[1] == ""


def test_each_or_raise_raises_once_the_others_are_done() -> None:
    done: list[int] = []

    async def handle(item: int) -> None:
        if item == 0:
            raise KeyError("first")
        await asyncio.sleep(0.01)
        done.append(item)

    with pytest.raises(KeyError):
        asyncio.run(each_or_raise(range(4), handle, 4))
    assert sorted(done) == [1, 2, 3]  # no task left running behind the error


def test_a_base_exception_that_is_no_cancellation_is_returned() -> None:
    class Interrupted(BaseException):
        pass

    async def handle(item: int) -> None:
        raise Interrupted

    assert [type(f) for f in asyncio.run(each(range(1), handle, 1))] == [Interrupted]
