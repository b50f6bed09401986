"""The end of a byte stream (an agent's stderr), kept as lines in bounded memory whatever the lines' lengths."""

from __future__ import annotations

from collections import deque

TAIL_BYTES = 64 * 1024  # the whole tail, in bytes
TAIL_LINES = 40
LINE_BYTES = 4 * 1024  # the head kept of one line; the rest is counted and said


class ByteTail:
    """Fed chunks as they are read (never lines: a 5 MB line must not be buffered whole to be split), it keeps the
    last lines within TAIL_LINES and TAIL_BYTES, each line cut after LINE_BYTES with the cut said, so memory stays
    bounded and what follows a long line is kept."""

    def __init__(self, max_bytes: int = TAIL_BYTES, max_lines: int = TAIL_LINES, line_bytes: int = LINE_BYTES) -> None:
        self.max_bytes, self.max_lines, self.line_bytes = max_bytes, max_lines, line_bytes
        self.lines: deque[bytes] = deque()
        self.size = 0  # bytes held in self.lines
        self.current = bytearray()  # the head of the line being read
        self.cut = 0  # bytes of the current line past its head, dropped

    def feed(self, chunk: bytes) -> None:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            room = max(self.line_bytes - len(self.current), 0)
            self.current += chunk[start:min(stop, start + room)]
            self.cut += max(stop - start - room, 0)
            if end < 0:
                return
            self.lines.append(self._line())
            self.size += len(self.lines[-1])
            self.current, self.cut = bytearray(), 0
            while len(self.lines) > self.max_lines or self.size > self.max_bytes:
                self.size -= len(self.lines.popleft())
            start = end + 1

    def _line(self) -> bytes:
        head = bytes(self.current).rstrip(b"\r")
        return head + (f" … [cut {self.cut:,} bytes]".encode() if self.cut else b"")

    def text(self) -> str:
        """The tail, an unfinished last line included; bytes that are not UTF-8 (or a character cut in two) are
        replaced."""
        lines = list(self.lines) + ([self._line()] if self.current or self.cut else [])
        return "\n".join(line.decode("utf-8", "replace") for line in lines)
