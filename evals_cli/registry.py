"""One registration idiom for every plug-in family (graders, targets, exporters, gates, extractors).

A kind is one module in its family's package: the module defines the kind's spec model (when the kind takes
options) and its implementation, and registers both with one decorator::

    GRADERS = Registry[Grader]("grader", "evals_cli.graders.kinds")

    @GRADERS.register("tool_order", spec=ToolOrderSpec)
    class ToolOrder(Grader[ToolOrderSpec]): ...

The registry imports every module of the package the first time a kind is looked up (`discover`), so adding a
kind never means editing an import list, a union or an if/elif elsewhere (the suite's grader and target unions
are built from the registries: evals_cli/suite/spec.py; those two registries live in evals_cli/kinds.py, so the
suite reads them without importing the graders' and targets' base machinery). Discovery is lazy so that
commands which need no kinds (`evals --help`) do not pay for importing them; and for graders and targets a lookup
of a built-in kind, or a suite naming only built-in kinds, imports only their modules (`BUILTIN_KINDS`,
`Registry.ensure`), while any other name and every listing (`kinds`, `entries`: `evals list`) still discovers
everything.

A few built-in kinds live beside what they build on rather than in their family's package (the recorded-session
graders and target sit in `evals_cli.sessions`, which builds on the graders and the targets): `ELSEWHERE` names
their modules by family package, so discovery imports them too and the family's package never imports the higher
layer.

Installed packages add kinds the same way: every entry point of the group `evals_cli` names a module (`acme_evals
= "acme_evals.plugin"` under `[project.entry-points.evals_cli]`), and the first lookup in any registry imports
those modules (`load_plugins`), whose decorators then register their kinds beside the built-in ones, each entry
remembering the package it came from (`evals list` shows it). A plug-in that fails to import is a `PluginError`
(exit 2) naming the entry point and its package, for every lookup, never a traceback; so is one whose import does
not finish within EVALS_PLUGIN_IMPORT_TIMEOUT seconds (it is imported in a thread of its own, so a hang cannot
hang every command). `EVALS_PLUGINS` chooses which installed plug-ins load (see `plugin_selection`), and
`plugin_code` turns an exception a plug-in kind's own code raises while it is built into a PluginError naming the
kind and its package.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from evals_cli.errors import ConfigError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

PLUGIN_GROUP = "evals_cli"
PLUGINS_ENV = "EVALS_PLUGINS"
IMPORT_TIMEOUT_ENV = "EVALS_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT_S = 60.0  # the settings knob's default too (evals_cli/settings.py)

# family package -> built-in kind modules outside it, imported by its discovery (see the module's docstring)
ELSEWHERE: dict[str, tuple[str, ...]] = {"evals_cli.graders.kinds": ("evals_cli.sessions.graders",),
                                         "evals_cli.targets": ("evals_cli.sessions.target",)}

# family package -> built-in kind (and old name) -> the module registering it: a lookup of one built-in kind, and a
# suite naming only built-in kinds (`Registry.ensure`), import just those modules, not the whole family (a suite
# of `kind: tool` graders never imports the judge); any other name, and every listing, discovers everything.
# tests/test_registry_builtin_table.py checks it against full discovery, so a new kind module cannot be missed.
BUILTIN_KINDS: dict[str, dict[str, str]] = {
    "evals_cli.graders.kinds": {
        "choice": "evals_cli.graders.kinds.choice",
        "cost": "evals_cli.graders.kinds.cost",
        "exact_match": "evals_cli.graders.kinds.references",
        "f1": "evals_cli.graders.kinds.references",
        "final_state": "evals_cli.graders.kinds.final_state",
        "forbidden_tools": "evals_cli.graders.kinds.trajectory",
        "grounding": "evals_cli.graders.kinds.grounding",
        "latency": "evals_cli.graders.kinds.latency",
        "match": "evals_cli.graders.kinds.tool",
        "model_judge": "evals_cli.graders.kinds.model_judge",
        "no_leak": "evals_cli.graders.kinds.no_leak",
        "no_loops": "evals_cli.graders.kinds.no_loops",
        "output_type": "evals_cli.graders.kinds.output_type",
        "sandbox_check": "evals_cli.graders.kinds.sandbox_check",
        "session_detector": "evals_cli.sessions.graders",
        "session_score": "evals_cli.sessions.graders",
        "spans": "evals_cli.graders.kinds.spans",
        "stop_behavior": "evals_cli.graders.kinds.stop_behavior",
        "tool": "evals_cli.graders.kinds.tool",
        "tool_args": "evals_cli.graders.kinds.tool_args",
        "tool_order": "evals_cli.graders.kinds.trajectory",
        "tool_schema": "evals_cli.graders.kinds.tool_schema",
        "tools_avoided": "evals_cli.graders.kinds.trajectory",
    },
    "evals_cli.targets": {
        "command": "evals_cli.targets.command_agent",
        "http": "evals_cli.targets.http_agent",
        "openai_chat": "evals_cli.targets.openai_chat",
        "openai_responses": "evals_cli.targets.openai_responses",
        "python": "evals_cli.targets.python_agent",
        "recorded_session": "evals_cli.sessions.target",
        "traces": "evals_cli.targets.traces",
    },
}


class PluginError(ConfigError):
    """An installed plug-in (an entry point of the group `evals_cli`) could not be imported: exit 2, naming the
    entry point and the package that declares it, and what to do (fix the package, or uninstall it)."""


@dataclass(frozen=True)
class Plugin:
    """One entry point of the group `evals_cli`: its name, the module it names and the package declaring it."""

    name: str
    value: str
    package: str


def plugin_selection() -> frozenset[str] | None:
    """The plug-ins `EVALS_PLUGINS` lets load: None when it is unset (every installed one), an empty set when it
    is set but empty (none: what the project's own tests run with, so a plug-in installed beside evals-cli
    cannot change their results), else the comma-separated names (an entry point's name or its package's).
    Read here rather than through evals_cli/settings.py: unlike every other knob, empty is not unset."""
    raw = os.environ.get(PLUGINS_ENV)
    if raw is None:
        return None
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def _package_of(point: Any) -> str:
    return point.dist.name if point.dist is not None else "an unknown package"


class _Plugins:
    """The installed plug-ins, imported once per process on the first lookup in any registry."""

    def __init__(self) -> None:
        self.loaded: list[Plugin] = []
        self.loading: str | None = None  # the package whose module is being imported (its kinds name it)
        self.error: PluginError | None = None
        self.done = False
        self._installed: list[Any] | None = None

    def installed(self) -> list[Any]:
        """Every installed entry point of the group, read once (reading them scans every installed package)."""
        if self._installed is None:
            from importlib.metadata import entry_points

            self._installed = sorted(entry_points(group=PLUGIN_GROUP), key=lambda p: (p.name, p.value))
        return self._installed

    def points(self) -> list[Any]:
        """The installed entry points `EVALS_PLUGINS` selects (all of them when it is unset)."""
        chosen = plugin_selection()
        if chosen is None:
            return self.installed()
        return [p for p in self.installed() if p.name in chosen or _package_of(p) in chosen]

    def unknown(self) -> list[str]:
        """The names in `EVALS_PLUGINS` that no installed entry point or package answers to."""
        known = {p.name for p in self.installed()} | {_package_of(p) for p in self.installed()}
        return sorted((plugin_selection() or frozenset()) - known)

    def load(self) -> None:
        if self.error is not None:
            raise self.error
        if self.done:
            return
        self.done = True  # first: a plug-in module that looks a kind up while imported must not recurse
        unknown = self.unknown()
        if unknown:
            names = ", ".join(sorted({p.name for p in self.installed()})) or "none"
            self.error = PluginError(f"{PLUGINS_ENV} names {', '.join(map(repr, unknown))}, which no installed "
                                     f"plug-in answers to (installed plug-ins: {names}); give entry point or "
                                     f"package names, comma-separated (unset it to load every installed plug-in, "
                                     f"set it empty to load none)")
            raise self.error
        for point in self.points():
            package = _package_of(point)
            self.loading = package
            try:
                _import_plugin(point)
            except PluginError as exc:
                self.error = exc
                raise
            except Exception as exc:  # the plug-in's code: report it, never crash
                self.error = PluginError(
                    f"plug-in {point.name} = {point.value!r} (entry point of group {PLUGIN_GROUP!r}, package "
                    f"{package}) failed to import: {type(exc).__name__}: {exc}; fix the package, leave it out of "
                    f"{PLUGINS_ENV}, or uninstall it (pip uninstall {package})")
                raise self.error from None
            finally:
                self.loading = None
            self.loaded.append(Plugin(point.name, point.value, package))


def import_timeout() -> float:
    """Seconds a plug-in's import may take: EVALS_PLUGIN_IMPORT_TIMEOUT, read here (not through settings.py, which
    this low module stays below); every command refuses a bad value before it looks a kind up (settings.check),
    so here a value that is not a positive number can only come from a library caller, and means the default."""
    try:
        limit = float(os.environ.get(IMPORT_TIMEOUT_ENV) or DEFAULT_IMPORT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT_S
    return limit if limit > 0 and limit != float("inf") else DEFAULT_IMPORT_TIMEOUT_S


def _import_plugin(point: Any) -> None:
    """Import the entry point's module (and its attribute, if it names one) under the custom-code guard, in a
    thread of its own bounded by `import_timeout`: a plug-in runs in our process like a suite's own code, so
    exiting at import is a load error, not the end of the run, and an import that hangs (a network call, a lock)
    is an error naming it once the bound has passed, not a command that never ends. The thread is a daemon: a hung
    import is left behind, and the command ends with its error."""
    import importlib.util

    from evals_cli import custom_code

    package = _package_of(point)
    outcome: list[BaseException | None] = []

    def load() -> None:
        found = importlib.util.find_spec(point.module)
        if found is not None and found.origin:  # its frames count as custom code's for the exit guard
            custom_code.register_file(found.origin)
        point.load()

    def guarded() -> None:
        try:
            custom_code.import_guarded(load, f"plug-in {point.name} ({package})")
            outcome.append(None)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            outcome.append(exc)

    limit = import_timeout()
    worker = threading.Thread(target=guarded, name=f"evals-plugin-{point.name}", daemon=True)
    worker.start()
    worker.join(limit)
    if not outcome:
        raise PluginError(f"plug-in {point.name} = {point.value!r} (package {package}) did not finish importing "
                          f"within {limit:g}s ({IMPORT_TIMEOUT_ENV}); fix the package (an import must not wait on "
                          f"the network or a lock), raise {IMPORT_TIMEOUT_ENV}, leave it out of {PLUGINS_ENV}, or "
                          f"uninstall it (pip uninstall {package})")
    error = outcome[0]
    if isinstance(error, custom_code.CustomCodeError):
        raise PluginError(f"plug-in {point.name} = {point.value!r} (package {package}) {error.did} at import; "
                          f"custom code cannot end the run: fix the package, or uninstall it "
                          f"(pip uninstall {package})") from None
    if error is not None:
        raise error


PLUGINS = _Plugins()


def blamed_plugin(exc: BaseException) -> str | None:
    """When an installed plug-in's code raised `exc` (a frame of its traceback runs in the plug-in's package,
    innermost first), the message naming it: what the command reports (exit 2) instead of an internal error,
    wherever the plug-in's code ran (a spec's validator, an exporter, a kind's constructor). None otherwise."""
    import traceback

    packages = {plugin.value.split(":")[0].split(".")[0]: plugin for plugin in PLUGINS.loaded}
    if not packages:
        return None
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        module = str(frame.f_globals.get("__name__", ""))
        plugin = packages.get(module.split(".")[0])
        if plugin is not None:
            return (f"plug-in {plugin.name} (package {plugin.package}) raised {type(exc).__name__} in {module}: "
                    f"{exc}; fix the plug-in, leave it out of {PLUGINS_ENV}, or uninstall it "
                    f"(pip uninstall {plugin.package})")
    return None


