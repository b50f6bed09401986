"""The Jinja2 sandbox rubrics render in, bounded in time and output size.

Rubrics are often written by others (a dataset row may carry its own), and Jinja2's sandbox stops escapes but
not exhaustion: nested `range(100000)` loops run for hours, `{{ "a" * 3000000000 }}` allocates 3 GB. Three
mechanisms, each for what the others cannot see:

- size checks BEFORE an operation that could amplify (the sandbox's intercepted binops `*`, `**`, `+`, `%`; the
  `~` concatenation, through the code generator; the filters and str methods that grow their input: center,
  indent, replace, format, join, wordwrap, batch, slice, ljust, rjust, zfill, expandtabs, translate, str.format
  widths): a C-level allocation cannot be interrupted once started, so it must be refused before it starts;
- a deadline, checked by a trace function on every line of template code and every Python call made while
  rendering: loops end however they iterate;
- an output cap on what the template streams out and on every captured block.

Past a bound, `RenderLimit` (a BaseException, so no `except Exception` inside Jinja2 swallows it) is raised and
turned into `RubricLimitError` by `render_rubric`. Defaults: 2 s and 2,000,000 characters (a rubric past that is
beyond any judge's context anyway); `EVALS_RUBRIC_TIMEOUT` and `EVALS_RUBRIC_MAX_CHARS` change them.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, cast

from jinja2 import StrictUndefined
from jinja2.compiler import CodeGenerator, Frame
from jinja2.compiler import operators as jinja_operators
from jinja2.nodes import Compare, Concat
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_INT_BITS = 100_000  # integers past this size (about 30,000 digits) are refused: big-int maths is C-level
TEMPLATE_FILE = "<template>"  # the filename Jinja2 compiles from_string templates under


class RenderLimit(BaseException):  # noqa: N818 - not an error of the template's logic: a bound was reached
    """Rendering went past a bound. BaseException: Jinja2's constant folding and Undefined handling catch
    Exception, and a bound must never be swallowed there."""


def timeout() -> float:
    """EVALS_RUBRIC_TIMEOUT (see evals_cli/settings.py; a bad value is a ConfigError)."""
    from evals_cli.settings import knob

    value: float = knob("rubric_timeout")
    return value


def max_chars() -> int:
    """EVALS_RUBRIC_MAX_CHARS (see evals_cli/settings.py; a bad value is a ConfigError)."""
    from evals_cli.settings import knob

    value: int = knob("rubric_max_chars")
    return value


def _too_big(what: str, size: int, cap: int, unit: str = "characters") -> RenderLimit:
    return RenderLimit(f"{what} would build {size:,} {unit}, more than the {cap:,} allowed "
                       f"(EVALS_RUBRIC_MAX_CHARS)")


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, str | list | tuple) else None


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _leaf_size(item: Any, memo: dict[int, int]) -> int | None:
    """An item's printed size, or None for a container not yet counted (text_size counts it next)."""
    if isinstance(item, str):
        return len(item) + 2
    if isinstance(item, _CONTAINERS):
        return memo.get(id(item))
    if _is_int(item):
        return item.bit_length() // 3 + 2
    return 8


def text_size(value: Any, cap: int) -> int:
    """About how many characters `str(value)` would build, counting a shared item once per reference, without
    building it; stops counting past `cap`. A list of 1,000 references to a 1 MB string costs 8 KB to build and
    1 GB to print: nested, three lines reach 10^12 characters in one C-level call no deadline can interrupt, so
    every place a container turns into text is checked with this first. Iterative (no recursion limit); sizes
    are memoised per object, so a list of the same list a thousand times is counted in a thousand steps."""
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, _CONTAINERS):
        return 0
    memo: dict[int, int] = {}
    keep: list[Any] = []  # keeps the counted objects alive so their ids are not reused while counting

    stack: list[tuple[Any, list[Any], int]] = []

    def push(item: Any) -> None:
        memo[id(item)] = 2  # in progress: a cycle counts as its '[...]'
        keep.append(item)
        items = [x for pair in item.items() for x in pair] if isinstance(item, dict) else list(item)
        stack.append((item, items, 0))

    push(value)
    total = 0
    while stack:
        node, items, index = stack.pop()
        size = memo[id(node)]
        while index < len(items) and size <= cap:
            item = items[index]
            known = _leaf_size(item, memo)
            if known is None:
                stack.append((node, items, index))
                memo[id(node)] = size
                push(item)
                break
            size += known + 2
            index += 1
        else:
            memo[id(node)] = size
            total = size
            if stack:  # add the finished child to its parent and move the parent past it
                parent, parent_items, parent_index = stack.pop()
                memo[id(parent)] += size + 2
                stack.append((parent, parent_items, parent_index + 1))
            continue
    return total


