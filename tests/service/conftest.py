"""The service tests' fixtures: ``start`` (a real service on 127.0.0.1 with the test keys) and,
for the UI tests, one headless Chromium for the whole run (``browser``: starting one costs
seconds) and ``page`` (a fresh service per test, so its own origin and sessionStorage, with the
page open at ``/ui/``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings, create_app
from tests.common import HASH_EMBEDDER
from tests.service.browser import CHROMEDRIVER, CHROMIUM, PAGE_USER, wait
from tests.service.http_client import Start, key_entries
from tests.service.worker_apps import Workers, launch_workers
from tests.service_server import running


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Start a service: ``start(config={...}, service={...})`` returns its base URL."""
    stack: list[Any] = []

    def launch(*, config: dict[str, Any] | None = None, **service: Any) -> str:
        reader_config = {
            "embedder": HASH_EMBEDDER,
            "store": "sqlite:///memories.db",
            "window": {"max_tokens": 256, "overlap_tokens": 32},
            **(config or {}),
        }
        service.setdefault("keys", key_entries())
        factory = MemReaderConfigFactory.from_dict({"config": reader_config})
        app = create_app(ServiceConfig(factory, ServiceSettings(**service), base_dir=str(tmp_path)))
        context = running(app)
        url = context.__enter__()
        stack.append(context)
        return url

    yield launch
    for context in reversed(stack):
        context.__exit__(None, None, None)


@pytest.fixture(scope="session")
def browser() -> Iterator[WebDriver]:
    """One headless Chromium for the run (each test gets its own service, so its own origin
    and sessionStorage)."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        message = f"needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    os.environ["SE_OFFLINE"] = "1"  # never let Selenium Manager download a driver
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1280,1100")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(tmp_path: Path, browser: WebDriver) -> Iterator[WebDriver]:
    """A service with a SQLite store in ``tmp_path`` and the page open at ``/ui/``, its user
    field (empty on a first visit: no made-up user) set to :data:`PAGE_USER`."""
    # Small windows: the example chat gives several fast items, each citing other messages.
    window = {"max_tokens": 64, "overlap_tokens": 16}
    config = {"embedder": HASH_EMBEDDER, "store": "sqlite:///m.db", "window": window}
    factory = MemReaderConfigFactory.from_dict({"config": config})
    app = create_app(ServiceConfig(factory, ServiceSettings(), base_dir=str(tmp_path)))
    with running(app) as url:
        browser.set_window_size(1280, 1100)
        browser.get(f"{url}/")  # the app redirects / to /ui/
        wait(browser, lambda d: d.execute_script("return document.documentElement.dataset.ready"))
        assert browser.current_url == f"{url}/ui/"
        field = browser.find_element(By.ID, "user-id")
        assert field.get_attribute("value") == ""
        field.send_keys(PAGE_USER)
        yield browser


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    """``workers(n, **service)``: ``n`` apps on one SQLite store in ``tmp_path`` (two workers
    of one service), each served; their URLs and states."""
    contexts: list[Any] = []
    yield lambda n=2, **service: launch_workers(tmp_path, contexts, n, **service)
    for context in reversed(contexts):
        context.__exit__(None, None, None)
