"""Where corpus text comes from: files and folders resolved to sources, and each record format streamed.

A source is a text file (plain or .gz/.xz/.bz2), a JSON-lines, CSV/TSV or Parquet file, or a
dataset written by ``datasets``' ``save_to_disk`` (a folder with ``state.json``; its Arrow files
are read with pyarrow, so ``datasets`` itself is not needed). Folders are searched recursively,
in name order, for all of these (hidden names skipped). The format comes from the name; an
ambiguous one (``.json``, or a folder of files without suffixes) takes ``--corpus-format``.

Records are streamed (lines, CSV rows, Parquet and Arrow record batches): nothing holds a whole
file, and a record over :data:`RECORD_BYTES` is refused. A record without the text field, or whose
field is not text, is a one-line error naming the file, the row and the field; so is one that
cannot be a record: a CSV quote never closed (it would swallow the rest of the file as one field),
a JSON line nested too deep or with a number too long to read, or a lone UTF-16 surrogate (an
escaped U+D800 to U+DFFF without its pair), which is no character and is refused like bad UTF-8.
A UTF-8 byte order mark opening a file is dropped.
"""

from __future__ import annotations

import csv
import enum
import hashlib
import io
import json
import lzma
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ctx2static.errors import InputError, spell
from ctx2static.fileio.digests import sha256_file
from ctx2static.fileio.reading import COMPRESSED, open_compressed, read_json, read_lines, require_file

RECORD_BYTES = 64 << 20  # a JSON line or CSV field longer than this is refused (no record costs more)
BATCH_ROWS = 256  # Parquet / Arrow rows read at a time
_UNREADABLE = (OSError, EOFError, lzma.LZMAError, zlib.error)  # a damaged file or archive


class CorpusFormat(str, enum.Enum):
    """How a corpus file is read."""

    AUTO = "auto"  # from the name
    TEXT = "text"
    JSONL = "jsonl"
    CSV = "csv"
    PARQUET = "parquet"
    DATASETS = "datasets"


_SUFFIXES = {
    ".txt": CorpusFormat.TEXT,
    ".jsonl": CorpusFormat.JSONL,
    ".ndjson": CorpusFormat.JSONL,
    ".csv": CorpusFormat.CSV,
    ".tsv": CorpusFormat.CSV,
    ".parquet": CorpusFormat.PARQUET,
}
TEXT_EXPECT = "UTF-8 text (plain, .gz, .xz or .bz2)"


@dataclass(frozen=True)
class Source:
    """One file (or saved dataset) of a corpus and its format."""

    path: Path
    format: CorpusFormat

    @property
    def key(self) -> tuple[int, int]:
        """Device and inode: one file (or dataset folder) under any name, link or folder."""
        st = self.path.stat()
        return st.st_dev, st.st_ino

    @property
    def records(self) -> bool:
        """Whether it holds records with a text field (else it is plain text)."""
        return self.format is not CorpusFormat.TEXT

    def digest(self) -> str:
        """sha256 of the file (of a saved dataset: of its data files' names and digests)."""
        if self.format is not CorpusFormat.DATASETS:
            return sha256_file(self.path)
        h = hashlib.sha256()
        for f in _arrow_files(self.path):
            h.update(f"{f.name}\t{sha256_file(f)}\n".encode())
        return h.hexdigest()


def _stem(path: Path) -> str:
    name = path.name.lower()
    for suffix in COMPRESSED:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def format_of(path: Path) -> CorpusFormat | None:
    """The format ``path``'s name says (through a compression suffix); None when it says none."""
    if path.is_dir():
        return CorpusFormat.DATASETS if (path / "state.json").is_file() else None
    return _SUFFIXES.get(Path(_stem(path)).suffix)