def check_text_size(what: str, *values: Any) -> None:
    """Refuse turning containers into text when the text would be past the cap (see `text_size`)."""
    cap = max_chars()
    size = 0
    for value in values:
        if isinstance(value, _CONTAINERS):
            size += text_size(value, cap)
            if size > cap:
                raise _too_big(what, size, cap)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse an intercepted binary operation whose result would be past the bounds, before computing it."""
    cap = max_chars()
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            size = _length(seq)
            if size is not None and _is_int(times) and size * max(times, 0) > cap:
                raise _too_big(f"'{type(seq).__name__} * {times}'", size * times, cap)
        if _is_int(left) and _is_int(right) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise RenderLimit(f"'*' of integers past {MAX_INT_BITS:,} bits")
    elif operator == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1 \
                and right * abs(left).bit_length() > MAX_INT_BITS:
            raise RenderLimit(f"'{left} ** {right}' is an integer past {MAX_INT_BITS:,} bits")
    elif operator == "+":
        a, b = _length(left), _length(right)
        if a is not None and b is not None and a + b > cap:
            raise _too_big("'+'", a + b, cap)
    elif operator == "%" and isinstance(left, str):
        check_printf(left, right)
        check_text_size("a '%' format of a container", *(right if isinstance(right, tuple) else (right,)))
    if operator in ("*", "+") and (isinstance(left, _CONTAINERS) or isinstance(right, _CONTAINERS)):
        times = right if _is_int(right) else left if _is_int(left) else 1
        size = sum(text_size(v, cap) for v in (left, right) if isinstance(v, _CONTAINERS)) * max(times, 1)
        if size > cap:
            raise _too_big(f"'{operator}' of containers (as text)", size, cap)


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")
_BRACE_SPEC = re.compile(r"\{[^{}]*:([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")


def check_printf(fmt: str, args: Any) -> None:
    """`"%0999999999d" % 1` allocates the width: widths and precisions (written, or taken from the arguments by
    `*`) past the cap are refused."""
    cap = max_chars()
    values = args if isinstance(args, tuple) else (args,)
    for match in _PRINTF.finditer(fmt):
        for group in match.groups():
            if group == "*":
                if any(_is_int(v) and abs(v) > cap for v in values):
                    raise _too_big("a '%' format width", max(abs(v) for v in values if _is_int(v)), cap)
            elif group is not None and int(group) > cap:
                raise _too_big("a '%' format width", int(group), cap)


def check_brace_format(fmt: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """`"{:>999999999}".format(1)`: widths in str.format specs (or nested `{}` widths from the arguments)."""
    cap = max_chars()
    for spec in _BRACE_SPEC.findall(fmt):
        for number in re.findall(r"\d+", spec):
            if int(number) > cap:
                raise _too_big("a format width", int(number), cap)
        if "{" in spec and any(_is_int(v) and abs(v) > cap for v in (*args, *kwargs.values())):
            raise RenderLimit(f"a nested format width past {cap:,} characters")


def _int_args(what: str, values: tuple[Any, ...]) -> None:
    cap = max_chars()
    for value in values:
        if _is_int(value) and value > cap:
            raise _too_big(what, value, cap)


def check_str_method(name: str, text: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The str methods that can grow their input past its size."""
    cap = max_chars()
    if name in ("center", "ljust", "rjust", "zfill"):
        _int_args(f"str.{name}", (*args, *kwargs.values()))
    elif name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        if _is_int(size) and size * (text.count("\t") + 1) + len(text) > cap:
            raise _too_big("str.expandtabs", size * (text.count("\t") + 1) + len(text), cap)
    elif name == "replace":
        check_replace(text, *args[:3], **kwargs)
    elif name == "join":
        if args:
            _predict_join(text, args[0])
    elif name == "translate" and args and isinstance(args[0], dict):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        if longest * len(text) > cap:
            raise _too_big("str.translate", longest * len(text), cap)
    elif name in ("format", "format_map"):
        check_brace_format(text, args, kwargs)
        check_text_size("str.format of a container", *args, *kwargs.values())


