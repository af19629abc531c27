#!/usr/bin/python3
# console.py ADMIN_URL TOKEN ARTIFACTS SMSC_ID MESSAGE_ID EVIL_URL SMPP -
# the status page in headless Chromium, driven by Selenium as an operator
# would: log in with the token, see the connectors and the overview's
# health, watch the chart move with a time axis while traffic flows, pause
# smpp-out from the page (its queue holds), find a queued message by its
# recipient and drop it, resume smpp-out (the queue drains), find a message
# by its SMSC id; add an account, see its own view after a submit on SMPP
# (host:port SMPP), give it credit, disable and delete it; reload the
# configuration; then a page of another origin tries to pause smpp-out with
# the operator's cookie and is refused. Screenshots go to ARTIFACTS. Prints
# "ok - ..." / "FAIL - ..." lines; exits 1 on any failure.
# SPDX-License-Identifier: Apache-2.0
import os
import re
import subprocess
import sys
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

import console_lib
from console_lib import check, until

url, token, artifacts, smsc_id, message_id, evil_url, smpp = sys.argv[1:8]
api = console_lib.api_reader(url, token)


def queue_of(name):
    return next(q for q in api("/api/queues")["queues"] if q["connector"] == name)


driver = console_lib.browser()
wait = WebDriverWait(driver, 30)   # a hang guard
try:
    driver.get(url + "/")
    login = wait.until(ec.visibility_of_element_located((By.ID, "login")))
    check("the page opens on its login form, the console hidden",
          login.is_displayed() and not driver.find_element(By.ID, "console").is_displayed())
    driver.find_element(By.ID, "token").send_keys("not-the-token")
    driver.find_element(By.ID, "login-button").click()
    check("a wrong token: the form says so",
          until(lambda: driver.find_element(By.ID, "login-error").text == "wrong token", 5))
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login-button").click()
    wait.until(ec.visibility_of_element_located((By.ID, "console")))
    # The tables are drawn again every second: read them in one script.
    js = driver.execute_script
    rows = lambda: js("return [...document.querySelectorAll('#connectors tr[data-key]')].map(r => r.dataset.key)")
    check("logged in: the connectors of the configuration (%s)" % until(rows),
          until(lambda: rows() == ["ucp-in", "smpp-in", "smpp-out"]))
    check("the session is a cookie the page's script cannot read",
          "emg_session" not in driver.execute_script("return document.cookie"))
    driver.save_screenshot(artifacts + "/console-connectors.png")
    level = lambda part: js("const c = document.querySelector('#health tr[data-key=\\'%s\\'] td:nth-child(2)');"
                            " return c ? c.textContent : null" % part)
    check("the overview: the journal ok, in flight ok, no database (%s, %s, %s)"
          % (level("journal"), level("in flight"), level("database")),
          until(lambda: level("journal") == "ok") and level("in flight") == "ok" and level("database") == "off")

    chart = driver.find_element(By.ID, "chart")
    check("the chart has samples and a rate above zero",
          until(lambda: int(chart.get_attribute("data-points")) >= 2 and int(chart.get_attribute("data-last")) > 0))
    ticks = js("return [...document.querySelectorAll('#chart text.tick')].map(t => t.textContent)")
    check("... with a time axis (%s)" % ", ".join(ticks),
          len(ticks) >= 3 and all(re.fullmatch(r"\d{2}:\d{2}:\d{2}", t) for t in ticks))
    check("... and its unit", driver.find_element(By.ID, "scale").text.endswith("msgs/s"))
    before = driver.find_element(By.ID, "rx").get_attribute("points")
    check("the chart moves while traffic flows",
          until(lambda: driver.find_element(By.ID, "rx").get_attribute("points") != before, 5))
    driver.save_screenshot(artifacts + "/console-chart.png")

    def click(action, name, kind="connector", answer=None):
        return console_lib.click_and_answer(driver, wait, 'button[data-action="%s"][data-%s="%s"]'
                                            % (action, kind, name), answer)

    def cell(table, key, n):
        return js("const c = document.querySelector('#%s tr[data-key=\\'%s\\'] td:nth-child(%d)');"
                  " return c ? c.textContent : null" % (table, key, n))

    def state(connector):
        return cell("connectors", connector, 5)

    asked = click("pause", "smpp-out")
    check("pause asks first (%s)" % asked, asked == "pause smpp-out?")
    check("smpp-out shows paused", until(lambda: state("smpp-out") == "paused"))
    held = until(lambda: queue_of("smpp-out")["queued"] > 0)
    q1 = queue_of("smpp-out")["queued"]
    time.sleep(1.5)
    q2 = queue_of("smpp-out")["queued"]
    check("its queue holds what comes (%d, then %d)" % (q1, q2), held and q2 > q1 and queue_of("smpp-out")["paused"])
    check("the page shows the queue held", until(lambda: cell("queues", "smpp-out", 5) == "yes"))
    driver.save_screenshot(artifacts + "/console-paused.png")

    console_lib.click(driver, 'a[data-detail="connector:smpp-out"]')
    head = until(lambda: js("const d = document.getElementById('detail-next'); return d ? d.textContent : ''"), 5)
    check("smpp-out's own view names the message at the head of its queue (%s)" % head,
          re.match(r"next in its queue: message \d+ to \d+, [\d.]+ s old, 0 attempts", head or ""))
    driver.find_element(By.ID, "detail-close").click()

    # A queued message found by its recipient, and dropped.
    waiting = api("/api/queues/smpp-out/messages?limit=1")["messages"][0]
    victim, recipient = waiting["id"], waiting["to"]
    query = driver.find_element(By.ID, "query")
    query.clear()
    query.send_keys(recipient)
    driver.find_element(By.ID, "find").click()
    row = until(lambda: driver.find_elements(By.CSS_SELECTOR, '#result div[data-id="%s"]' % victim), 5)
    check("found by its recipient %s: message %s, queued (%s)" % (recipient, victim, row[0].text if row else ""),
          row and row[0].get_attribute("data-state") == "queued" and "found by recipient" in row[0].text)
    asked = click("drop", victim, kind="id")
    check("drop asks first (%s)" % asked, asked.startswith("drop message %s?" % victim))
    gone = until(lambda: api("/api/messages/%s" % victim).get("state") == "failed", 5)
    check("... and message %s is dropped: %s" % (victim, api("/api/messages/%s" % victim).get("summary")),
          gone and all(m["id"] != victim for m in api("/api/queues/smpp-out/messages?limit=1000")["messages"]))
    driver.save_screenshot(artifacts + "/console-dropped.png")
    click("resume", "smpp-out")
    check("resumed: running again", until(lambda: state("smpp-out") == "running"))
    check("... and the queue drains", until(lambda: queue_of("smpp-out")["queued"] == 0, 20))

    driver.find_element(By.ID, "query").clear()
    driver.find_element(By.ID, "query").send_keys(smsc_id)
    driver.find_element(By.ID, "find").click()
    found = until(lambda: driver.find_elements(By.CSS_SELECTOR, "#result div[data-id]"), 5)
    text = found[0].text if found else ""
    check("found by its SMSC id %s: %s" % (smsc_id, text),
          found and found[0].get_attribute("data-id") == message_id and ": delivered" in text)
    driver.save_screenshot(artifacts + "/console-search.png")

    # An account added from the page, used, given credit, disabled, deleted.
    js("document.getElementById('account-form').scrollIntoView()")
    for field, value in (("new-name", "web1"), ("new-password", "pw1234"), ("new-connectors", "smpp-in"),
                         ("new-rate", "50"), ("new-credit", "100")):
        driver.find_element(By.ID, field).send_keys(value)
    driver.find_element(By.ID, "new-account").click()
    alert = wait.until(ec.alert_is_present())
    asked = alert.text
    alert.accept()
    added = until(lambda: api("/api/accounts/web1").get("credit_left") == 100, 5)
    check("an account added from the page (%s): credit 100, at most 50 msgs/s, on smpp-in" % asked,
          added and api("/api/accounts/web1")["max_rate"] == 50 and api("/api/accounts/web1")["connectors"] == ["smpp-in"])
    sent = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "smpp_client.py"), "submit",
                           smpp, "web1", "pw1234", "100"], capture_output=True, text=True, timeout=20).stdout.strip()
    check("web1 binds at once and submits (%s)" % sent, sent == "0x00000000")
    console_lib.click(driver, 'a[data-detail="account:web1"]')
    info = lambda: js("return document.getElementById('detail').hidden ? '' :"
                      " document.getElementById('detail-info').textContent")
    shown = until(lambda: "credit left 99 of 100" in info(), 10)
    check("its own view: rate against its limit, credit, refusals, receipts (%s)" % info(),
          shown and "of its limit 50" in info() and "refused: 0 over its rate" in info())
    js("document.getElementById('detail').scrollIntoView()")
    driver.save_screenshot(artifacts + "/console-account.png")
    asked = click("credit", "web1", kind="account", answer="+50")
    check("credit +50 from the page (%s): 149 left" % asked,
          until(lambda: api("/api/accounts/web1").get("credit_left") == 149, 5))
    asked = click("disable", "web1", kind="account")
    check("disable asks first (%s), and web1 is disabled" % asked,
          asked == "disable account web1?" and until(lambda: api("/api/accounts/web1").get("state") == "disabled", 5))
    refused = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "smpp_client.py"),
                              "statuses", smpp, "web1", "pw1234", "1"], capture_output=True, text=True,
                             timeout=20).stdout.strip()
    check("... its bind refused (%s)" % refused, refused == "0x0d")
    click("delete", "web1", kind="account")
    check("deleted from the page: gone from the API",
          until(lambda: api("/api/accounts/web1").get("http_status") == 404, 5))
    check("... and from the page", until(lambda: not js("return document.querySelector('#accounts tr[data-key=\"account/web1\"]')"), 5))

    driver.find_element(By.ID, "reload").click()
    alert = wait.until(ec.alert_is_present())
    alert.accept()
    check("the configuration reloaded from the page",
          until(lambda: js("return document.getElementById('notice').textContent") == "configuration reloaded", 5))

    # Another origin's page posts a pause with the operator's cookie.
    driver.get(evil_url)
    body = until(lambda: driver.find_element(By.TAG_NAME, "body").text if "refused" in
                 driver.find_element(By.TAG_NAME, "body").text or "bearer" in
                 driver.find_element(By.TAG_NAME, "body").text else "", 10)
    check("a page of another origin posting a pause is refused (%s)" % body.strip().replace("\n", " "),
          bool(body))
    check("... and smpp-out is not paused", not queue_of("smpp-out")["paused"])
    driver.get(url + "/")
    check("the console is still logged in after a reload",
          until(lambda: driver.find_element(By.ID, "console").is_displayed(), 10))
    console_lib.click(driver, 'a[data-detail="connector:smpp-out"]')
    detail = until(lambda: js("const d = document.getElementById('detail'); return !d.hidden &&"
                              " +document.getElementById('detail-chart').dataset.points >= 2"
                              " ? document.getElementById('detail-title').textContent : ''"), 10)
    legend = js("return document.getElementById('detail-legend').textContent")
    check("a connector's own page: its last ten minutes charted (%s; %s)" % (detail, legend),
          detail == "connector smpp-out: the last ten minutes" and "out" in legend and "queue" in legend)
    driver.save_screenshot(artifacts + "/console-connector.png")
    console_lib.log_out(driver)
finally:
    driver.quit()
sys.exit(1 if console_lib.failed else 0)
