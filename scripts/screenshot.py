"""Screenshots of the web pages, taken with Playwright and Debian's Chromium from a running app.

    .venv/bin/uvicorn app.main:app &                 # the service, on localhost:8000
    .venv/bin/python scripts/screenshot.py           # writes docs/screenshot-check.png
    .venv/bin/python scripts/screenshot.py --url http://localhost:8613 --out /tmp/shots --all

The default is the README's picture: the check form's result for a decode step on an A100 (a
measured 30 ms), at a desktop width, cut to the first screen so that the PNG stays small.
`--all` writes every page at 375 px and at 1280 px into the folder `--out` instead; with runs
stored, the newest run's page and its workload's history too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"]
CHECK = "/?chip=a100&model=llama-3.1-8b&batch=8&measured_ms=30"
PAGES = {
    "check": CHECK,
    "compare": "/comparison?chips=a100,h100,mi300x,l40s,t4&model=llama-8b&batch=8"
    "&price_per_hour=2.5",
    "catalog": "/catalog",
    "history": "/history",
    "trace": "/trace",
    "table": "/table",
    "chip": "/chips/a100",
    "model": "/models/llama-3.1-8b",
}
WIDTHS = {"phone": 375, "desktop": 1280}


def _shoot(page: Page, url: str, path: Path, *, full_page: bool) -> None:
    page.goto(url)
    page.screenshot(path=str(path), full_page=full_page)
    print(f"{path}: {path.stat().st_size // 1024} KiB")


def _stored_pages(base: str) -> dict[str, str]:
    """The pages of the newest stored run and of its workload, if any run is stored."""
    newest = httpx.get(f"{base}/measurements", params={"limit": 1}, timeout=30).json()["items"]
    if not newest:
        return {}
    run = newest[0]
    return {
        "measurement": f"/measurements/{run['id']}",
        "workload": f"/history/{run['workload_key']}",
    }


def main() -> None:
    """Parse the arguments and take the screenshots."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://localhost:8000", help="the running app")
    parser.add_argument("--out", default="docs/screenshot-check.png", type=Path)
    parser.add_argument("--all", action="store_true", help="every page at two widths")
    args = parser.parse_args()
    base = args.url.rstrip("/")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        if not args.all:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            _shoot(page, base + CHECK, args.out, full_page=False)
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            pages = PAGES | _stored_pages(base)
            for size, width in WIDTHS.items():
                page = browser.new_page(viewport={"width": width, "height": 900})
                for name, path in pages.items():
                    _shoot(page, base + path, args.out / f"{name}-{size}.png", full_page=True)
        browser.close()


if __name__ == "__main__":
    main()
