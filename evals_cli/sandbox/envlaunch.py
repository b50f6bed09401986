"""Starts a sandbox's entry program (bwrap, or the engine's client) with an environment read from a file, so the
values a suite's `target.env` holds (an API key) are never on a host command line, which every local user may
read (ps, /proc/*/cmdline).

Run as `python3 -I -S envlaunch.py FILE MODE -- PROGRAM ARGS...`: FILE (mode 0600, NUL-separated `KEY=VALUE`) is
read and removed, then PROGRAM becomes this process with exactly those variables (MODE `exact`) or with them over
its own (MODE `merge`). A standalone script: the standard library only."""

from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--" or argv[1] not in ("exact", "merge"):
        print("usage: envlaunch.py FILE exact|merge -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    path, mode, program = argv[0], argv[1], argv[3:]
    with open(path, "rb") as fh:
        data = fh.read()
    os.unlink(path)
    given = dict(item.split("=", 1) for item in data.decode("utf-8").split("\0") if item)
    env = given if mode == "exact" else {**os.environ, **given}
    for number in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them, and an exec would keep that
        signal.signal(number, signal.SIG_DFL)
    try:
        os.execvpe(program[0], program, env)
    except OSError as exc:
        print(f"envlaunch.py: cannot run {program[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
