/* test_account.c - account.c: logins refused for each reason, a hashed
 * password proven once and then spared, max_binds given back, and what a
 * submit meets: senders, default_sender and the max_rate budget. */
#include <stdio.h>
#include <string.h>
#include "account.h"
#include "config.h"
#include "testutil.h"

#define NAME "accounts.conf"
/* "h0rse!42", by mkpasswd -m yescrypt */
#define HASH "$y$j9T$.hPiBczy.7XMpFAwo3OWe0$qTpLhKuz.tZO8l.Ihre20b9LOoF6OSr6vCBHz.in7tD"

static const char conf[] =
  "accounts = (\n"
  "  { name = \"hashed\"; password_hash = \"" HASH "\"; max_binds = 2; allow_ip = [ \"127.0.0.0/8\" ]; },\n"
  "  { name = \"off\"; password = \"pw\"; enabled = false; },\n"
  "  { name = \"old\"; password = \"pw\"; expires = \"2020-01-01\"; },\n"
  "  { name = \"other\"; password = \"pw\"; connectors = [ \"in2\" ]; },\n"
  "  { name = \"shop\"; password = \"pw\"; senders = [ \"SHOP\", \"4917\" ]; default_sender = \"SHOP\";\n"
  "    max_rate = 10.0; }\n"
  ");\n"
  "connectors = (\n"
  "  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:1\"; },\n"
  "  { name = \"in2\"; protocol = \"ucp\"; mode = \"server\"; listen = \"127.0.0.1:2\"; },\n"
  "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\"; connect = \"h:1\"; system_id = \"s\"; }\n"
  ");\n";

static struct config *cfg;
static struct accounts *acc;

static void setup(void)
{
  struct config_errors e;
  char err[256];
  cfg = config_load_string(conf, NAME, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  acc = accounts_create(cfg, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(acc);
}

static void teardown(void)
{
  accounts_destroy(acc);
  config_free(cfg);
}

static enum account_refusal login(unsigned connector, const char *peer, const char *user, const char *pw, bool bind)
{
  int index = -7;
  enum account_refusal why = accounts_login(acc, connector, peer, user, pw, bind, &index);
  CU_ASSERT(why == ACCOUNT_OK ? index >= 0 : index == -7);
  return why;
}

static void test_logins(void)
{
  setup();
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "nobody", "pw", true), ACCOUNT_UNKNOWN);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "other", "pw", true), ACCOUNT_UNKNOWN);   /* not of "in" */
  CU_ASSERT_EQUAL(login(1, "127.0.0.1:5", "other", "pw", false), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!43", true), ACCOUNT_PASSWORD);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "off", "pw", true), ACCOUNT_DISABLED);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "old", "pw", true), ACCOUNT_EXPIRED);
  CU_ASSERT_EQUAL(login(0, "192.0.2.1:5", "hashed", "h0rse!42", true), ACCOUNT_ADDRESS);
  /* Proven once, the password is spared the hashing; a wrong one still fails. */
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", true), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!4", false), ACCOUNT_PASSWORD);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", true), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", true), ACCOUNT_MAX_BINDS);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", false), ACCOUNT_OK);   /* HTTP: no session */
  int hashed = accounts_find(acc, "hashed");
  CU_ASSERT_EQUAL(hashed, 0);
  accounts_unbind(acc, 0, 0);   /* "hashed" is the first user of "in" */
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", true), ACCOUNT_OK);
  CU_ASSERT_EQUAL(accounts_refused(acc, ACCOUNT_UNKNOWN), 2);
  CU_ASSERT_EQUAL(accounts_refused(acc, ACCOUNT_PASSWORD), 2);
  CU_ASSERT_EQUAL(accounts_refused(acc, ACCOUNT_MAX_BINDS), 1);
  CU_ASSERT_EQUAL(account_refusal_status(ACCOUNT_UNKNOWN), PROTO_E_AUTH_ACCOUNT);
  CU_ASSERT_EQUAL(account_refusal_status(ACCOUNT_PASSWORD), PROTO_E_AUTH_PASSWORD);
  CU_ASSERT_EQUAL(account_refusal_status(ACCOUNT_ADDRESS), PROTO_E_AUTH);
  CU_ASSERT_EQUAL(accounts_find(acc, "nobody"), -1);
  teardown();
}

static struct msg from(const char *src)
{
  struct msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.src.addr, sizeof m.src.addr, "%s", src);
  return m;
}

static void test_submits(void)
{
  setup();
  int shop = accounts_find(acc, "shop");
  CU_ASSERT_FATAL(shop >= 0);
  uint64_t t = 1000000000000ull;
  struct msg m = from("");
  CU_ASSERT_EQUAL(accounts_admit(acc, shop, &m, t), PROTO_OK);
  CU_ASSERT_STRING_EQUAL(m.src.addr, "SHOP");             /* default_sender */
  CU_ASSERT_EQUAL(m.src.ton, MSG_TON_ALPHANUMERIC);
  m = from("491701234");
  CU_ASSERT_EQUAL(accounts_admit(acc, shop, &m, t), PROTO_OK);   /* a number under "4917" */
  m = from("SHOPX");
  CU_ASSERT_EQUAL(accounts_admit(acc, shop, &m, t), PROTO_E_SOURCE);
  m = from("4930");
  CU_ASSERT_EQUAL(accounts_admit(acc, shop, &m, t), PROTO_E_SOURCE);
  /* max_rate 10: with the two above, a second's worth and one at once (its
   * budget may run a second ahead); then one each 100 ms. */
  m = from("SHOP");
  unsigned taken = 0;
  while (taken < 100 && accounts_admit(acc, shop, &m, t) == PROTO_OK)
    taken++;
  CU_ASSERT_EQUAL(taken + 2, 11);
  taken = 0;
  for (uint64_t ms = 1; ms <= 10000; ms++)
    taken += accounts_admit(acc, shop, &m, t + ms * 1000000) == PROTO_OK;
  CU_ASSERT(taken >= 99 && taken <= 101);   /* 10 s at 10 a second */
  CU_ASSERT_EQUAL(accounts_admit(acc, shop, &m, t + 10000 * 1000000ull), PROTO_E_THROTTLED);
  /* Another account is not touched by shop's budget; one without limits. */
  int hashed = accounts_find(acc, "hashed");
  for (int i = 0; i < 1000; i++)
    CU_ASSERT_EQUAL(accounts_admit(acc, hashed, &m, t), PROTO_OK);
  CU_ASSERT_EQUAL(accounts_admit(acc, -1, &m, t), PROTO_OK);   /* no account (an SMSC's MO) */
  teardown();
}

void suite_account(void);
void suite_account(void)
{
  static const struct test_case cases[] = {
    { "logins and their refusals", test_logins },
    { "submits: senders, default_sender, max_rate", test_submits },
    { NULL, NULL },
  };
  test_add_suite("account", cases);
}
