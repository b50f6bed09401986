"""The one guard around the suite's own Python code: custom extractors (`extractor: file.py:func`), `@grader`
functions, custom rewards (`gate: {kind: custom}`, letta-evals' `reward: {kind: custom}`) and python agents
(`target: {kind: python}`).

That code runs in our process, so left to itself it could end or hold the run: `sys.exit(0)` or `os._exit(0)`
left CI a 0 with no results and no summary, a `KeyboardInterrupt` it raised read as Ctrl-C (130, no summary),
and a `while True` ignored `--sample-timeout`, SIGINT and SIGTERM (the event loop that hears them never ran
again). Under this guard:

- **Exits raise.** While custom code can run (from its import to the end of the command), `os._exit`,
  `posix._exit` and `sys.exit` are replaced by functions that raise `ExitAttempt` (a SystemExit, so the code's
  own `except Exception` does not swallow it) when called from custom code: from a thread other than the main
  one (custom calls run in threads of their own, and so do the threads they start), or with a frame of a custom
  file on the stack (import time). The harness's own exit (the main thread, no custom frame) and a forked child
  (another pid) exit for real. The originals are put back when the last user of the guard leaves it (`evals`
  holds it for the whole command, so a thread custom code leaves running cannot exit the run later either).
- **Its failure is that sample's error.** `SystemExit` and `KeyboardInterrupt` raised inside custom code become
  `CustomCodeError` (category `custom_code`), naming the file:function and what it did; at import time a load
  error (exit 2). A real Ctrl-C during an import is told apart (a handler notes it) and stops the command.
- **Its time counts.** A call runs in a daemon thread of its own (an async function: on one event loop kept on a
  thread of its own for custom code), and the run's event loop only awaits it, up to the sample's deadline
  (`sample_timeout`, counted from the sample's start: `SAMPLE_DEADLINE`). Past it the sample errors, and the run
  goes on; the loop stays free meanwhile, so SIGINT and SIGTERM stop the run as they stop any run.

Why threads and not a subprocess, and what that leaves: a subprocess per call could be killed, but every call
would pickle the sample and the trajectory across a pipe, custom code could no longer keep state between calls (a
python agent's client, a module-level cache), and letta-evals' files expect to run in the evaluator's process.
Python cannot kill a thread, but it can raise in one: a sync call given up on (past the deadline, or cancelled
by Ctrl-C) gets `Abandoned` raised in its thread, which stops a pure-Python loop at its next instruction. Code
that catches BaseException and goes on, or waits in C (a socket, a sleep), runs on in its daemon thread until it
returns or the process exits: it never keeps the process alive and cannot change a result already written. An
async call given up on is cancelled; a coroutine that never awaits ignores that, so its loop is retired and
later calls get a fresh one. Code set on fooling its evaluator still can (`os.kill`, `os.abort`, an `atexit`
hook, ctypes); the guard makes sure that ordinary code ending, interrupting or hanging cannot make a run look
finished or passed.

An installed module named `module:attr` (`acme_graders.checks:fn`) is not a file of the suite: it is not
confined to the suite's folders, but it runs under the same guard (`import_module_guarded`), and `evals validate`
without --import-code only checks that it can be found (`find_module`, which imports nothing).

Which files may run at all is decided here too: a custom file must lie inside the suite's folder or a folder
the suite lists in `code_dirs` (or, for a python agent named by a `--target` file, that file's folder), as
dataset rows' rubric paths are confined; and `evals validate` only reads them (`check_source`) unless asked
with `--import-code` (`policy`).

One concern per module, each named here by what callers use (`custom_code.call`, `custom_code.policy`):
containment.py (exits refused, exits and interrupts made the sample's error), workers.py (the threads and the
loop a call runs on, bounded by the sample's time), code_policy.py (which files may run, and whether they run),
modules.py (installed modules: found without running, imported under the guard) and source.py (what reading a
file tells without running it).
"""

from evals_cli.custom_code.code_policy import CodePolicy, current_policy, locate, may_run, policy
from evals_cli.custom_code.containment import (
    CATEGORY,
    EXIT_GUARD,
    CustomCodeError,
    ExitAttempt,
    import_guarded,
    register_file,
    run_guarded,
    what_it_did,
)
from evals_cli.custom_code.modules import check_module, find_module, import_module_guarded, is_module_ref
from evals_cli.custom_code.source import PASS_THROUGH, StaticDef, check_source
from evals_cli.custom_code.workers import SAMPLE_DEADLINE, STUCK_AFTER_S, Abandoned, call

__all__ = [
    "CATEGORY", "EXIT_GUARD", "PASS_THROUGH", "SAMPLE_DEADLINE", "STUCK_AFTER_S", "Abandoned", "CodePolicy",
    "CustomCodeError", "ExitAttempt", "StaticDef", "call", "check_module", "check_source", "current_policy",
    "find_module", "import_guarded", "import_module_guarded", "is_module_ref", "locate", "may_run", "policy",
    "register_file", "run_guarded", "what_it_did",
]
