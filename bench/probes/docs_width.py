"""Every page of the built site in a real browser at a given window width: does anything run out of view?

    mkdocs build --strict --site-dir /tmp/site
    python bench/probes/docs_width.py /tmp/site --width 1280 --out bench/results/docs_width.md

Each page is copied with a script that, once the page has loaded, measures in the browser's own
layout (headless Chromium, ``apt install chromium``) the page's width against the window's and every
table's right edge against the window's, and says whether a table that runs past it sits in a box
that scrolls sideways. A page passes when the page itself is no wider than the window and no table
runs past the window outside such a box.
"""

from __future__ import annotations

import argparse
import datetime
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line

CHECK = """<script>
window.addEventListener('load', () => {
  const vw = document.documentElement.clientWidth, wide = [];
  document.querySelectorAll('table').forEach((t, i) => {
    const right = t.getBoundingClientRect().right;
    if (right <= vw + 1) return;
    let box = t.parentElement, scrolls = false;
    for (; box && box !== document.body; box = box.parentElement) {
      const x = getComputedStyle(box).overflowX;
      if ((x === 'auto' || x === 'scroll') && box.clientWidth <= vw) { scrolls = true; break; }
    }
    wide.push({table: i, right: Math.round(right), scrolls});
  });
  document.body.setAttribute('data-width-check',
    JSON.stringify({window: vw, page: document.documentElement.scrollWidth,
                    tables: document.querySelectorAll('table').length, wide}));
});
</script>"""


def measure(page: Path, width: int) -> dict:
    """What the script above reports for ``page`` in Chromium at ``width`` px."""
    dom = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={width},900",
            "--virtual-time-budget=3000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    found = re.search(r'data-width-check="([^"]*)"', dom)
    return json.loads(html.unescape(found.group(1))) if found else {"error": "no report (page did not load)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", type=Path, help="a folder written by mkdocs build")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if shutil.which("chromium") is None:
        sys.exit("chromium is not installed: apt install chromium")
    rows, failing = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "site"
        shutil.copytree(args.site, copy)
        pages = sorted(copy.rglob("index.html"))
        for page in pages:
            page.write_text(page.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), "utf-8")
        for page in pages:
            r = measure(page, args.width)
            out = [w for w in r.get("wide", []) if not w["scrolls"]]
            ok = "error" not in r and r["page"] <= r["window"] and not out
            failing += not ok
            name = str(page.parent.relative_to(copy)) or "(front page)"
            detail = r.get("error") or f"{r['tables']} tables, {len(r['wide'])} wider than the window"
            widths = f"{r.get('page', '-')} / {r.get('window', '-')}"
            rows.append(f"| {name} | {widths} | {detail} | {'yes' if ok else 'NO'} |")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    text = [
        f"# The site at {args.width} px in a real browser (headless Chromium)",
        "",
        f"Date: {stamp}. Command (repository root, after `mkdocs build --strict --site-dir SITE`): "
        f"`{argv_line(['python', *(('SITE' if a == str(args.site) else a) for a in sys.argv)])}`.",
        "",
        f"**{len(rows) - failing} of {len(rows)} pages pass**: the page no wider than the window and no "
        "table past the window's right edge outside a box that scrolls sideways.",
        "",
        "| page | page / window width (px) | tables | passes |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
    args.out.write_text("\n".join(text), encoding="utf-8")
    print(f"{len(rows) - failing}/{len(rows)} pages pass -> {args.out}")


if __name__ == "__main__":
    main()
