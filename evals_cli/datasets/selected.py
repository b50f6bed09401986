"""The rows a run will run, kept by the pass that checks every row, so that the run does not read the dataset
a second time.

The check pass must see every row before the first model call (a bad row 19,000 is exit 2, not a crash an
hour in), and a dataset of any size must stream in flat memory. Both hold: while the selected rows are few
(`KEEP_SAMPLES`, and `KEEP_BYTES` of JSONL text) the parsed samples themselves are kept and the run takes
them as they are; past that, only each selected JSONL row's place in the file (16 bytes a row) is kept, and
the run reads back just those rows, in order, one at a time. A CSV or JSON-array dataset past the bound is
read again whole (`rows()` is None), as every dataset was before.

Read back, a row is checked again, and a file whose size or modification time changed since the check is
refused (exit 2) before the first row is read back. A file rewritten while the run reads it (same size, or a
change the stamp misses) is caught row by row: past the bound each selected row keeps an 8-byte digest, and
every row read back (by span, or by the CSV/JSON-array read again) must match it; the first that does not stops
the run before that row is run (`DatasetChanged`: the run is aborted, exit 3, no verdict, the finished results
kept). So the run never runs a row the check did not see. A JSONL row's digest is that of its bytes as the
check pass read them (heard by `seen`): bytes read back the same are the row validated, so only parsed again,
not checked (a fifth of a replayed run's time went to checking each row twice). A CSV or JSON-array row, and
a row a target fills (a traces target: what it adds is not in the bytes), keeps the digest of the sample.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from pathlib import Path

from evals_cli.datasets.reader import RowFill, Span, span_row
from evals_cli.errors import ConfigError, DatasetChanged
from evals_cli.models.sample import Sample

KEEP_SAMPLES = 1_000  # parsed samples held at most (a small Sample takes about 2 KB, a large one some 10 KB)
KEEP_BYTES = 4 * 1024 * 1024  # JSONL text behind them at most (a few rows with big environments)


class SelectedRows:
    """Fill with `add` during the check pass (in dataset order, only the rows the run will run); then `rows()`."""

    def __init__(self, path: Path, fill: RowFill | None = None) -> None:
        self.path = path
        self.fill = fill  # what the target adds to a row (a traces target), as the check pass added it
        stat = path.stat()
        self._stamp = (stat.st_size, stat.st_mtime_ns)  # taken before the check pass reads the file
        self.samples: list[Sample] | None = []
        self._offsets = array("Q")
        self._lengths = array("Q")
        self._numbers = array("Q")
        self._spanned = True  # every row so far has a span (JSONL)
        self._bytes = 0
        self.count = 0
        self._rows = array("Q")  # past the bound: each selected row's digest, in order (see the module)
        self._held: list[int | None] = []  # beside `samples`: each held JSONL row's digest (None: the sample's)
        self._digest = hashlib.sha256()
        self._heard: tuple[int, bytes] | None = None  # the line `seen` heard last (offset, bytes)

    def seen(self, raw: bytes, offset: int) -> None:
        """Every byte of the file as the check pass reads it: the dataset's digest (the run's fingerprint) comes
        from that same read, and so does each JSONL row's (the last line heard is the row `add` gets next)."""
        self._digest.update(raw)
        self._heard = (offset, raw)

    @property
    def _by_bytes(self) -> bool:
        """Rows read back are compared by their bytes (JSONL, no fill), not by the sample they make."""
        return self.fill is None and self._spanned

    @property
    def digest(self) -> str:
        """The file's digest as `output.fingerprint.file_digest` gives it, from the check pass's read."""
        return self._digest.hexdigest()[:16]

    def add(self, sample: Sample, span: Span | None) -> None:
        self.count += 1
        digest: int | None = None
        if span is None:
            if self._offsets:  # one file is one format: JSONL rows all have a span, the others none
                raise ValueError("SelectedRows.add: a row without a span after rows with one")
            self._spanned = False
        else:
            self._offsets.append(span[0])
            self._lengths.append(span[1])
            self._numbers.append(span[2])
            self._bytes += span[1]
            if self.fill is None:
                heard = self._heard
                if heard is None or heard[0] != span[0] or len(heard[1]) != span[1]:
                    raise ValueError("SelectedRows.add: a JSONL row's bytes must be heard by `seen` first")
                digest = _bytes_digest(heard[1])
        if self.samples is not None:
            if len(self.samples) < KEEP_SAMPLES and self._bytes <= KEEP_BYTES:
                self.samples.append(sample)
                self._held.append(digest)
                return
            self._rows.extend(_row_digest(s) if d is None else d for s, d in zip(self.samples, self._held,
                                                                                 strict=True))
            self.samples, self._held = None, []  # too many to hold: read back by span, or read again
        self._rows.append(_row_digest(sample) if digest is None else digest)

    @property
    def kept(self) -> bool:
        """The parsed samples are held: the run reads nothing."""
        return self.samples is not None

    def rows(self) -> Iterator[Sample] | None:
        """The selected samples in dataset order: held, or read back by span (ConfigError when the file changed
        since it was checked); None when neither (a large CSV or JSON-array selection: read the file again)."""
        if self.samples is not None:
            return iter(self.samples)
        if not self._spanned:
            return None
        self.unchanged()
        return self._read_back()

    def unchanged(self) -> None:
        """ConfigError unless the file is as the check pass found it (size and modification time)."""
        try:
            stat = self.path.stat()
        except OSError as exc:
            raise ConfigError(f"{self.path}: the dataset cannot be read any more ({type(exc).__name__}); it was "
                              "checked when the run started") from None
        if (stat.st_size, stat.st_mtime_ns) != self._stamp:
            raise ConfigError(f"{self.path}: the dataset changed after its rows were checked; no row was run from "
                              "it: start the run again")

    def _read_back(self) -> Iterator[Sample]:
        by_bytes = self._by_bytes
        with self.path.open("rb") as fh:
            for index, span in enumerate(zip(self._offsets, self._lengths, self._numbers, strict=True)):
                where = f"{self.path}:{span[2]}"
                if fh.tell() != span[0]:
                    fh.seek(span[0])
                raw = fh.read(span[1])
                if by_bytes and (index >= len(self._rows) or self._rows[index] != _bytes_digest(raw)):
                    raise DatasetChanged(_changed(where))
                try:
                    sample = span_row(self.path, span, raw, self.fill, checked=by_bytes)
                except ConfigError as exc:  # no longer a valid row: the file changed since it was checked
                    raise DatasetChanged(exc.problems) from None
                yield sample if by_bytes else self.checked(index, sample, where)

    def checked(self, index: int, sample: Sample, where: str) -> Sample:
        """`sample`, read again as the `index`-th selected row at `where`, when it is the row the check pass
        validated there; else DatasetChanged (the file changed after it was checked)."""
        if index >= len(self._rows) or self._rows[index] != _row_digest(sample):
            raise DatasetChanged(_changed(where))
        return sample

    def all_checked(self, count: int) -> None:
        """DatasetChanged when a read again yielded fewer selected rows (`count`) than the check pass selected."""
        if count < len(self._rows):
            raise DatasetChanged(f"{self.path}: the dataset changed after its rows were checked ({count} of the "
                                 f"{len(self._rows)} selected rows are left); start the run again")


def _row_digest(sample: Sample) -> int:
    """8 bytes standing for a validated row (the run compares each row it reads back with the checked one)."""
    text = sample.model_dump_json().encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def _bytes_digest(raw: bytes) -> int:
    """8 bytes standing for a JSONL row's bytes as read (the row validated there, when the bytes are the same)."""
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little")


def _changed(where: str) -> str:
    return (f"{where}: the dataset changed after its rows were checked (this row is not the one the check read); "
            "the run stopped before running it: start the run again")
