"""Screenshots of evbench's pages in headless Chromium, for a person to look at (not a test;
the Chromium tests check what can be checked). Each page is laid out at each width in a
900 px high window and shot whole through tests/chromium.py:

    .venv/bin/python tests/screenshots.py --out shots results/run/report.html trends/trends.html

writes shots/report-1400.png, shots/report-800.png, ..., one line per shot. Exit 1 when a
page logged an error or an image did not decode (the shots are written all the same).
"""

import argparse
import sys
import tempfile
from pathlib import Path

from chromium import open_page

WIDTHS = (1400, 800)  # a desktop and a half-screen window
HEIGHT = 900  # the window's; the shot holds the whole page whatever its length


def shoot(page: Path, out: Path, width: int) -> tuple[Path, list[str]]:
    """`page` laid out `width` px wide, saved whole to `out`; what went wrong on it."""
    with tempfile.TemporaryDirectory(prefix="evbench-shot-") as profile:
        shown = open_page(page, Path(profile), screenshot=True, viewport=(width, HEIGHT))
    path = out / f"{page.stem}-{width}.png"
    path.write_bytes(shown.screenshot or b"")
    wrong = [f"{len(shown.errors)} console error(s)"] if shown.errors else []
    broken = [image for image in shown.images if not image[0] or image[1] == 0]
    if broken:
        wrong.append(f"{len(broken)} of {len(shown.images)} images did not decode")
    return path, wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="+", type=Path, help="report.html, trends.html, ...")
    parser.add_argument("--out", type=Path, required=True, help="directory for the PNG files")
    parser.add_argument(
        "--width", type=int, action="append", help=f"CSS px (repeatable; default {WIDTHS})"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = False
    for page in args.pages:
        if not page.is_file():
            parser.error(f"{page}: no such page")
        for width in args.width or WIDTHS:
            path, wrong = shoot(page.resolve(), args.out, width)
            failed = failed or bool(wrong)
            said = f" ({'; '.join(wrong)})" if wrong else ""
            print(f"{path}: {page.name} at {width} px{said}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
