"""One registration idiom for every plug-in family (graders, targets, exporters, gates, extractors).

A kind is one module in its family's package: the module defines the kind's spec model (when the kind takes
options) and its implementation, and registers both with one decorator::

    GRADERS = Registry[Grader]("grader", "evals_cli.graders.kinds")

    @GRADERS.register("tool_order", spec=ToolOrderSpec)
    class ToolOrder(Grader[ToolOrderSpec]): ...

The registry imports every module of the package the first time a kind is looked up (`discover`), so adding a
kind never means editing an import list, a union or an if/elif elsewhere (the suite's grader and target unions
are built from the registries: evals_cli/suite/spec.py). Discovery is lazy so that commands which need no kinds
(`evals --help`) do not pay for importing them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered kind: its name, what implements it, and the pydantic model of its options (if any)."""

    kind: str
    impl: T
    spec: type[Any] | None
    module: str


class Registry(Generic[T]):
    """Kinds of one family, keyed by name, discovered from one package."""

    def __init__(self, family: str, package: str | None = None) -> None:
        self.family = family
        self.package = package
        self._entries: dict[str, Entry[T]] = {}
        self._discovered = package is None

    def register(self, kind: str, *, spec: type[Any] | None = None) -> Callable[[T], T]:
        """Decorator: make `kind` available. Two modules claiming one kind is a bug caught at import."""

        def add(impl: T) -> T:
            module = getattr(impl, "__module__", "?")
            existing = self._entries.get(kind)
            if existing is not None and existing.module != module:
                raise RuntimeError(f"{self.family} kind {kind!r} registered twice: by {existing.module} and {module}")
            self._entries[kind] = Entry(kind, impl, spec, module)
            return impl

        return add

    def discover(self) -> None:
        """Import every module of the family's package once; each registers its kinds as it is imported."""
        if self._discovered:
            return
        self._discovered = True  # first: a kind module that looks a kind up while imported must not recurse
        assert self.package is not None
        try:
            package = importlib.import_module(self.package)
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
                if not info.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{info.name}")
        except BaseException:
            self._discovered = False  # a broken kind fails every lookup, not only the first
            raise

    def unregister(self, kind: str) -> None:
        """Forget a kind (a test that registered a probe kind cleans up after itself)."""
        self._entries.pop(kind, None)

    def get(self, kind: str) -> Entry[T] | None:
        self.discover()
        return self._entries.get(kind)

    def __getitem__(self, kind: str) -> Entry[T]:
        entry = self.get(kind)
        if entry is None:
            raise KeyError(f"unknown {self.family} kind {kind!r}; known: {', '.join(self.kinds())}")
        return entry

    def __contains__(self, kind: object) -> bool:
        return isinstance(kind, str) and self.get(kind) is not None

    def kinds(self) -> list[str]:
        return [entry.kind for entry in self.entries()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.kinds())

    def __len__(self) -> int:
        return len(self.kinds())

    def entries(self) -> Iterator[Entry[T]]:
        """By module name, then in the order each module registered its kinds: the same order whichever kind
        module happened to be imported first (a test, a lazy import), so listings and messages are stable."""
        self.discover()
        ranked = sorted(enumerate(self._entries.values()), key=lambda pair: (pair[1].module, pair[0]))
        return iter([entry for _, entry in ranked])
