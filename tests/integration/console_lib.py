# console_lib.py - what the browser tests of the console share: a headless
# Chromium driven by Selenium, checks printed as "ok - ..." / "FAIL - ...",
# bounded waits, and the admin API read with the token.
# SPDX-License-Identifier: Apache-2.0
import json
import ssl
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

failed = 0


def check(what, ok):
    global failed
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    failed += 0 if ok else 1


def until(fn, seconds=15):
    """fn() until it is true, at most seconds (30 at least: a bound for a
    hang, which a busy machine's browser must not reach); its last value."""
    end = time.time() + max(seconds, 30)
    value = fn()
    while not value and time.time() < end:
        time.sleep(0.2)
        value = fn()
    return value


def api_reader(url, token, cafile=None):
    """GET path on the admin API with the token: its JSON, or
    {"http_status": N} for an HTTP error."""
    context = ssl.create_default_context(cafile=cafile) if cafile else None

    def api(path):
        req = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(req, timeout=10, context=context) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            return {"http_status": e.code}
    return api


def browser(*flags):
    """Headless Chromium, with flags added to the usual ones."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1400",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run") + flags:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def click(driver, selector):
    """Clicks the element of selector: the tables are drawn anew every
    second, so it is looked up again while stale or not there yet (for up
    to 10 s: a busy machine's browser may take a while to draw it)."""
    for _ in range(100):
        try:
            driver.find_element(By.CSS_SELECTOR, selector).click()
            return
        except (StaleElementReferenceException, NoSuchElementException):
            time.sleep(0.1)


def click_and_answer(driver, wait, selector, answer=None):
    """Clicks the button of selector and accepts what it asks, typing
    answer first when given: the question."""
    click(driver, selector)
    alert = wait.until(ec.alert_is_present())
    asked = alert.text
    if answer is not None:
        alert.send_keys(answer)
    alert.accept()
    return asked


def log_out(driver):
    driver.find_element(By.ID, "logout").click()
    check("log out: back to the form", until(lambda: driver.find_element(By.ID, "login").is_displayed(), 5))
