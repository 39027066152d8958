"""The page stays responsive (issue 27, class 7), in a real headless Chromium against a real
service: a 1.25 MB memory of tags, zero-width characters and emoji shows a bounded preview
wherever the page renders it (search hits, history, citations, categories, the Markdown files,
items and the original messages), the whole of it is a click away and laid out only where it
is seen; fine mode is off on a service without an LLM; ``/docs`` renders offline and nothing
the service serves references another origin.

Responsiveness is asserted by counting (characters in the DOM, blocks, marks) and by every
Selenium call returning within its bounded script timeout, never by a wall-clock duration."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import timedelta
from importlib import resources
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings, create_app
from memreader.stores import open_store
from memreader.stores.category_types import CategoryDef
from tests.categories.memories import PREFS, T0, item
from tests.common import HASH_EMBEDDER
from tests.service.browser import PAGE_USER, click, js, wait, wait_for_items
from tests.service_server import running

pytestmark = pytest.mark.timeout(180)

USER = PAGE_USER  # the user the page fixture typed
PREVIEW = 2000  # common.js
CHUNK = 4096  # common.js
UNIT = "<b>\u200b😀\u200d👍🏽</i>\u200c<script>x</script>\u2060&amp;"
BIG = "river " + UNIT * (1_250_000 // len(UNIT.encode("utf-8")))
# Characters in the page's main text with every long text cut (the page's own words, a few
# previews): far below one big memory.
DOM_BOUND = 40_000


def main_chars(driver: WebDriver) -> int:
    return int(js(driver, "return document.querySelector('main').textContent.length"))


def seed_big(tmp_path: Path) -> None:
    """The big memory of USER, in a category whose summary cites it."""
    with open_store(f"sqlite:///{tmp_path / 'm.db'}", text_only=True) as store:
        store.write([item("big", BIG, user=USER, at=T0)])
        store.upsert_categories(USER, [PREFS])
        store.link_categories(USER, {"big": ["preferences"]})
        summary = "A very long memory. [ref:big]"
        store.save_summary(
            USER, "preferences", summary=summary, kind="llm", note=None, now=T0 + timedelta(1)
        )


def show_all_matches(driver: WebDriver, scope: str, expected_js: str) -> None:
    """Click the first "Show all" in ``scope``; its box then holds exactly ``expected_js``, in
    blocks of at most CHUNK characters that the browser lays out only on screen."""
    button = driver.find_element(By.CSS_SELECTOR, f"{scope} button.show-all")
    assert re.fullmatch(r"Show all \([\d,]+ characters\)", button.text), button.text
    button.click()
    assert button.get_attribute("aria-expanded") == "true" and button.text == "Show less"
    check = f"""
        const box = document.querySelector(arguments[0] + ' .full-text');
        const blocks = [...box.querySelectorAll('.chunk')];
        return {{
          same: box.textContent === ({expected_js}),
          blocks: blocks.length,
          longest: Math.max(...blocks.map((b) => b.textContent.length)),
          lazy: blocks.every((b) => getComputedStyle(b).contentVisibility === 'auto'),
          length: box.textContent.length,
        }};
    """
    found = js(driver, check, scope)
    assert found["same"] and found["lazy"], found
    assert found["longest"] <= CHUNK and found["blocks"] >= math.ceil(found["length"] / CHUNK)
    button.click()  # and back
    assert button.get_attribute("aria-expanded") == "false"


def test_a_big_memory_shows_a_preview_everywhere_and_the_whole_on_demand(
    page: WebDriver, tmp_path: Path
) -> None:
    seed_big(tmp_path)
    page.set_script_timeout(30)  # a renderer that hangs fails every call below
    query = page.find_element(By.ID, "search-query")
    query.send_keys("river")
    click(page, "#search-button")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .hit"))
    text = page.find_element(By.CSS_SELECTOR, "#hits .hit .item-text")
    assert js(page, "return arguments[0].textContent.length", text) == PREVIEW + 1  # and "…"
    assert main_chars(page) < DOM_BOUND
    big_js = "window.bigMemory"
    length = page.execute_async_script(
        """const done = arguments[arguments.length - 1];
        fetch('/v1/memories/big?user_id=demo-user').then((r) => r.json())
          .then((m) => { window.bigMemory = m.memory; done(m.memory.length); });"""
    )
    assert length == len(BIG.encode("utf-16-le")) // 2
    show_all_matches(page, "#hits .hit", big_js)
    assert main_chars(page) < DOM_BOUND
    # Its history: the ADD's text, cut too.
    click(page, "#hits .hit button[aria-controls^='history-']")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, '#hits li[data-event="ADD"]'))
    assert main_chars(page) < DOM_BOUND
    show_all_matches(page, '#hits li[data-event="ADD"]', big_js)
    # The category's summary cites it: the cited memory shows cut, the whole on demand.
    click(page, "#show-categories")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#category-list button.cite"))
    click(page, "#category-list button.cite")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#category-list .cited-text"))
    assert main_chars(page) < DOM_BOUND
    show_all_matches(page, "#category-list .cited", big_js)
    # The category's Markdown file (the memory quoted whole): in lazily laid-out blocks.
    click(page, "#category-list .file-button")
    wait(page, lambda d: "preferences.md" in d.find_element(By.ID, "memory-file-title").text)
    blocks = js(
        page,
        """const f = document.getElementById('memory-file');
        return [f.querySelectorAll('.chunk').length, f.textContent.length,
                f.textContent.includes('river ')];""",
    )
    assert blocks[1] > len(BIG) and blocks[0] >= math.ceil(blocks[1] / CHUNK) and blocks[2]
    assert js(page, "return 1 + 1") == 2  # still answering


@pytest.fixture
def wide_page(tmp_path: Path, browser: WebDriver) -> Iterator[WebDriver]:
    """The page on a service whose windows hold a whole long message (one item quotes it)."""
    config = {
        "embedder": HASH_EMBEDDER,
        "store": "sqlite:///m.db",
        "window": {"max_tokens": 8192, "overlap_tokens": 0},
    }
    factory = MemReaderConfigFactory.from_dict({"config": config})
    app = create_app(ServiceConfig(factory, ServiceSettings(), base_dir=str(tmp_path)))
    with running(app) as url:
        browser.get(f"{url}/ui/")
        wait(browser, lambda d: js(d, "return document.documentElement.dataset.ready"))
        browser.find_element(By.ID, "user-id").send_keys(USER)
        yield browser


def test_a_long_message_and_its_item_show_cut_and_mark_in_the_whole(wide_page: WebDriver) -> None:
    page = wide_page
    page.set_script_timeout(30)
    message = "😀 Day one in Lisbon, <b>tea</b>\u200b with Ana. " * 120  # ~5,500 characters
    chat = f"user: {message}\nassistant: Noted."
    js(page, "document.getElementById('chat-input').value = arguments[0]", chat)
    click(page, "#read-button")
    items = wait_for_items(page)
    assert main_chars(page) < DOM_BOUND
    slot = page.find_element(By.CSS_SELECTOR, '#scenes [data-message="0"] .text')
    assert js(page, "return arguments[0].textContent.length", slot) == PREVIEW + 1
    assert len(js(page, "return arguments[0].querySelector('.item-text').textContent", items[0]))
    # The long item's whole text, from the button beside it.
    long_item = page.find_elements(By.CSS_SELECTOR, "#items li .expander")
    assert long_item, "the item holding the long message has no Show all"
    show_all_matches(page, "#items li:has(.expander)", "window.memreaderLast.items[0].memory")
    # Selecting it marks its source in the whole message (the mark lies past the preview).
    items[0].click()
    found = js(
        page,
        """const src = window.memreaderLast.selected.metadata.sources;
        const marks = [...document.querySelectorAll('#scenes mark[data-source]')];
        const byIndex = {};
        for (const m of marks) for (const i of m.dataset.source.split(' '))
          byIndex[i] = (byIndex[i] || '') + m.textContent;
        return Object.entries(byIndex).map(([i, text]) => [text === src[Number(i)].content,
                                                           text.length]);""",
    )
    assert found and all(same for same, _ in found), found
    assert max(n for _, n in found) > PREVIEW
    assert page.find_element(By.CSS_SELECTOR, '#scenes [data-message="0"] .show-all').text == (
        "Show less"
    )


def test_fine_mode_is_offered_only_with_an_llm(browser: WebDriver, tmp_path: Path) -> None:
    llm = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"}
    config = {"embedder": HASH_EMBEDDER, "llm": llm}
    factory = MemReaderConfigFactory.from_dict({"config": config})
    app = create_app(ServiceConfig(factory, ServiceSettings(), base_dir=str(tmp_path)))
    with running(app) as url:
        assert httpx.get(f"{url}/healthz").json()["fine_mode"] is True
        browser.get(f"{url}/ui/")
        wait(browser, lambda d: js(d, "return document.documentElement.dataset.modes"))
        fine = browser.find_element(By.CSS_SELECTOR, 'input[name="mode"][value="fine"]')
        assert fine.is_enabled()
        assert browser.find_element(By.ID, "fine-hint").text == "(needs an LLM)"


EXTERNAL = re.compile(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


def test_docs_render_offline_and_nothing_references_another_origin(page: WebDriver) -> None:
    url = page.current_url.removesuffix("/ui/")
    page.get(f"{url}/docs")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".op"))
    assert "memreader" in page.find_element(By.TAG_NAME, "h1").text
    paths = [e.text for e in page.find_elements(By.CSS_SELECTOR, ".op .path")]
    assert "/v1/read" in paths and "/v1/memories/search" in paths
    origins = js(
        page,
        """return [...performance.getEntriesByType('resource').map((e) => e.name),
                   ...[...document.querySelectorAll('[src], [href]')]
                        .map((e) => e.src || e.href)].map((u) => new URL(u).origin);""",
    )
    assert set(origins) <= {url}
    click(page, "a[href='/openapi.json']")
    wait(page, lambda d: '"openapi"' in d.page_source)
    assert httpx.get(f"{url}/redoc").status_code == 404  # it loaded from a CDN
    assert httpx.get(f"{url}/healthz").json()["fine_mode"] is False  # this one has no LLM
    docs = httpx.get(f"{url}/docs")
    assert docs.status_code == 200 and not EXTERNAL.search(docs.text)
    assert "default-src 'none'" in docs.headers["content-security-policy"]
    static = resources.files("memreader.service") / "static"
    names = sorted(entry.name for entry in static.iterdir())
    assert {"index.html", "app.js", "common.js"} <= set(names)
    for name in names:
        assert not EXTERNAL.search((static / name).read_text(encoding="utf-8")), name


def test_a_device_named_category_opens_its_file(page: WebDriver, tmp_path: Path) -> None:
    """A category named ``con`` is ``con-category.md`` (a name safe on Windows): the page asks
    for the file the export and the service name it by."""
    with open_store(f"sqlite:///{tmp_path / 'm.db'}", text_only=True) as store:
        store.write([item("c1", "Ana keeps a console diary.", user=USER, at=T0)])
        store.upsert_categories(USER, [CategoryDef(name="con", description="Consoles.")])
        store.link_categories(USER, {"c1": ["con"]})
    click(page, "#show-categories")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, '#category-list [data-category="con"]'))
    button = page.find_element(By.CSS_SELECTOR, '[data-category="con"] .file-button')
    assert button.text == "Show con-category.md"
    button.click()
    title = page.find_element(By.ID, "memory-file-title")
    wait(page, lambda _: "con-category.md" in title.text)
    assert not page.find_element(By.ID, "categories-error").is_displayed()
    assert "Ana keeps a console diary." in js(
        page, "return document.getElementById('memory-file').textContent"
    )