def check_replace(text: Any, old: Any = "", new: Any = "", count: Any = None, **_: Any) -> None:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return
    hits = text.count(old) if old else len(text) + 1
    if _is_int(count) and count >= 0:
        hits = min(hits, count)
    size = len(text) + max(0, len(new) - len(old)) * hits
    if size > max_chars():
        raise _too_big("replace", size, max_chars())


def _predict_join(separator: str, items: Any) -> None:
    if isinstance(items, list | tuple):
        cap = max_chars()
        size = len(separator) * max(len(items) - 1, 0) + sum(len(i) if isinstance(i, str) else 8 for i in items)
        if size > cap:
            raise _too_big("join", size, cap)


def _check_center(value: Any, width: Any = 80) -> None:
    _int_args("center", (width,))


def _check_indent(text: Any, width: Any = 4, *_: Any, **__: Any) -> None:
    if isinstance(text, str):
        pad = width if _is_int(width) else len(str(width))
        size = len(text) + pad * (text.count("\n") + 1)
        if size > max_chars():
            raise _too_big("indent", size, max_chars())


def _check_fmt(value: Any, *args: Any, **kwargs: Any) -> None:
    if isinstance(value, str):
        check_printf(value, kwargs if kwargs else tuple(args))


def _check_wordwrap(text: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None,
                    *_: Any, **__: Any) -> None:
    if isinstance(text, str):
        size = len(text) * (1 + len(wrapstring if isinstance(wrapstring, str) else "\n"))
        if size > max_chars():
            raise _too_big("wordwrap", size, max_chars())


def _check_batch(value: Any, linecount: Any, fill_with: Any = None) -> None:
    if fill_with is not None:
        _int_args("batch", (linecount,))


def _check_slice(value: Any, slices: Any, fill_with: Any = None) -> None:
    _int_args("slice", (slices,))


# each amplifying filter's size check, run with the filter's own arguments before it (_bounded_filters)
_SIZE_CHECKS: dict[str, Callable[..., Any]] = {
    "center": _check_center, "indent": _check_indent, "replace": check_replace, "format": _check_fmt,
    "wordwrap": _check_wordwrap, "batch": _check_batch, "slice": _check_slice}