def load_plugins() -> list[Plugin]:
    """Import every installed plug-in once (PluginError when one fails, on every call); the plug-ins loaded."""
    PLUGINS.load()
    return list(PLUGINS.loaded)


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered kind: its name, what implements it, and the pydantic model of its options (if any)."""

    kind: str
    impl: T
    spec: type[Any] | None
    module: str
    package: str | None = None  # the installed package (distribution) of a plug-in kind; None: evals-cli's own
    family: str = ""

    def named(self) -> str:
        """How messages name the kind: `grader kind 'acme_shout' (plug-in from evals-acme-plugin)`."""
        where = f" (plug-in from {self.package})" if self.package else ""
        return f"{self.family} kind {self.kind!r}{where}"


@contextlib.contextmanager
def plugin_code(entry: Entry[Any] | None, doing: str, at: str = "") -> Iterator[None]:
    """Run a kind's own code (building it, checking it): an exception a plug-in kind raises becomes a PluginError
    (exit 2) naming the kind and its package (after `at`, the suite field that named it), never an internal error;
    evals-cli's own kinds' exceptions go on up unchanged (theirs are bugs, or errors their callers handle)."""
    try:
        yield
    except Exception as exc:
        if entry is None or entry.package is None or isinstance(exc, ConfigError):
            raise
        where = f"{at}: " if at else ""
        raise PluginError(f"{where}{entry.named()} raised {type(exc).__name__} while {doing}: {exc}; fix the "
                          f"plug-in (module {entry.module}), leave it out of {PLUGINS_ENV}, or uninstall it "
                          f"(pip uninstall {entry.package})") from None


def must_override(method: F) -> F:
    """Marks a base class's method that a kind must implement for its samples to run (its body only raises
    NotImplementedError): `missing_overrides` finds the ones a kind's class left as they were, so `evals validate`
    reports them, naming the kind, instead of every sample erroring."""
    method._evals_must_override = True  # type: ignore[attr-defined]
    return method


def missing_overrides(cls: type, names: Iterable[str]) -> list[str]:
    """The methods among `names` that `cls` still inherits unimplemented (see `must_override`)."""
    return [name for name in names if getattr(getattr(cls, name, None), "_evals_must_override", False)]


class Registry(Generic[T]):
    """Kinds of one family, keyed by name, discovered from one package (and its `ELSEWHERE` modules)."""

    def __init__(self, family: str, package: str | None = None) -> None:
        self.family = family
        self.package = package
        self._entries: dict[str, Entry[T]] = {}
        self._discovered = package is None
        self.version = 0  # bumped by every (un)registration: the suite's unions are rebuilt when it moved

    def register(self, kind: str, *, spec: type[Any] | None = None, module: str | None = None) -> Callable[[T], T]:
        """Decorator: make `kind` available. Two modules claiming one kind is a bug caught at import. `module`:
        the registering module, where `impl` is an instance whose `__module__` names its class's module."""

        if not isinstance(kind, str) or not kind.strip() or not kind.isprintable():
            raise ValueError(f"{self.family} kind {kind!r}: a kind's name is what a suite writes after `kind:`, "
                             "so it must be non-empty printable text (no control characters)")

        def add(impl: T) -> T:
            module_name: str = module or getattr(impl, "__module__", None) or "?"
            existing = self._entries.get(kind)
            if existing is not None and existing.module != module_name:
                raise RuntimeError(f"{self.family} kind {kind!r} registered twice: by {existing.module} and "
                                   f"{module_name}")
            package = PLUGINS.loading if existing is None else existing.package
            self._entries[kind] = Entry(kind, impl, spec, module_name, package, self.family)
            self.version += 1
            return impl

        return add

    def discover(self) -> None:
        """Import every module of the family's package once (a plain module: that module), then the installed
        plug-ins; each registers its kinds as it is imported."""
        if not self._discovered:
            self._discover_package()
        load_plugins()

    def _discover_package(self) -> None:
        self._discovered = True  # first: a kind module that looks a kind up while imported must not recurse
        assert self.package is not None
        try:
            package = importlib.import_module(self.package)
            for info in sorted(pkgutil.iter_modules(getattr(package, "__path__", [])), key=lambda i: i.name):
                if not info.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{info.name}")
            for module in ELSEWHERE.get(self.package, ()):
                importlib.import_module(module)
        except BaseException:
            self._discovered = False  # a broken kind fails every lookup, not only the first
            raise

    def ensure(self, kinds: Iterable[str]) -> None:
        """Make these kinds registered, importing only their modules when every one is a built-in kind (see
        `BUILTIN_KINDS`), else discovering everything; the installed plug-ins are imported either way."""
        if not self._discovered:
            table = BUILTIN_KINDS.get(self.package or "")
            missing = [kind for kind in kinds if kind not in self._entries]
            # with a plug-in installed, everything, in the order `discover` takes (a plug-in claiming a built-in
            # kind's name is refused the same way whichever kinds the suite names)
            if table is not None and all(kind in table for kind in missing) and not PLUGINS.points():
                for module in sorted({table[kind] for kind in missing}):
                    importlib.import_module(module)
            if any(kind not in self._entries for kind in kinds):  # unknown, a plug-in's, or the table is wrong
                self._discover_package()
        load_plugins()

    def loaded(self) -> Iterator[Entry[T]]:
        """The kinds registered so far, without discovering the others, in the order of `entries`."""
        ranked = sorted(enumerate(self._entries.values()), key=lambda pair: (pair[1].module, pair[0]))
        return iter([entry for _, entry in ranked])

    def unregister(self, kind: str) -> None:
        """Forget a kind (a test that registered a probe kind cleans up after itself)."""
        if self._entries.pop(kind, None) is not None:
            self.version += 1

    def get(self, kind: str) -> Entry[T] | None:
        self.ensure((kind,))
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
        return self.loaded()
