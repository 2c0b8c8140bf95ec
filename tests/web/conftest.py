"""Debian's Chromium driven by playwright, against the real app under uvicorn (`url`).

The browser tests fail (never skip) when /usr/bin/chromium is missing: run scripts/test-setup.
Screenshots of the pages go to tests/web/screenshots/ (gitignored) for a reviewer to look at.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).parent / "screenshots"
# assertions wait as long as actions do (the contexts' default timeout below): on a loaded
# 2-core machine a page's script can take more than expect's own 5 s to render
expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium, for one test module at a time.

    Playwright's sync API runs its asyncio event loop in a greenlet of the calling thread, so
    while it is started that thread has a running loop, and `asyncio.run()` anywhere else in
    the suite (the benchmark's, the load tests', the answer cache's) raises "cannot be called
    from a running event loop". Module scope stops it as soon as the module's tests are done,
    whatever order the modules run in.
    """
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/test-setup", pytrace=False)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True
    )
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def no_js(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=False
    )
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


@pytest.fixture(scope="session")
def shot() -> Iterator[object]:
    SCREENSHOTS.mkdir(exist_ok=True)

    def save(page: Page, name: str, *, full_page: bool = True) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    yield save
