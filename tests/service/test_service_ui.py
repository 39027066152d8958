"""The web page at ``/ui`` in a real headless Chromium (Selenium) against a real service: items
light up their exact source characters, the page works from the keyboard and on a phone-width
screen, stored memories can be searched and traced, and untrusted text never becomes HTML.

Needs Debian's ``chromium`` and ``chromium-driver``; without them the tests skip, except under
``CI``, where they fail (CI must run them)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.service.browser import (
    ARTIFACTS,
    PAGE_USER,
    ROOT,
    XSS,
    click,
    js,
    press,
    read_example,
    tab_to,
    wait,
    wait_for_items,
)

pytestmark = pytest.mark.timeout(120)

DOCS_SHOT = ROOT / "docs" / "service_ui.png"


def marks(driver: WebDriver) -> list[tuple[str, list[str]]]:
    """Each mark's text, and the contents of the sources (of the selected item) it stands for."""
    return [
        (row["text"], row["expected"])
        for row in js(
            driver,
            """
            const sources = window.memreaderLast.selected.metadata.sources;
            return [...document.querySelectorAll('mark[data-source]')].map((mark) => ({
              text: mark.textContent,
              expected: mark.dataset.source.split(' ').map((i) => sources[Number(i)].content),
            }));
            """,
        )
    ]


def test_item_sources_light_up_exactly(page: WebDriver) -> None:
    items = read_example(page)
    assert items
    windows = page.find_elements(By.CSS_SELECTOR, "#windows li")
    assert windows and "ok" in windows[0].text
    items[0].click()
    assert items[0].get_attribute("aria-pressed") == "true"
    found = marks(page)
    assert found, "no source was marked"
    for text, expected in found:
        assert all(text == content for content in expected), (text, expected)
    # Every chat source with a span is marked (the example's first message holds an emoji:
    # the server's offsets count code points, the browser's UTF-16 units).
    selected = js(page, "return window.memreaderLast.selected")
    spanned = {
        i for i, s in enumerate(selected["metadata"]["sources"]) if s["span"] and s["content"]
    }
    sources = js(page, "return [...document.querySelectorAll('mark')].map(m => m.dataset.source)")
    marked = {int(i) for value in sources for i in value.split()}
    assert marked == spanned
    assert any("😀" in text for text, _ in found)
    ARTIFACTS.mkdir(exist_ok=True)
    js(page, "window.scrollTo(0, document.getElementById('results').offsetTop - 8)")
    page.save_screenshot(str(ARTIFACTS / "service_ui.png"))
    # The README's picture: written when missing, or refreshed on request (a run of the tests
    # should not dirty a committed file).
    if not DOCS_SHOT.exists() or os.environ.get("MEMREADER_UPDATE_SCREENSHOT"):
        DOCS_SHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(ARTIFACTS / "service_ui.png", DOCS_SHOT)


def test_keyboard_only_and_phone_width(page: WebDriver) -> None:
    page.set_window_size(390, 844)
    tab_to(page, "#load-example")
    press(page, Keys.ENTER)
    assert "Lisbon" in (page.find_element(By.ID, "chat-input").get_attribute("value") or "")
    tab_to(page, "#read-button")
    # The focus is visible: an outline on the focused control.
    assert js(page, "return getComputedStyle(document.activeElement).outlineStyle") == "solid"
    press(page, Keys.ENTER)
    items = wait_for_items(page)
    tab_to(page, "#items .item")
    press(page, Keys.ENTER)
    assert items[0].get_attribute("aria-pressed") == "true"
    assert marks(page)
    first = {text for text, _ in marks(page)}
    assert len(items) > 1  # Space works too, and selecting another item clears the old marks
    tab_to(page, "#items li:nth-child(2) .item")
    press(page, Keys.SPACE)
    assert items[0].get_attribute("aria-pressed") == "false"
    assert items[1].get_attribute("aria-pressed") == "true"
    second = marks(page)
    assert second and not first & {text for text, _ in second}
    for text, expected in second:
        assert all(text == content for content in expected)
    assert js(page, "return document.documentElement.scrollWidth <= window.innerWidth")
    assert page.find_element(By.ID, "read-status").get_attribute("aria-live") == "polite"
    unlabeled = js(
        page,
        """
        return [...document.querySelectorAll('input, textarea, select')]
          .filter((f) => f.type !== 'hidden' && f.labels.length === 0).map((f) => f.id || f.name);
        """,
    )
    assert unlabeled == []


