#!/usr/bin/python3
# console_https.py ADMIN_URL TOKEN ARTIFACTS CA_FILE SPKI - the console over
# HTTPS in headless Chromium: the page comes with emgd's certificate
# (trusted by its key's SPKI hash, nothing else let through), the login
# gives a cookie that is Secure, HttpOnly and SameSite=Strict, and a pause
# and a resume from the page take effect. Prints "ok - ..." / "FAIL - ...";
# exits 1 on any failure.
# SPDX-License-Identifier: Apache-2.0
import sys
import tempfile

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

import console_lib
from console_lib import check, until

url, token, artifacts, cafile, spki = sys.argv[1:6]
api = console_lib.api_reader(url, token, cafile)
profile = tempfile.mkdtemp(prefix="emg-console-")
driver = console_lib.browser("--ignore-certificate-errors-spki-list=" + spki, "--user-data-dir=" + profile)
wait = WebDriverWait(driver, 30)   # a hang guard
try:
    driver.get(url + "/")
    login = until(lambda: driver.find_elements(By.ID, "login"), 10)
    check("the page comes over HTTPS with emgd's certificate (%s)" % driver.current_url,
          bool(login) and driver.current_url.startswith("https://"))
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login-button").click()
    wait.until(ec.visibility_of_element_located((By.ID, "console")))
    cookie = next((c for c in driver.get_cookies() if c["name"] == "emg_session"), {})
    check("the session cookie is Secure, HttpOnly and SameSite=Strict (%s)"
          % {k: cookie.get(k) for k in ("secure", "httpOnly", "sameSite")},
          cookie.get("secure") is True and cookie.get("httpOnly") is True and cookie.get("sameSite") == "Strict")
    rows = lambda: driver.execute_script(
        "return [...document.querySelectorAll('#connectors tr[data-key]')].map(r => r.dataset.key)")
    check("the connectors of the configuration (%s)" % until(rows), until(rows) == ["ucp-in", "out"])
    paused = lambda: next(k["paused"] for k in api("/api/connectors")["connectors"] if k["name"] == "out")
    console_lib.click_and_answer(driver, wait, 'button[data-action="pause"][data-connector="out"]')
    check("paused from the page over HTTPS", until(lambda: paused() is True, 5))
    console_lib.click_and_answer(driver, wait, 'button[data-action="resume"][data-connector="out"]')
    check("... and resumed", until(lambda: paused() is False, 5))
    driver.save_screenshot(artifacts + "/console-https.png")
    console_lib.log_out(driver)
finally:
    driver.quit()
sys.exit(1 if console_lib.failed else 0)
