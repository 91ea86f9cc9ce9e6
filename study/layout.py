"""Where a study writes what: the output folder's layout, in one place.

::

    study.toml                  the study as given
    caches/<teacher>/           teacher cache (extract; resumes after a crash)
    caches/<teacher>.json       its configuration hash, extract seconds and teacher tokens/s
    vectors/<name>/             every student and retrofit (native vectors folder; meta.json holds
                                the step's provenance, seconds, config and loss per epoch)
    eval/<name>.json            the scores of one vectors folder (on the items it covers) and their hash
    eval/<name>.common.json     its scores on the items every output covers (the report's main table)
    results.md, report.md, pairs.png, curves.png
    exports/<name>-m2v/         where the report's next command exports the output it recommends (the
                                study does not write it; inside a clone only runs/ takes outputs)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctx2static.errors import UserError
from ctx2static.fileio.reading import read_json


@dataclass(frozen=True)
class StudyLayout:
    """Paths inside one study's output folder."""

    root: Path

    @property
    def study_toml(self) -> Path:
        """The study file as given."""
        return self.root / "study.toml"

    @property
    def vectors_dir(self) -> Path:
        """Every output's folder."""
        return self.root / "vectors"

    def vectors(self, name: str) -> Path:
        """Output ``name`` (a student or a retrofit)."""
        return self.vectors_dir / name

    def export(self, name: str) -> Path:
        """Where the report's next command writes output ``name`` as a Model2Vec folder."""
        return self.root / "exports" / f"{name}-m2v"

    @property
    def caches(self) -> Path:
        """Every teacher's cache."""
        return self.root / "caches"

    def cache(self, teacher: str) -> Path:
        """The cache of ``teacher``."""
        return self.caches / teacher

    def cache_record(self, teacher: str) -> Path:
        """The JSON beside a cache: its configuration hash, the layers it reads, extract seconds, tokens/s."""
        return self.caches / f"{teacher}.json"

    def scores(self, name: str, common: bool = False) -> Path:
        """The scores of output ``name``: on the items it covers, or on the items every output covers."""
        return self.root / "eval" / f"{name}{'.common' * common}.json"

    @property
    def results(self) -> Path:
        """The results table (Markdown)."""
        return self.root / "results.md"

    @property
    def report(self) -> Path:
        """The report (Markdown)."""
        return self.root / "report.md"

    @property
    def pairs_png(self) -> Path:
        """The male/female pairs figure."""
        return self.root / "pairs.png"

    @property
    def curves_png(self) -> Path:
        """The training curves figure."""
        return self.root / "curves.png"


def read_record(path: Path) -> dict[str, Any]:
    """A JSON record beside an output; ``{}`` when it is missing or damaged (the step is then redone)."""
    if not path.is_file():
        return {}
    try:
        data = read_json(path)
    except UserError:
        return {}
    return data if isinstance(data, dict) else {}
