"""`evals label RUN`: a keyboard-driven labeller over the judged items of a finished run.

Each item shows the task, the conversation the judge read (tool calls and their results in place; for a per-turn or
per-reply judge, up to the judged turn, which is marked), the graded text, and the judge's verdict and reason. The
person answers with one key: p pass, f fail, s skip, b back, n note (then a line of text), q quit. Every label is
appended to the labels file at once, so a session stopped anywhere keeps what was labelled, and the next session
starts at the first item not labelled yet. A skipped item is not written: it comes back next time.

Keys are read one at a time from a terminal (cbreak mode: no Enter needed); from anything else (a pipe, a file, a
test) one command per line, whose first letter is the key (a note follows `n` on the same line, or on the next).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from rich.console import Console
from rich.text import Text

from evals_cli.calibration.calibrate import match
from evals_cli.calibration.items import JudgedItem, JudgedRun, label_for, load_judged_run, run_folder
from evals_cli.errors import ConfigError
from evals_cli.invocation import command
from evals_cli.labels import LABELS_NAME, Label, append_label, read_labels
from evals_cli.models.trajectory import Turn
from evals_cli.thresholds import SYMBOLS

KEYS = "[p]ass  [f]ail  [s]kip  [b]ack  [n]ote  [q]uit"
ONLY_KINDS = ("disagreements-of",)
MAX_TEXT = 1500  # characters of one message or tool result shown before "…"
MAX_PROMPT = 4000  # characters of the judge's prompt shown
FENCE = re.compile(r"</?data-[0-9a-f]{6,}>")  # the judge's data fences (graders/judging): noise to a person


class Keys(Protocol):
    """Where the person's answers come from."""

    def key(self) -> str | None:
        """The next command key (lower case), None when input has ended."""

    def note(self) -> str | None:
        """A line of text (a note), None when input has ended."""


class LineKeys:
    """Commands from a stream that is not a terminal: one per line, its first letter the key; `n some text` is a
    note given on the same line."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.pending: str | None = None

    def key(self) -> str | None:
        while True:
            line = self.stream.readline()
            if not line:
                return None
            text = line.strip()
            if not text:
                continue
            key = text[0].lower()
            self.pending = None
            if key == "n":  # `n the note`, `note the note`, or `n` alone (the note on the next line)
                rest = text[4:] if text.lower().startswith("note") else text[1:]
                self.pending = rest.strip() or None
            return key

    def note(self) -> str | None:
        if self.pending is not None:
            note, self.pending = self.pending, None
            return note
        line = self.stream.readline()
        return None if not line else line.strip()


class TerminalKeys:
    """Single keys from a terminal, no Enter needed: the terminal stays in cbreak mode while the labeller runs (so a
    key typed while an item is being drawn is not lost) and is restored when it ends, or for typing a note. Ctrl-C
    still interrupts; Ctrl-D quits."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[Any] | None = None

    def __enter__(self) -> TerminalKeys:
        import termios
        import tty

        self.saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        self._restore()

    def _restore(self) -> None:
        import termios

        if self.saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def key(self) -> str | None:
        data = os.read(self.fd, 8)  # one key press; an arrow key's escape sequence comes whole and is ignored
        if not data or data == b"\x04":
            return None
        char = data.decode("utf-8", errors="ignore")
        return char[0].lower() if len(char) == 1 else ""

    def note(self) -> str | None:
        import tty

        self._restore()  # a note is typed as a line, with the terminal's own editing
        try:
            return input("note: ").strip()
        except EOFError:
            return None
        finally:
            tty.setcbreak(self.fd)


def keys_for(stream: IO[str]) -> Keys:
    """Single keys on a terminal, lines otherwise."""
    try:
        if stream.isatty():
            return TerminalKeys(stream.fileno())
    except (AttributeError, ValueError, OSError):
        pass
    return LineKeys(stream)


@dataclass
class Session:
    """What one labelling session did."""

    run: Path
    labels: Path
    total: int  # items in the selection
    done_before: int
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    quit: bool = False

    @property
    def labelled(self) -> int:
        return self.passed + self.failed


def select(run: JudgedRun, *, grader: str | None = None, disagreements_of: Path | None = None,
           sample: int | None = None, seed: int = 0) -> list[JudgedItem]:
    """The items to label: one grader's or all, only those another labels file disagrees with the judge on, and a
    random subset of `sample` items drawn with `seed` (the same seed draws the same items, so a session resumes)."""
    items = run.items
    if grader is not None:
        if grader not in run.graders:
            raise ConfigError(f"--grader {grader}: not a judge grader of {run.path} (its judges: "
                              f"{', '.join(run.graders)})")
        items = run.of(grader)
    if disagreements_of is not None:
        pairs, _ = match(run, read_labels(disagreements_of))
        wanted = {item.key for item, label in pairs if item.passed != label.passed}
        items = [item for item in items if item.key in wanted]
    if sample is not None and sample < len(items):
        chosen = sorted(random.Random(seed).sample(range(len(items)), sample))
        items = [items[i] for i in chosen]
    return items


