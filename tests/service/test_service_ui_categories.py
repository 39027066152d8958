"""The page's "Categories of this user" panel in a real headless Chromium against a real
service: summaries with citation buttons that show the cited memory, the agent's ``index.md``
as text, an automatic refresh after a stored read, and untrusted text that stays text.

Uses the browser, the service and the helpers of ``test_service_ui`` (Debian's ``chromium``
and ``chromium-driver``; without them the tests skip, except under ``CI``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.service.browser import (
    ARTIFACTS,
    PAGE_USER,
    XSS,
    click,
    js,
    press,
    read_example,
    tab_to,
    wait,
)

pytestmark = pytest.mark.timeout(120)
USER = PAGE_USER  # the user the page fixture typed


def base_url(driver: WebDriver) -> str:
    return driver.current_url.removesuffix("/ui/")


def shown_categories(driver: WebDriver) -> list[Any]:
    """The categories with memories, once the panel shows them (fails with its problem)."""
    wait(
        driver,
        lambda d: (
            d.find_elements(By.CSS_SELECTOR, "#category-list .category")
            or d.find_element(By.ID, "categories-error").is_displayed()
        ),
    )
    error = driver.find_element(By.ID, "categories-error")
    assert not error.is_displayed(), error.text
    return driver.find_elements(By.CSS_SELECTOR, "#category-list .category")


def show_citation(driver: WebDriver, cite: Any) -> Any:
    """The box a citation button controls, once it shows the memory."""
    box = driver.find_element(By.ID, cite.get_attribute("aria-controls"))
    wait(driver, lambda _: box.find_elements(By.CSS_SELECTOR, ".cited-text, .error-text"))
    assert not box.find_elements(By.CSS_SELECTOR, ".error-text"), box.text
    return box


def text_of(driver: WebDriver, element: Any) -> str:
    return str(js(driver, "return arguments[0].textContent", element))


def test_citations_show_the_cited_memory(page: WebDriver) -> None:
    # Opened before anything is stored: nothing to show yet, and the panel is open.
    tab_to(page, "#show-categories")
    press(page, Keys.ENTER)
    status = page.find_element(By.ID, "categories-status")
    wait(page, lambda _: USER in status.text and "Loading" not in status.text)
    assert page.find_elements(By.CSS_SELECTOR, "#category-list .category") == []
    assert status.get_attribute("aria-live") == "polite"
    assert page.find_element(By.ID, "show-categories").get_attribute("aria-expanded") == "true"
    # A stored read refreshes the open panel by itself.
    read_example(page, store=True)
    categories = shown_categories(page)
    assert categories
    first = categories[0]
    name = first.get_attribute("data-category")
    count = first.find_element(By.CSS_SELECTOR, ".item-count").text
    assert first.find_element(By.TAG_NAME, "h3").text == name
    assert count.endswith(("memory", "memories")) and int(count.split()[0]) >= 1
    assert first.find_element(By.CSS_SELECTOR, ".summary-kind").text == "summary: deterministic"
    cites = first.find_elements(By.CSS_SELECTOR, ".summary .cite")
    assert cites and cites[0].text == "1"
    assert "[ref:" not in first.find_element(By.CSS_SELECTOR, ".summary").text
    empty = page.find_elements(By.CSS_SELECTOR, "#empty-categories li")
    assert empty and all(li.text.endswith(" — empty") for li in empty)
    # Activate the first citation from the keyboard: its memory shows, as the API has it.
    tab_to(page, f'.category[data-category="{name}"] .cite')
    press(page, Keys.ENTER)
    box = show_citation(page, cites[0])
    assert cites[0].get_attribute("aria-expanded") == "true"
    ref = cites[0].get_attribute("data-ref")
    answer = httpx.get(f"{base_url(page)}/v1/memories/{ref}", params={"user_id": USER})
    memory = answer.raise_for_status().json()
    assert text_of(page, box.find_element(By.CSS_SELECTOR, ".cited-text")) == memory["memory"]
    assert box.find_element(By.CSS_SELECTOR, ".memory-status").text == memory["status"]
    assert box.find_element(By.CSS_SELECTOR, ".memory-validity").text.startswith("valid ")
    press(page, Keys.SPACE)  # again: hidden
    assert cites[0].get_attribute("aria-expanded") == "false" and not box.is_displayed()


def test_index_md_as_text_at_phone_width(page: WebDriver) -> None:
    read_example(page, store=True)
    page.set_window_size(390, 844)
    tab_to(page, "#show-index")
    press(page, Keys.ENTER)
    shown = page.find_element(By.ID, "memory-file")
    wait(page, lambda _: shown.is_displayed() and text_of(page, shown))
    assert shown.tag_name == "pre"
    assert text_of(page, shown).startswith(f"# Memory of {USER}")
    # Text, not HTML: blocks of plain text (laid out only on screen), nothing else.
    assert page.find_elements(By.CSS_SELECTOR, "#memory-file :not(span.chunk)") == []
    assert page.find_elements(By.CSS_SELECTOR, "#memory-file .chunk *") == []
    # A category's own file, from its button.
    click(page, "#show-categories")
    category = shown_categories(page)[0]
    name = category.get_attribute("data-category")
    category.find_element(By.CSS_SELECTOR, ".file-button").click()
    wait(page, lambda _: text_of(page, shown).startswith(f"# {name}"))
    assert js(page, "return document.documentElement.scrollWidth <= window.innerWidth")
    cite = category.find_element(By.CSS_SELECTOR, ".cite")
    cite.click()
    show_citation(page, cite)
    assert js(page, "return document.documentElement.scrollWidth <= window.innerWidth")
    ARTIFACTS.mkdir(exist_ok=True)
    js(page, "arguments[0].scrollIntoView()", category)
    page.save_screenshot(str(ARTIFACTS / "service_ui_categories.png"))


def test_stored_markup_stays_text(page: WebDriver) -> None:
    scene = [{"role": "user", "content": XSS}, {"role": "assistant", "content": "Not a picture."}]
    body = {
        "type": "chat",
        "scenes": [scene],
        "info": {"user_id": USER, "session_id": "s"},
        "mode": "fast",
        "store": True,
    }
    stored = httpx.post(f"{base_url(page)}/v1/read", json=body, timeout=60)
    assert stored.status_code == 200, stored.text
    memory = stored.json()["items"][0][0]
    assert XSS in memory["memory"]
    click(page, "#show-categories")
    shown_categories(page)
    lines = page.find_elements(By.CSS_SELECTOR, "#category-list .summary-text")
    assert any(XSS in line.text for line in lines)
    cite = page.find_element(By.CSS_SELECTOR, f'.cite[data-ref="{memory["id"]}"]')
    cite.click()
    box = show_citation(page, cite)
    assert text_of(page, box.find_element(By.CSS_SELECTOR, ".cited-text")) == memory["memory"]
    click(page, "#show-index")
    index = httpx.get(f"{base_url(page)}/v1/users/{USER}/memory/index.md").text
    assert "onerror" in index
    shown = page.find_element(By.ID, "memory-file")
    wait(page, lambda _: text_of(page, shown) == index)
    assert page.find_elements(By.CSS_SELECTOR, "main img") == []
    assert js(page, "return typeof window.pwned") == "undefined"


def test_problems_show_their_detail(page: WebDriver) -> None:
    field = page.find_element(By.ID, "user-id")
    field.clear()
    click(page, "#show-categories")
    error = page.find_element(By.ID, "categories-error")
    wait(page, lambda _: error.is_displayed())
    assert "user id" in error.text
    field.send_keys(USER)
    click(page, "#show-categories")
    wait(page, lambda _: not error.is_displayed())