def find_sources(
    paths: Iterable[str | os.PathLike], forced: CorpusFormat = CorpusFormat.AUTO
) -> list[Source]:
    """The sources of the ``--corpus`` paths: files as named, folders searched (module docstring)."""
    out: list[Source] = []
    for p in map(Path, paths):
        if p.is_dir() and (p / "dataset_dict.json").is_file():
            splits = sorted(q.name for q in p.iterdir() if (q / "state.json").is_file())
            raise InputError(
                p,
                f"{p}: a saved DatasetDict (splits: {', '.join(splits) or 'none'}); pass the split "
                f"to read, e.g. {spell('corpus', p / (splits[0] if splits else 'train'))}",
            )
        if p.is_dir() and not (p / "state.json").is_file():
            found = _walk(p, forced)
            if not found:
                raise InputError(
                    p,
                    f"{p}: no corpus files in this folder (.txt, .jsonl, .csv, .tsv, .parquet, plain "
                    f"or compressed, or saved datasets); pass {spell('corpus_format')} to read files of "
                    "another name",
                )
            out += found
        elif p.exists():
            if not p.is_dir():  # a saved dataset is a folder
                require_file(p, "corpus files or folders")
            out.append(Source(p, _named_format(p, forced)))
        else:
            raise InputError(p, f"{p}: no such file or folder; pass existing corpus files or folders")
    return out


def _named_format(path: Path, forced: CorpusFormat) -> CorpusFormat:
    """A file named on the command line: its name's format, else text (``.json`` is ambiguous)."""
    if forced is not CorpusFormat.AUTO:
        return forced
    fmt = format_of(path)
    if fmt is None and Path(_stem(path)).suffix == ".json":
        raise InputError(
            path,
            f"{path}: .json may be JSON lines or one JSON document; pass {spell('corpus_format', 'jsonl')}",
        )
    return fmt or CorpusFormat.TEXT


def _walk(folder: Path, forced: CorpusFormat) -> list[Source]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(root)
        if (here / "state.json").is_file() and here != folder:
            out.append(Source(here, CorpusFormat.DATASETS))
            dirs[:] = []
            continue
        for name in sorted(f for f in files if not f.startswith(".")):
            fmt = forced if forced is not CorpusFormat.AUTO else format_of(here / name)
            if fmt is not None and fmt is not CorpusFormat.DATASETS:
                out.append(Source(here / name, fmt))
    return out


def records(source: Source, field: str) -> Iterator[tuple[int, str]]:
    """``(row, text)`` of every record of a JSON-lines, CSV, Parquet or saved-datasets source, streamed."""
    readers = {
        CorpusFormat.JSONL: _jsonl,
        CorpusFormat.CSV: _csv,
        CorpusFormat.PARQUET: _parquet,
        CorpusFormat.DATASETS: _datasets,
    }
    yield from readers[source.format](source.path, field)


def _missing(path: Path, row: int, field: str, value: object) -> InputError:
    """A row of ``path`` without text in ``field``: the option that names another field."""
    what = "has no field" if value is None else f"holds {type(value).__name__}, not text, in field"
    return InputError(
        path,
        f"{path}: row {row} {what} '{field}'; pass {spell('text_field', 'NAME')} of the field that holds "
        "the text in every row, or drop such rows",
    )


def _jsonl(path: Path, field: str) -> Iterator[tuple[int, str]]:
    expect = "JSON lines, one object a line"
    last = 0
    for n, line in read_lines(path, expect, limit=RECORD_BYTES):
        if n == last:
            raise InputError(
                path, f"{path}: row {n} is longer than {RECORD_BYTES >> 20} MiB; split that record"
            )
        last = n
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"{path}: row {n} is not JSON ({exc.msg}); pass {expect}") from None
        except RecursionError:
            raise InputError(
                path, f"{path}: row {n} is nested too deep to read; fix or drop that row"
            ) from None
        except ValueError:  # an integer over the interpreter's digit limit
            raise InputError(
                path,
                f"{path}: row {n} holds a number of over {sys.get_int_max_str_digits():,} digits; "
                "fix or drop that row",
            ) from None
        value = obj.get(field) if isinstance(obj, dict) else None
        if not isinstance(value, str):
            raise _missing(path, n, field, value)
        if "\\u" in line:  # only an escape can make a surrogate
            _no_surrogate(path, n, value)
        yield n, value