def _cap(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def judge_prompt(item: JudgedItem) -> str:
    """The rubric as the judge was given it for this item (its criteria, the reference answer where the rubric
    reads one, the answer), with the data fences taken out for reading; empty when the run did not record it."""
    grade = item.result.grades.get(item.key.grader)
    if grade is None:
        return ""
    messages = grade.metadata.get("messages")
    if item.key.turn is not None:
        calls = grade.metadata.get("turn_calls")
        found = [c for c in calls if isinstance(c, dict) and c.get("turn") == item.key.turn] \
            if isinstance(calls, list) else []
        messages = found[0].get("messages") if found else None
    if not isinstance(messages, list):
        return ""
    texts = [str(m.get("content") or "") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return FENCE.sub("", "\n".join(texts)).strip()


def _turn_lines(index: int, turn: Turn, judged: bool) -> list[Text]:
    head = f"turn {index + 1}" + ("  ◀ judged" if judged else "")  # from 1, as the HTML report numbers turns
    lines = [Text(head, style="bold" if judged else "dim")]
    if turn.user is not None:
        lines.append(Text(f"  [user] {_cap(turn.user)}"))
    for step in turn.steps:
        for call in step.tool_calls:
            lines.append(Text(f"  [tool call] {call.name}({_cap(call.raw_arguments)})"))
            lines.append(Text(f"    → {_cap(call.result)}" + (" (error)" if call.is_error else ""), style="dim"))
        if step.content:
            lines.append(Text(f"  [assistant] {_cap(step.content)}"))
    return lines


def render_item(item: JudgedItem, position: int, total: int, run: JudgedRun, previous: Label | None) -> list[Text]:
    """What the person reads before answering."""
    key = item.key
    shown = (key.turn or 0) + 1  # from 1, as the HTML report numbers turns (the labels file keeps the 0-based index)
    what = {"sample": "the whole conversation", "turn": f"turn {shown}", "reply": f"reply {shown}"}[item.scope]
    repeat = f" · repeat {key.repeat}" if key.repeat else ""
    out = [Text(f"── item {position} of {total} · sample {key.sample_id}{repeat} · grader {key.grader} · judged: {what}",
                style="bold")]
    result = item.result
    out.append(Text(f"task: {_cap(result.input)}" if result.input else "task: (no input text)"))
    for message in result.trajectory.prefilled:
        if message.get("role") != "system":
            out.append(Text(f"  [{message.get('role', 'message')} · pre-filled] {_cap(str(message.get('content') or ''))}"))
    turns = item.conversation.turns
    for index, turn in enumerate(turns):
        out += _turn_lines(index, turn, judged=item.scope != "sample" and index == key.turn)
    if item.submission:
        out.append(Text(f"graded text: {_cap(item.submission)}"))
    prompt = judge_prompt(item)
    if prompt:
        out.append(Text("what the judge read (the rubric's criteria, with the reference answer where the rubric "
                        "gives one):", style="bold"))
        out.append(Text(_cap(prompt, MAX_PROMPT)))
    record = run.judges.get(key.grader)
    mark = f", passes at {SYMBOLS.get(record.op, record.op)} {record.mark:g}" if record is not None else ""
    style = "bold green" if item.passed else "bold red"
    out.append(Text(f"the judge: {item.verdict().upper()} (score {item.score:.2f}{mark}): {item.reason or 'no reason'}",
                    style=style))
    if previous is not None:
        out.append(Text(f"your label: {previous.label}" + (f" ({previous.note})" if previous.note else ""),
                        style="cyan"))
    out.append(Text(KEYS, style="dim"))
    return out


def _done(items: list[JudgedItem], labels: dict[tuple[str, int, str, int | None], Label], review: bool,
          same_file: bool) -> set[int]:
    """Positions already labelled: any label (a review written into another file: any label there), or in a review
    of the same file only the labels given while reviewing."""
    out = set()
    for i, item in enumerate(items):
        key = (item.key.sample_id, item.key.repeat, item.key.grader, item.key.turn)
        found = labels.get(key)
        if found is not None and (not review or found.review or not same_file):
            out.add(i)
    return out


def run_labeller(run_path: Path, *, labels_path: Path | None = None, grader: str | None = None,
                 disagreements_of: Path | None = None, sample: int | None = None, seed: int = 0,
                 keys: Keys | None = None, console: Console | None = None,
                 stdin: IO[str] | None = None) -> Session:
    """Label the selected items of a run, appending to `labels_path` (default RUN/labels.jsonl)."""
    run = load_judged_run(run_path)
    out_path = labels_path or run.path / LABELS_NAME
    console = console or Console(highlight=False)
    keys = keys or keys_for(stdin or sys.stdin)
    items = select(run, grader=grader, disagreements_of=disagreements_of, sample=sample, seed=seed)
    existing = read_labels(out_path, allow_empty=True).latest()
    review = disagreements_of is not None
    same = review and disagreements_of is not None and out_path.resolve() == disagreements_of.resolve()
    done = _done(items, existing, review, same)
    todo = [i for i in range(len(items)) if i not in done]
    session = Session(run_path, out_path, len(items), len(done))
    say: Callable[[str], None] = lambda text: console.print(Text(text), soft_wrap=not console.is_terminal)  # noqa: E731
    for warning in run.warnings:
        say(f"warning: {warning}")
    if not items:
        say("nothing to label: " + ("the labels file agrees with the judge on every item" if review
                                    else "no judged item matches the selection"))
        return session
    if done:
        say(f"resuming: {len(done)} of {len(items)} items are already labelled in {out_path}")
    if not todo:
        say(f"every one of the {len(items)} items is labelled in {out_path}")
        _closing(session, say)
        return session
    with keys if isinstance(keys, TerminalKeys) else contextlib.nullcontext():
        _label(session, run, items, todo, existing, keys, out_path, review, console)
    _closing(session, say)
    return session


def _count(session: Session, label: Label, before: Label | None) -> None:
    """A label counted in the session; a relabel (after going back) replaces the earlier one's count, as its line
    replaces the earlier line."""
    if before is not None:
        session.passed -= before.label == "pass"
        session.failed -= before.label == "fail"
    session.passed += label.label == "pass"
    session.failed += label.label == "fail"


def _label(session: Session, run: JudgedRun, items: list[JudgedItem], todo: list[int],
           existing: dict[tuple[str, int, str, int | None], Label], keys: Keys, out_path: Path, review: bool,
           console: Console) -> None:
    """The loop: show an item, read a key, act on it, until the items or the input run out, or q."""
    say: Callable[[str], None] = lambda text: console.print(Text(text), soft_wrap=not console.is_terminal)  # noqa: E731
    given: dict[int, Label] = {}
    position = 0
    shown = -1  # the position on screen: a note or an unknown key does not show the item again
    note = ""
    while position < len(todo):
        index = todo[position]
        item = items[index]
        key = (item.key.sample_id, item.key.repeat, item.key.grader, item.key.turn)
        if shown != position:
            for line in render_item(item, index + 1, len(items), run, given.get(index) or existing.get(key)):
                # a terminal wraps at word boundaries; a pipe or a file has no edge to wrap at
                console.print(line, soft_wrap=not console.is_terminal)
            shown = position
        try:
            answer = keys.key()
        except KeyboardInterrupt:
            answer = None
        if answer is None or answer == "q":  # q, the end of input, Ctrl-C or Ctrl-D: every label given is saved
            session.quit = True
            break
        if answer in ("p", "f"):
            label = label_for(run, item, answer == "p", note, review)
            append_label(out_path, label)
            _count(session, label, given.get(index))
            given[index] = label
            note = ""
            say(f"labelled {label.label}")
            position += 1
        elif answer == "s":
            session.skipped += 1
            note = ""
            position += 1
        elif answer == "b":
            note = ""
            if position == 0:
                say("this is the first item of the session")
                shown = -1
            position = max(position - 1, 0)
        elif answer == "n":
            text = keys.note()
            if text is None:
                session.quit = True
                break
            note = text
            say(f"note kept for this item's label: {note}")
        else:
            say(f"keys: {KEYS}")


def _closing(session: Session, say: Callable[[str], None]) -> None:
    labelled = session.done_before + session.labelled
    say(f"labelled {session.labelled} item{'s' if session.labelled != 1 else ''} in this session ({session.passed} "
        f"pass, {session.failed} fail, {session.skipped} skipped); {labelled} of {session.total} selected items are "
        f"labelled in {session.labels}")
    if session.labelled or session.done_before:
        own = session.labels.resolve() == (run_folder(session.run) / LABELS_NAME).resolve()
        extra = () if own else ("--labels", session.labels)
        say(f"next: {command('calibrate', session.run, *extra)}")
