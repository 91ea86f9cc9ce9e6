"""Which `--layer` per teacher: the summary table of several `layer_ase_sweep.py` results files.

    python bench/probes/layers_summary.py bench/results/layers_smollm2.md bench/results/layers_gemma3.md \\
        bench/results/layers_mpnet.md bench/results/layers_smollm2_z.md bench/results/layers_gemma3_z.md \\
        --out bench/results/layers_by_family.md

Reads each file's `ase` and `word` tables (as `layer_ase_sweep.py` writes them) and writes, per file
and table, avg5 / sim+ana of the bands every sweep has (`0`, `1:`, the first half, the middle third,
the last layer), of the best single layer and of the best spec by each criterion. A closing section
headed "## What it means" in an existing ``--out`` is written by hand: it is kept as it is, below the
regenerated tables (check it against the new numbers).
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, hand_section

# the summary's band columns: a spec, or a label the sweep gives the spec made for the teacher's depth
BANDS: tuple[tuple[str | None, str | None], ...] = (
    ("0", None),
    ("1:", None),
    (None, "first half"),
    (None, "middle third"),
)


@dataclass
class Row:
    """One spec of a sweep's table."""

    spec: str
    label: str
    z: bool
    avg5: float
    sim_ana: float


@dataclass
class Sweep:
    """One `layer_ase_sweep.py` results file."""

    path: Path
    teacher: str
    hidden: int
    command: str
    date: str
    tables: dict[str, list[Row]]


def _table(lines: list[str]) -> list[Row]:
    """The spec rows of one markdown table (its header names the columns)."""
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.match(r"`([^`]*)`\s*(.*)$", cells[0])
        if not m:
            continue  # the coverage row
        label = m.group(2).strip()
        z = label == "z" or label.endswith(" z")
        values = dict(zip(header, cells, strict=True))
        rows.append(
            Row(
                m.group(1),
                label.removesuffix("z").strip() if z else label,
                z,
                float(values["avg5"]),
                float(values["sim+ana"]),
            )
        )
    return rows


def read_sweep(path: Path) -> Sweep:
    """A sweep's teacher, depth, command, date and its `ase` and `word` tables."""
    text = path.read_text()
    title = re.search(r"^# .*: (\S+)\s*$", text, re.M)
    hidden = re.search(r"Teacher: (\d+) hidden states", text)
    command = re.search(r"Command \(repository root\): `([^`]*)`", text)
    date = re.search(r"^Date: (\S+?)\.", text, re.M)
    if not (title and hidden and command and date):
        raise SystemExit(f"{path}: not a layer_ase_sweep.py results file (no title, date, command or depth)")
    tables: dict[str, list[Row]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        section = re.match(r"^#+ (ase|word)\s*$", line)
        if section:
            start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("|"))
            end = next((j for j in range(start, len(lines)) if not lines[j].startswith("|")), len(lines))
            tables[section.group(1)] = _table(lines[start:end])
    return Sweep(path, title.group(1), int(hidden.group(1)), command.group(1), date.group(1), tables)


def _cell(row: Row | None, named: bool = False) -> str:
    if row is None:
        return ""
    z = " z" if row.z else ""
    return (
        (f"`{row.spec}`{z}: " if named else "") + f"{row.avg5:.1f} / {row.sim_ana:.1f}" + ("" if named else z)
    )


def summary_rows(sweep: Sweep, table: str) -> str:
    """One summary row: the bands, the last layer, the best single layer and the best spec per criterion."""
    rows = sweep.tables[table]

    def band(spec: str | None, label: str | None) -> Row | None:
        return next((r for r in rows if (spec and r.spec == spec) or (label and label in r.label)), None)

    cells = [_cell(band(spec, label)) for spec, label in BANDS]
    cells.append(_cell(band(str(sweep.hidden - 1), None)))
    singles = [r for r in rows if r.spec.isdigit() and r.spec != "0"]
    cells.append(_cell(max(singles, key=lambda r: r.avg5), named=True) if singles else "")
    cells.append(_cell(max(rows, key=lambda r: r.avg5), named=True))
    cells.append(_cell(max(rows, key=lambda r: r.sim_ana), named=True))
    z = " z-scored" if any(r.z for r in rows) else ""
    return f"| {sweep.teacher}{z} ({sweep.hidden}) | " + " | ".join(cells) + " |"


def render(sweeps: list[Sweep], command: str, hand: str) -> str:
    """The whole results file: sources, one table per student table, the hand-written reading if any."""
    lines = [
        "# Which `--layer` per teacher: the one-pass probe's results, summarised",
        "",
        f"Written by `bench/probes/layers_summary.py` ({datetime.date.today().isoformat()}) from the files "
        "below, each written by `bench/probes/layer_ase_sweep.py` (re-run those, then this). Command:",
        "",
        f"    {command}",
        "",
        "| file | date | its command |",
        "|---|---|---|",
        *[f"| `{s.path.name}` | {s.date} | `{s.command}` |" for s in sweeps],
        "",
        "Each cell: avg5 (Spearman x100) / sim+ana ((avg5 + mean of Google and MSR 3CosAdd) / 2), as in "
        'the files; "z": the spec\'s table was z-scored (`--standardize auto`). Teacher (hidden states); '
        "first half and middle third: the specs the sweep labels so; last: the last hidden state; best: "
        "the highest of the file's specs (single layers: the best hidden state but the embeddings).",
    ]
    header = (
        "| teacher (hidden states) | `0` (embeddings) | `1:` | first half | middle third | last "
        "| best single layer | best by avg5 | best by sim+ana |"
    )
    for table in ("ase", "word"):
        present = [s for s in sweeps if table in s.tables]
        if present:
            lines += [
                "",
                f"## {table}",
                "",
                header,
                "|---|" + "---|" * 8,
                *[summary_rows(s, table) for s in present],
            ]
    text = "\n".join(lines) + "\n"
    return text + ("\n" + hand if hand else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="layer_ase_sweep.py results files.")
    ap.add_argument("--out", type=Path, help="Write the summary here (else print it).")
    args = ap.parse_args()
    sweeps = [read_sweep(p) for p in args.files]
    command = "python bench/probes/layers_summary.py " + argv_line(sys.argv[1:])
    text = render(sweeps, command, hand_section(args.out) if args.out else "")
    if args.out:
        args.out.write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