def _no_surrogate(path: Path, row: int, text: str) -> None:
    """Refuse a lone UTF-16 surrogate: no character, it cannot be written as UTF-8 later."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            path,
            f"{path}: row {row} holds a lone surrogate (\\u{ord(text[exc.start]):x}), which is no character; "
            "fix or drop that row",
        ) from None


def _csv(path: Path, field: str) -> Iterator[tuple[int, str]]:
    """Rows of a CSV/TSV file; a quote never closed or a field over RECORD_BYTES is refused at its row.

    ``strict``: a field that opens a quote must close it before the next delimiter or the file's
    end, so a stray quote cannot swallow the rows after it into one field.
    """
    csv.field_size_limit(RECORD_BYTES)  # a longer field is an error, not an unbounded allocation
    delimiter = "\t" if _stem(path).endswith(".tsv") else ","
    row, line = 0, 1
    try:
        with io.TextIOWrapper(open_compressed(path), encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, strict=True)
            header = next(reader, [])
            if field not in header:
                raise InputError(
                    path,
                    f"{path}: row 0 (the header) has no field '{field}' (fields: {', '.join(header[:10])}); "
                    f"pass {spell('text_field', 'NAME')}",
                )
            col = header.index(field)
            line = reader.line_num + 1
            for row, values in enumerate(reader, 1):
                if col >= len(values):
                    raise _missing(path, row, field, None)
                yield row, values[col]
                line = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(
            path,
            f"{path}: row {row + 1} (from line {line}) is not CSV ({exc}), e.g. a quote never closed; "
            'fix that row (a quote inside a field is written "")',
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(
            path,
            f"{path}: near row {row + 1}, not valid UTF-8 ({exc.reason}); "
            "convert the file first, e.g. iconv -f latin1 -t utf-8",
        ) from None
    except _UNREADABLE as exc:
        raise InputError(
            path,
            f"{path}: cannot decompress or read it near row {row + 1} ({exc}); check the file is complete",
        ) from None


def _batches_text(path: Path, field: str, batches: Iterable) -> Iterator[tuple[int, str]]:
    """``(row, text)`` from Arrow record batches (a null or non-text value is an error)."""
    import pyarrow as pa

    row = 0
    for batch in batches:
        if field not in batch.schema.names:
            raise InputError(
                path,
                f"{path}: row {row + 1} has no field '{field}' "
                f"(fields: {', '.join(batch.schema.names[:10])}); pass {spell('text_field', 'NAME')}",
            )
        column = batch.column(field)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            raise InputError(
                path,
                f"{path}: field '{field}' holds {column.type}, not text (row {row + 1}); "
                f"pass {spell('text_field', 'NAME')}",
            )
        for value in column.to_pylist():
            row += 1
            if value is None:
                raise _missing(path, row, field, None)
            yield row, value


def _parquet(path: Path, field: str) -> Iterator[tuple[int, str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        columns = [field] if field in pf.schema_arrow.names else None
        yield from _batches_text(path, field, pf.iter_batches(batch_size=BATCH_ROWS, columns=columns))
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            path, f"{path}: cannot read it as Parquet ({exc}); check the file is complete"
        ) from None


def _arrow_files(folder: Path) -> list[Path]:
    state = read_json(folder / "state.json", fix="save the dataset again with save_to_disk")
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, dict) and "filename" in f for f in files):
        raise InputError(
            folder / "state.json", f"{folder / 'state.json'}: no _data_files list; save the dataset again"
        )
    names = [str(f["filename"]) for f in files]
    if any(Path(n).name != n or n.startswith(".") for n in names):
        raise InputError(
            folder / "state.json",
            f"{folder / 'state.json'}: data file names must be plain names inside the folder",
        )
    return [folder / n for n in names]


def _datasets(folder: Path, field: str) -> Iterator[tuple[int, str]]:
    import pyarrow as pa

    def batches() -> Iterator:
        for f in _arrow_files(folder):
            with pa.OSFile(str(f), "rb") as fh:
                yield from pa.ipc.open_stream(fh)

    try:
        yield from _batches_text(folder, field, batches())
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            folder, f"{folder}: cannot read its Arrow files ({exc}); save the dataset again"
        ) from None
