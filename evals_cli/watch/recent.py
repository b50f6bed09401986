"""A bounded memory of the strings seen last (traces finished or graded, conversation ids written): what keeps a
late span, a resent batch or a repeated id from being taken for new, in memory that stops growing once full.

Strings are kept as their 64-bit hashes (a set and a queue of ints, some 70 bytes each): two ids sharing a hash
among the last 20,000 is about one chance in 10**10."""

from __future__ import annotations

from collections import deque

REMEMBERED = 20_000


class Recent:
    def __init__(self, bound: int = REMEMBERED) -> None:
        self.bound = bound
        self._order: deque[int] = deque()
        self._seen: set[int] = set()

    def add(self, item: str) -> None:
        key = hash(item)
        if key in self._seen:
            return
        self._seen.add(key)
        self._order.append(key)
        if len(self._order) > self.bound:
            self._seen.discard(self._order.popleft())

    def __contains__(self, item: object) -> bool:
        return hash(item) in self._seen

    def __len__(self) -> int:
        return len(self._order)
