"""The pages read as people read them, in real headless Chromium at a phone's width (375 px)
and a desktop's (1280 px): words whole, key columns first, no page wider than the screen,
chart text a readable size, keyboard paths (issue 37)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

TRACES = Path(__file__).resolve().parent.parent / "traces"
WIDTHS = {"phone": 375, "desktop": 1280}

# in the page: each word of every <code> (split at white space) that the browser laid out on more
# than one line, unless the word alone is wider than the box it sits in (a long identifier
# may break; a verdict's words never)
SPLIT_WORDS = r"""() => {
  const split = [];
  for (const code of document.querySelectorAll('main code')) {
    const text = code.firstChild;
    if (!text || text.nodeType !== Node.TEXT_NODE) continue;
    const box = code.parentElement.getBoundingClientRect().width;
    for (const found of text.data.matchAll(/\S+/g)) {
      const word = found[0];
      const range = document.createRange();
      range.setStart(text, found.index); range.setEnd(text, found.index + word.length);
      const rects = Array.from(range.getClientRects()).filter(r => r.width > 0);
      const wide = rects.reduce((sum, r) => sum + r.width, 0);
      if (rects.length > 1 && wide < box) split.push(word);
    }
  }
  return split;
}"""


@pytest.fixture(params=list(WIDTHS))
def screen(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    """A page at a phone's width (375 px, touch) and at a desktop's (1280 px)."""
    width = WIDTHS[request.param]
    phone = width < 600
    context = browser.new_context(
        viewport={"width": width, "height": 812 if phone else 900},
        device_scale_factor=2 if phone else 1,
        is_mobile=phone,
    )
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def upload_trace(page: Page, url: str, name: str = "mixed.json") -> None:
    page.goto(f"{url}/trace")
    page.locator("#t-trace").set_input_files(str(TRACES / name))
    page.locator("#t-chip").fill("a100")
    page.locator("#t-mismatch").check()
    page.get_by_role("button", name="Check trace").click()
    expect(page.locator("#trace-result")).to_be_visible()


def test_words_are_never_split_across_lines(screen, url):
    # each verdict in its words, and the trace's operator names (aten::linear, aten::cos)
    for measured in ("30", "12", "1", "300"):
        screen.goto(f"{url}/?chip=a100&model=llama-3.1-8b&batch=8&measured_ms={measured}")
        expect(screen.locator("#verdict code").first).to_be_visible()
        assert screen.evaluate(SPLIT_WORDS) == [], measured
    upload_trace(screen, url)
    expect(screen.locator("#trace-ops code").first).to_be_visible()
    assert screen.evaluate(SPLIT_WORDS) == []
