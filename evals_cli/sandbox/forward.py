"""Inside a sandbox that has no network: a loopback port that leads to a Unix socket bind-mounted from the host,
so an agent exports its telemetry to `http://127.0.0.1:PORT` as it would anywhere, and reaches nothing else.

Run as `python3 -I -S forward.py PORT SOCKET -- PROGRAM ARGS...`: it listens on 127.0.0.1:PORT (before the
program starts, so the first export finds it), forks a server that copies every connection both ways to SOCKET,
and becomes PROGRAM. The server holds none of the program's stdio, and dies with the sandbox (the sandbox's
process tree, or its container, ends with the program). A standalone script: the standard library only, since
it runs under whatever Python the sandbox has."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading

CHUNK = 65536


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock in (sink, source):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: forward.py PORT SOCKET -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    port, path, program = int(argv[0]), argv[1], argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            _serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    for number in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them, and an exec would keep that
        signal.signal(number, signal.SIG_DFL)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"forward.py: cannot run {program[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
