"""The browser the service's UI tests drive, and what they do with it: a headless Chromium
(Debian's ``chromium`` and ``chromium-driver``), waits, clicks, key presses and the example
read. The fixtures that start it and open the page are in this folder's conftest.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
CHROMEDRIVER = Path(shutil.which("chromedriver") or "/usr/bin/chromedriver")
ARTIFACTS = ROOT / "tests" / "artifacts"
XSS = '<img src=x onerror="window.pwned=1">'
#: The user the ``page`` fixture types into the page's empty user field.
PAGE_USER = "demo-user"


def wait(driver: WebDriver, condition: Any, timeout: float = 30) -> Any:
    return WebDriverWait(driver, timeout).until(condition)


def js(driver: WebDriver, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def click(driver: WebDriver, css: str) -> None:
    driver.find_element(By.CSS_SELECTOR, css).click()


def wait_for_items(driver: WebDriver) -> list[Any]:
    """The item buttons of the answer (fails with the page's problem text if the read failed)."""

    def settled(d: WebDriver) -> bool:
        return (
            bool(d.find_elements(By.CSS_SELECTOR, "#items .item"))
            or d.find_element(By.ID, "read-error").is_displayed()
        )

    try:
        wait(driver, settled)
    except TimeoutException:  # pragma: no cover - shown when the page hangs
        pytest.fail(f"no answer; status: {driver.find_element(By.ID, 'read-status').text}")
    error = driver.find_element(By.ID, "read-error")
    assert not error.is_displayed(), error.text
    return driver.find_elements(By.CSS_SELECTOR, "#items .item")


def read_example(driver: WebDriver, *, store: bool = False) -> list[Any]:
    click(driver, "#load-example")
    click(driver, 'input[name="mode"][value="fast"]')
    if store:
        click(driver, "#store")
    click(driver, "#read-button")
    return wait_for_items(driver)


def tab_to(driver: WebDriver, css: str, limit: int = 60) -> None:
    """Press TAB until the focused element matches ``css``."""
    for _ in range(limit):
        if js(driver, "return document.activeElement.matches(arguments[0])", css):
            return
        ActionChains(driver).send_keys(Keys.TAB).perform()
    pytest.fail(f"TAB never reached {css}")


def press(driver: WebDriver, key: str) -> None:
    driver.switch_to.active_element.send_keys(key)