def _bounded_filters(filters: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The built-in filters that amplify, each wrapped with its size check (run before the filter)."""
    wrapped = dict(filters)

    def wrap(name: str, check: Callable[..., Any]) -> None:
        original = filters[name]

        passes = hasattr(original, "jinja_pass_arg")  # its first argument is the environment or eval context

        def bounded(*args: Any, **kwargs: Any) -> Any:
            check(*(args[1:] if passes else args), **kwargs)
            return original(*args, **kwargs)

        if passes:
            bounded.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
        wrapped[name] = bounded

    for name, check in _SIZE_CHECKS.items():
        wrap(name, check)
    original_join = filters["join"]

    def join(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> Any:
        items = list(value)
        if len(items) > max_chars():
            raise _too_big("join", len(items), max_chars(), "items")
        _predict_join(str(d), [str(i) if not isinstance(i, str) else i for i in items] if attribute is None
                      else items)
        return original_join(eval_ctx, items, d, attribute)

    join.jinja_pass_arg = original_join.jinja_pass_arg  # type: ignore[attr-defined]
    wrapped["join"] = join
    return {name: _text_checked(f"the '{name}' filter", f) for name, f in wrapped.items()}


def _text_checked(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """Any filter may turn its arguments into text (`string`, `tojson`, `pprint`, `join`, `e`, `upper`, ...):
    containers whose text would pass the cap are refused before the filter runs."""

    def checked(*args: Any, **kwargs: Any) -> Any:
        check_text_size(f"{name} on a container", *args, *kwargs.values())
        return original(*args, **kwargs)

    if hasattr(original, "jinja_pass_arg"):
        checked.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return checked


def bounded_join(parts: Any) -> str:
    """`~` concatenation and captured blocks (`{% set x %}...{% endset %}`): the size is known before joining."""
    parts = list(parts)
    check_text_size("joining text", *parts)
    items = [p if isinstance(p, str) else str(p) for p in parts]
    size = sum(len(p) for p in items)
    if size > max_chars():
        raise _too_big("joining text", size, max_chars())
    return "".join(items)


def _compared(value: Any) -> Any:
    check_text_size("comparing a container", value)
    return value


DATA_OPEN, DATA_CLOSE = "\x02", "\x03"
"""What every value a rubric prints (`{{ ... }}`) is wrapped in while rendering: the judge's message fences the
sample's data and leaves the rubric's own text outside (graders/rubric.py `rubric_parts`). Control characters no
rubric or answer needs; any already in a value are removed, so data can never close its own fence."""


def mark_data(value: Any) -> str:
    """A printed value as one data span: inner marks (a captured block or macro printed again) are dropped, so a
    span never nests and the whole value stays data."""
    text = value if isinstance(value, str) else str(value)
    return DATA_OPEN + text.replace(DATA_OPEN, "").replace(DATA_CLOSE, "") + DATA_CLOSE


def _checked_output(value: Any) -> Any:
    """Every `{{ ... }}` output: a container is printed with str(), checked first (see `text_size`), then
    marked as data (`mark_data`)."""
    check_text_size("printing a container", value)
    return mark_data(value)


class _BoundedCodeGenerator(CodeGenerator):
    """`~` compiles to a plain join the sandbox does not intercept: route it through `bounded_join`."""

    def visit_Compare(self, node: Compare, frame: Frame) -> None:  # noqa: N802 - Jinja2's visitor naming
        """`==`, `<`, `in` on containers compare item by item in C: two lists of 100,000 references to 1 MB
        strings take 5 s per `==`, uninterruptibly. Every operand goes through `compared` (a size check)."""
        self.write("(environment.compared(")
        self.visit(node.expr, frame)
        self.write(")")
        for op in node.ops:
            self.write(f" {jinja_operators[op.op]} environment.compared(")
            self.visit(op.expr, frame)
            self.write(")")
        self.write(")")

    def visit_Concat(self, node: Concat, frame: Frame) -> None:  # noqa: N802 - Jinja2's visitor naming
        self.write("environment.bounded_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox plus size checks on every operation that can amplify (see the module doc)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _BoundedCodeGenerator

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                         finalize=_checked_output)
        self.filters = _bounded_filters(self.filters)
        self.concat = bounded_join  # type: ignore[method-assign]
        self.bounded_join = bounded_join
        self.compared = _compared
        # jinja2 types its default tests as plain `function`, which mypy does not take for a Callable
        self.tests = {name: _text_checked(f"the 'is {name}' test", cast(Callable[..., Any], test))
                      for name, test in self.tests.items()}

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja2's own signature
        target = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped by the sandbox
        owner = getattr(target, "__self__", None)
        if isinstance(owner, str):
            check_str_method(getattr(target, "__name__", ""), owner, args, kwargs)
        return super().call(__context, __obj, *args, **kwargs)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise RenderLimit in the rendering thread once `seconds` have passed: checked on every line of template
    code and every Python call, so a loop ends however it iterates. The previous trace function (a debugger,
    coverage) is put back afterwards."""
    end = time.monotonic() + seconds

    def check() -> None:
        if time.monotonic() > end:
            raise RenderLimit(f"rendering took longer than {seconds:g} s (EVALS_RUBRIC_TIMEOUT)")

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        check()
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        check()
        return local if frame.f_code.co_filename == TEMPLATE_FILE else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


def render_bounded(template: Any, variables: dict[str, Any]) -> str:
    """Stream the template's output, stopping at the output cap."""
    cap = max_chars()
    parts: list[str] = []
    size = 0
    for chunk in template.generate(**variables):
        size += len(chunk)
        if size > cap:
            raise RenderLimit(f"the rendered rubric is longer than {cap:,} characters (EVALS_RUBRIC_MAX_CHARS)")
        parts.append(chunk)
    return "".join(parts)
