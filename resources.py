"""Paths of the data bundled with the package (demo corpus, benchmarks, lexicons, studies)."""

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
"""The installed package: in a clone (an editable install) the clone itself."""
DATA_DIR = PACKAGE_DIR / "data"
DEMO_CORPUS = DATA_DIR / "demo" / "sotu.txt.xz"
BENCHMARK_DIR = DATA_DIR / "benchmarks"
LEXICON_DIR = DATA_DIR / "lexicons"
DEFAULT_STUDY = DATA_DIR / "studies" / "default.toml"
DOWNSTREAM_DIR = DATA_DIR / "downstream"
SENTENCES_DIR = DATA_DIR / "sentences"
