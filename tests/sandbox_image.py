"""The test image of the docker-kind tests, made from this machine's own programs (no registry is reachable from
CI): /bin/sh, a few coreutils and python3 with its standard library, with the libraries they load, imported into
the engine as `localhost/evals-test-sandbox:<digest>`. The digest is of the files' paths, sizes and times, so the
image is made once per machine and remade when the system's programs change."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PROGRAMS = ["sh", "dash", "sleep", "cat", "ls", "id", "head", "yes", "env", "rm", "mkdir", "echo", "true"]
SKIPPED = {"test", "tests", "__pycache__", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
           "dist-packages", "site-packages", "config-3.11-x86_64-linux-gnu"}


def _python() -> Path | None:
    found = Path("/usr/bin/python3")
    return found.resolve() if found.exists() else None


def _libraries(binaries: list[Path]) -> set[Path]:
    """The shared libraries the binaries load, and the dynamic loader, by `ldd`."""
    found: set[Path] = set()
    for chunk in range(0, len(binaries), 50):
        done = subprocess.run(["ldd", *map(str, binaries[chunk:chunk + 50])], capture_output=True, text=True,
                              check=False)
        for line in done.stdout.splitlines():
            parts = line.split()
            for part in parts:
                if part.startswith("/") and Path(part).exists():
                    found.add(Path(part))
    return found


def _files() -> list[Path]:
    binaries = [Path(p) for name in PROGRAMS if (p := _which(name))]
    python = _python()
    files: list[Path] = list(binaries)
    if python is not None:
        files.append(python)
        binaries.append(python)
        stdlib = Path(f"/usr/lib/python{python.name.removeprefix('python')}")
        for current, dirs, names in os.walk(stdlib):
            dirs[:] = [d for d in dirs if d not in SKIPPED]
            files += [Path(current) / n for n in names if not n.endswith(".pyc")]
        binaries += [f for f in files if f.suffix == ".so"]
    files += sorted(_libraries(binaries))
    placed: set[Path] = set()
    for path in files:  # by their real folders (the top-level links are links in the image too), links followed
        placed.add(Path(os.path.realpath(path.parent)) / path.name)
        placed.add(path.resolve())
    return sorted(placed)


def _which(name: str) -> str | None:
    for folder in ("/usr/bin", "/bin"):
        if os.access(f"{folder}/{name}", os.X_OK):
            return str(Path(f"{folder}/{name}").resolve())
    return None


def _digest(files: list[Path]) -> str:
    sha = hashlib.sha256()
    for path in files:
        stat = path.stat()
        sha.update(f"{path} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return sha.hexdigest()[:16]


def _tarball(files: list[Path], out: Path) -> None:
    def folder(tar: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.mode = tarfile.DIRTYPE, mode
        tar.addfile(info)

    def text(tar: tarfile.TarFile, name: str, data: str) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data.encode()), 0o644
        tar.addfile(info, io.BytesIO(data.encode()))

    with tarfile.open(out, "w") as tar:
        for name in ("usr", "usr/bin", "usr/lib", "etc", "workspace", "run", "proc", "dev", "sys"):
            folder(tar, name)
        folder(tar, "tmp", 0o1777)
        for name in ("bin", "lib", "lib64", "sbin"):
            if Path(f"/{name}").is_symlink():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(f"/{name}")
                tar.addfile(info)
        for path in files:
            tar.add(str(path), arcname=str(path).lstrip("/"), recursive=False)
        for name in PROGRAMS:  # the names the programs are called by, where the resolved file is named otherwise
            real = _which(name)
            if real and Path(real).name != name:
                info = tarfile.TarInfo(f"usr/bin/{name}")
                info.type, info.linkname = tarfile.SYMTYPE, real
                tar.addfile(info)
        python = _python()
        if python is not None:
            info = tarfile.TarInfo("usr/bin/python3")
            info.type, info.linkname = tarfile.SYMTYPE, str(python)
            tar.addfile(info)
        text(tar, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
        text(tar, "etc/group", "root:x:0:\nnogroup:x:65534:\n")


def test_image(engine: str) -> str:
    """The test image's name, imported into `engine` when it is not there yet."""
    files = _files()
    name = f"localhost/evals-test-sandbox:{_digest(files)}"
    if subprocess.run([engine, "image", "exists", name], capture_output=True, check=False).returncode == 0:
        return name
    with tempfile.TemporaryDirectory() as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        _tarball(files, tarball)
        done = subprocess.run([engine, "import", str(tarball), name], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{engine} import failed: {done.stderr.strip()[-500:]}")
    return name


if __name__ == "__main__":
    print(test_image(sys.argv[1] if len(sys.argv) > 1 else "podman"))