def test_store_search_and_history(page: WebDriver) -> None:
    read_example(page, store=True)
    events = page.find_element(By.ID, "events")
    assert events.is_displayed() and "ADD" in events.text
    query = page.find_element(By.ID, "search-query")
    query.send_keys("Lisbon")
    query.send_keys(Keys.ENTER)  # Enter in the query field submits the search
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .hit"))
    hit = page.find_element(By.CSS_SELECTOR, "#hits .hit")
    assert "Lisbon" in hit.find_element(By.CSS_SELECTOR, ".item-text").text
    scores = {
        part.get_attribute("data-score"): part.find_element(By.TAG_NAME, "dd").text
        for part in hit.find_elements(By.CSS_SELECTOR, "[data-score]")
    }
    assert set(scores) == {"final", "similarity", "text_rank", "importance", "decay"}
    for name in ("final", "similarity", "importance", "decay"):
        value = scores[name]
        assert value == "—" or re.fullmatch(r"-?\d+\.\d{3}", value), scores
    assert scores["final"] != "—"
    assert "found" in page.find_element(By.ID, "search-status").text
    button = hit.find_element(By.XPATH, ".//button[normalize-space()='History']")
    button.click()
    wait(page, lambda d: hit.find_elements(By.CSS_SELECTOR, 'li[data-event="ADD"]'))
    assert button.get_attribute("aria-expanded") == "true"


def test_untrusted_text_stays_text(page: WebDriver) -> None:
    box = page.find_element(By.ID, "chat-input")
    box.send_keys(f"user: {XSS}\nassistant: That is not a picture.")
    click(page, "#read-button")
    items = wait_for_items(page)
    items[0].click()
    assert js(page, "return typeof window.pwned") == "undefined"
    assert page.find_elements(By.CSS_SELECTOR, "main img") == []
    texts = [node.text for node in page.find_elements(By.CSS_SELECTOR, "#scenes .message .text")]
    assert texts[0] == XSS
    assert XSS in items[0].text
    assert any(text == XSS for text, _ in marks(page))


def test_problems_show_their_detail(page: WebDriver) -> None:
    # No LLM configured: the page asked the service, and fine mode is off, saying why.
    wait(page, lambda d: js(d, "return document.documentElement.dataset.modes") == "checked")
    fine = page.find_element(By.CSS_SELECTOR, 'input[name="mode"][value="fine"]')
    assert not fine.is_enabled()
    assert "not available: this service has no LLM" in page.find_element(By.ID, "fine-hint").text
    click(page, "#load-example")
    # Forced on anyway (an old page, say): the 422 is said in the page's words, by the button.
    js(page, "arguments[0].disabled = false; arguments[0].checked = true", fine)
    js(page, "window.scrollTo(0, document.body.scrollHeight)")
    click(page, "#read-button")
    error = page.find_element(By.ID, "read-error")
    wait(page, lambda _: error.is_displayed())
    assert "Fine mode is not available here (422)" in error.text and "fast mode" in error.text
    assert "mode='fast'" not in error.text and "reader config" not in error.text
    assert not fine.is_enabled() and not page.find_element(By.ID, "results").is_displayed()
    in_view = (
        "const r = arguments[0].getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= innerHeight"
    )
    assert js(page, in_view, error)  # scrolled to where the user looks
    # An input error names the message, which the page outlines.
    scene = [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]
    js(page, "document.getElementById('chat-input').value = arguments[0]", json.dumps(scene))
    click(page, 'input[name="mode"][value="fast"]')
    click(page, "#read-button")
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".message.has-problem"))
    assert "robot" in error.text and "message 1" in error.text


def test_a_dropped_document_shows_quoted_sources(page: WebDriver, tmp_path: Path) -> None:
    doc = tmp_path / "trip.md"
    doc.write_text("# Trip\n\nI moved to Lisbon in May. My sister Ana lives in Porto.\n")
    page.find_element(By.ID, "file-input").send_keys(str(doc))
    wait(page, lambda d: d.find_element(By.ID, "file-status").is_displayed())
    click(page, "#read-button")
    items = wait_for_items(page)
    assert js(page, "return window.memreaderLast.request.type") == "doc"
    items[0].click()
    quotes = page.find_elements(By.CSS_SELECTOR, "#sources .quote")
    assert quotes and "Ana lives in Porto" in quotes[0].text
    assert "trip.md" in page.find_element(By.ID, "sources").text
    assert page.find_elements(By.CSS_SELECTOR, "mark") == []


def test_the_page_starts_on_the_last_user_not_a_made_up_one(page: WebDriver) -> None:
    # The fixture found the field empty on this first visit and typed PAGE_USER.
    field = page.find_element(By.ID, "user-id")
    field.send_keys(Keys.TAB)  # a user id is taken when the field is left
    field = page.find_element(By.ID, "user-id")
    field.clear()
    field.send_keys("ana", Keys.TAB)
    page.refresh()
    wait(page, lambda d: js(d, "return document.documentElement.dataset.ready"))
    # A new visit starts on the last user used, and offers the others (last first).
    assert page.find_element(By.ID, "user-id").get_attribute("value") == "ana"
    offered = js(
        page, "return [...document.querySelectorAll('#known-users option')].map(o => o.value)"
    )
    assert offered == ["ana", PAGE_USER]
