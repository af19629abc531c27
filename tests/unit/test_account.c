/* test_account.c - account.c and account_credit.c: logins refused for
 * each reason, a hashed password proven once and then spared (and
 * forgotten when it changes), a certificate's subject matched whole,
 * max_binds given back, what a submit meets (senders, default_sender,
 * max_rate, credit), accounts changed live, credit worked out from a journal's
 * snapshots and tagged parts, and credit shared through a database;
 * a version replaced while a thread reads it kept until that thread leaves,
 * and logins and submits racing changes (run it under ASan too).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "account_internal.h"   /* a reader that holds a version as account.c's functions do */
#include "grace.h"
#include "config.h"
#include "password.h"
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

/* With a database: accounts changed live keep their credit there. */
static const char shared_conf[] = "database: { conninfo = \"postgresql://127.0.0.1/emg\"; credit_batch = 10; };\n"
                                  "connectors = (\n"
                                  "  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:1\"; }\n"
                                  ");\n";

static void setup_from(const char *text)
{
  struct config_errors e;
  char err[256];
  cfg = config_load_string(text, NAME, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  acc = accounts_create(cfg, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(acc);
}

static void setup(void)
{
  setup_from(conf);
}

static void teardown(void)
{
  accounts_destroy(acc);
  config_free(cfg);
}

static enum account_refusal login_with(unsigned connector, const char *peer, const char *user, const char *pw,
                                       const char *subject, bool bind)
{
  int index = -7;
  enum account_refusal why = accounts_login(acc, connector, peer, user, pw, subject, bind, &index);
  CU_ASSERT(why == ACCOUNT_OK ? index >= 0 : index == -7);
  return why;
}

static enum account_refusal login(unsigned connector, const char *peer, const char *user, const char *pw, bool bind)
{
  return login_with(connector, peer, user, pw, NULL, bind);
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
  accounts_unbind(acc, hashed);
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

/* A client certificate: alone for an account without a password, with
 * the password for one that has both; its subject exactly. */
static void test_certificate_logins(void)
{
  setup_from("accounts = (\n"
             "  { name = \"cert\"; tls_subject = \"CN=acme,O=Example\"; },\n"
             "  { name = \"both\"; password = \"pw\"; tls_subject = \"CN=acme,O=Example\"; },\n"
             "  { name = \"shop\"; password = \"pw\"; }\n"
             ");\n"
             "connectors = ( { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:1\"; } );\n");
  const char *acme = "CN=acme,O=Example";
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "cert", "", acme, false), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "cert", "anything", acme, false), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "cert", "", NULL, false), ACCOUNT_CERTIFICATE);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "cert", "", "CN=acme,O=Other", false), ACCOUNT_CERTIFICATE);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "cert", "", "CN=acme", false), ACCOUNT_CERTIFICATE);
  /* One that starts with the subject and goes on: another certificate. */
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "cert", "", "CN=acme,O=Example,OU=x", false), ACCOUNT_CERTIFICATE);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "both", "pw", acme, false), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "both", "px", acme, false), ACCOUNT_PASSWORD);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "both", "pw", NULL, false), ACCOUNT_CERTIFICATE);
  CU_ASSERT_EQUAL(login_with(0, "127.0.0.1:5", "shop", "pw", acme, false), ACCOUNT_OK);   /* not tied: ignored */
  CU_ASSERT_EQUAL(accounts_refused(acc, ACCOUNT_CERTIFICATE), 5);
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

static struct config_account account_named(const char *name, const char *password)
{
  struct config_account a;
  memset(&a, 0, sizeof a);
  snprintf(a.name, sizeof a.name, "%s", name);
  snprintf(a.password, sizeof a.password, "%s", password);
  a.credit = CONFIG_CREDIT_UNLIMITED;
  a.enabled = true;
  return a;
}

static void test_changes(void)
{
  setup();
  char err[256];
  int slot, shop = accounts_find(acc, "shop");
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "new", "pw", true), ACCOUNT_UNKNOWN);
  /* Added: found at once, in a slot of its own. */
  struct config_account a = account_named("new", "pw");
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_EQUAL(slot, 5);
  CU_ASSERT_EQUAL(accounts_used(acc), 6);
  CU_ASSERT_EQUAL(accounts_find(acc, "new"), 5);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "new", "pw", true), ACCOUNT_OK);
  enum account_refusal why;
  CU_ASSERT_TRUE(accounts_session_allowed(acc, slot, 0, "127.0.0.1:5", &why));
  /* Changed: disabled, its session is no longer allowed; the slot stays. */
  a.enabled = false;
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_EQUAL(slot, 5);
  CU_ASSERT_FALSE(accounts_session_allowed(acc, slot, 0, "127.0.0.1:5", &why));
  CU_ASSERT_EQUAL(why, ACCOUNT_DISABLED);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "new", "pw", true), ACCOUNT_DISABLED);
  /* Only on "in2" now: unknown on "in". */
  a.enabled = true;
  a.n_connectors = 1;
  snprintf(a.connectors[0], sizeof a.connectors[0], "in2");
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_FALSE(accounts_session_allowed(acc, slot, 0, "127.0.0.1:5", &why));
  CU_ASSERT_EQUAL(why, ACCOUNT_UNKNOWN);
  CU_ASSERT_TRUE(accounts_uses(acc, slot, 1));
  /* A connector that is not a server connector, a bad allow_ip: refused. */
  snprintf(a.connectors[0], sizeof a.connectors[0], "out");
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_E_INVALID);
  CU_ASSERT_STRING_EQUAL(err, "connectors: no server connector is named 'out'");
  CU_ASSERT_TRUE(accounts_uses(acc, 5, 1));     /* as it was */
  /* Removed: unknown at once; its slot is not given to the next one while
   * its session lasts (and for a grace period after). */
  CU_ASSERT_EQUAL(accounts_remove(acc, "new"), 5);
  CU_ASSERT_EQUAL(accounts_find(acc, "new"), -1);
  CU_ASSERT_FALSE(accounts_uses(acc, 5, 1));
  CU_ASSERT_EQUAL(login(1, "127.0.0.1:5", "new", "pw", false), ACCOUNT_UNKNOWN);
  struct config_account b = account_named("newer", "pw");
  CU_ASSERT_EQUAL(accounts_put(acc, &b, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_EQUAL(slot, 6);
  struct account_view v;
  CU_ASSERT_FALSE(accounts_view(acc, 5, &v));
  CU_ASSERT_TRUE(accounts_view(acc, (unsigned)shop, &v));
  CU_ASSERT_STRING_EQUAL(v.cfg.name, "shop");
  teardown();
}

/* A hashed password changed live: the old one, proven a moment before
 * (and so spared the hashing for a while), is refused at once, and the
 * new one is taken. */
static void test_password_change(void)
{
  setup();
  char err[256];
  int slot, hashed = accounts_find(acc, "hashed");
  CU_ASSERT_FATAL(hashed >= 0);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", false), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", false), ACCOUNT_OK);   /* proven */
  struct account_view v;
  CU_ASSERT_TRUE_FATAL(accounts_view(acc, (unsigned)hashed, &v));
  struct config_account a = v.cfg;
  CU_ASSERT_EQUAL_FATAL(password_hash_new("c0w!99", a.password_hash, sizeof a.password_hash), 0);
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_EQUAL(slot, hashed);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", false), ACCOUNT_PASSWORD);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "c0w!99", false), ACCOUNT_OK);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "c0w!99", false), ACCOUNT_OK);    /* proven in turn */
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "hashed", "h0rse!42", false), ACCOUNT_PASSWORD);
  teardown();
}

static void test_credit(void)
{
  setup();
  char err[256];
  int slot;
  uint32_t epoch;
  struct config_account a = account_named("paying", "pw");
  a.credit = 5;
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 2, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(epoch, 1);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 2, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 2, &epoch), PROTO_E_CREDIT);   /* all or none */
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 1, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 1, &epoch), PROTO_E_CREDIT);
  accounts_credit_give_back(acc, "paying", 1);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 1, &epoch), PROTO_OK);
  /* No limit: no epoch, never refused. */
  CU_ASSERT_EQUAL(accounts_credit_take(acc, accounts_find(acc, "shop"), 1000, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(epoch, 0);
  /* The same credit written again (a reload) leaves what is left; another sets it. */
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  struct account_view v;
  accounts_view(acc, (unsigned)slot, &v);
  CU_ASSERT_EQUAL(v.credit_left, 0);
  CU_ASSERT_EQUAL(v.refused_credit, 2);
  int64_t left;
  CU_ASSERT_TRUE(accounts_credit_change(acc, slot, true, 10, &left));
  CU_ASSERT_EQUAL(left, 10);
  accounts_view(acc, (unsigned)slot, &v);
  CU_ASSERT_EQUAL(v.cfg.credit, 10);   /* the figure set: what the accounts file gets */
  teardown();
}

/* What a crash leaves: snapshots and tagged parts, replayed in any order. */
static void snapshot_seen(void *ctx, const struct spool_record *rec)
{
  struct spool_record *last = ctx;
  *last = *rec;
}

static void test_credit_replay(void)
{
  setup();
  char err[256];
  int slot;
  uint32_t epoch;
  struct config_account a = account_named("paying", "pw");
  a.credit = 100;
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 3, &epoch), PROTO_OK);   /* epoch 1 */
  struct spool_record snap = { 0 };
  CU_ASSERT_EQUAL(accounts_credit_snapshot(acc, false, snapshot_seen, &snap), 1);
  CU_ASSERT_EQUAL(snap.type, SPOOL_REC_CREDIT);
  CU_ASSERT_EQUAL(snap.credit_left, 97);
  CU_ASSERT_EQUAL(snap.credit_epoch, 1);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 1, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(epoch, 2);                     /* taken after the snapshot */
  CU_ASSERT_EQUAL(accounts_credit_snapshot(acc, true, snapshot_seen, &snap), 0);   /* nothing given back */
  teardown();

  /* A restart: the configuration says 100; the journal has the snapshot
   * (97 left at epoch 1), parts of epoch 1 (counted in it) and 2 (not). */
  setup();
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  accounts_credit_replay_part(acc, "paying", 2);
  accounts_credit_replay_part(acc, "paying", 1);
  accounts_credit_replay_snapshot(acc, "paying", 100, 97, 1);
  accounts_credit_replay_part(acc, "paying", 2);
  accounts_credit_replay_part(acc, "nobody", 2);
  CU_ASSERT_EQUAL(accounts_credit_replay_done(acc), 1);
  struct account_view v;
  accounts_view(acc, (unsigned)slot, &v);
  CU_ASSERT_EQUAL(v.credit_left, 95);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 1, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(epoch, 3);                     /* after every epoch the journal holds */
  teardown();

  /* Credit set anew in the file (150) since the snapshot: the file wins. */
  setup();
  a.credit = 150;
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  accounts_credit_replay_snapshot(acc, "paying", 100, 97, 1);
  accounts_credit_replay_part(acc, "paying", 2);
  CU_ASSERT_EQUAL(accounts_credit_replay_done(acc), 0);
  accounts_view(acc, (unsigned)slot, &v);
  CU_ASSERT_EQUAL(v.credit_left, 150);
  teardown();
}

/* Shared credit: taken here, pushed in batches, the database's figure. */
static unsigned pushes_due;
static void push_due(void *ctx)
{
  (void)ctx;
  pushes_due++;
}

static int shared_account(size_t credit)
{
  char err[256];
  int slot;
  struct config_account a = account_named("shared", "pw");
  a.managed = true;
  a.credit = credit;
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  return slot;
}

static int64_t left_of(int slot)
{
  struct account_view v;
  CU_ASSERT_TRUE(accounts_view(acc, (unsigned)slot, &v));
  CU_ASSERT_TRUE(v.shared);
  return v.credit_left;
}

static void test_credit_shared(void)
{
  setup_from(shared_conf);
  pushes_due = 0;
  accounts_on_push_due(acc, push_due, NULL);
  int slot = shared_account(100);
  uint32_t epoch;
  char name[MSG_USER_LEN];
  int64_t parts;
  CU_ASSERT_FALSE(accounts_credit_push(acc, (unsigned)slot, name, &parts, &epoch));   /* nothing taken */
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 4, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(pushes_due, 0);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 4, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(pushes_due, 1);                /* half the batch of 10: push now */
  /* A batch taken since the last push: the next waits for it. */
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 4, &epoch), PROTO_E_THROTTLED);
  CU_ASSERT_EQUAL(left_of(slot), 92);
  CU_ASSERT_TRUE(accounts_credit_push(acc, (unsigned)slot, name, &parts, &epoch));
  CU_ASSERT_STRING_EQUAL(name, "shared");
  CU_ASSERT_EQUAL(parts, 8);
  CU_ASSERT_EQUAL(epoch, 1);
  CU_ASSERT_EQUAL(left_of(slot), 92);            /* the same while the push is under way */
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 4, &epoch), PROTO_OK);
  CU_ASSERT_EQUAL(epoch, 2);
  /* The push failed: its parts go with the next one. */
  accounts_credit_unpush(acc, (unsigned)slot, parts);
  CU_ASSERT_EQUAL(left_of(slot), 88);
  CU_ASSERT_TRUE(accounts_credit_push(acc, (unsigned)slot, name, &parts, &epoch));
  CU_ASSERT_EQUAL(parts, 12);
  /* The database says 50 left over all nodes, this one's pushes included;
   * 1 taken since: 49 here. A part given back comes off the next push. */
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 1, &epoch), PROTO_OK);
  accounts_credit_shared(acc, (unsigned)slot, true, 50, epoch - 1);
  CU_ASSERT_EQUAL(left_of(slot), 49);
  accounts_credit_give_back(acc, "shared", 2);
  CU_ASSERT_TRUE(accounts_credit_push(acc, (unsigned)slot, name, &parts, &epoch));
  CU_ASSERT_EQUAL(parts, -1);
  /* Other nodes spent it: refused for credit, not throttled. */
  accounts_credit_shared(acc, (unsigned)slot, true, 0, 0);
  CU_ASSERT_EQUAL(accounts_credit_take(acc, slot, 1, &epoch), PROTO_E_CREDIT);
  /* An account of emgd.conf keeps its credit here, database or not. */
  char err[256];
  struct config_account own = account_named("own", "pw");
  own.credit = 5;
  int own_slot;
  CU_ASSERT_EQUAL(accounts_put(acc, &own, &own_slot, err, sizeof err), ACCOUNT_CHANGED);
  for (int i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(accounts_credit_take(acc, own_slot, 1, &epoch), PROTO_OK);
  CU_ASSERT_FALSE(accounts_credit_push(acc, (unsigned)own_slot, name, &parts, &epoch));
  teardown();
}

/* After a crash, the parts not pushed: those tagged after the database's
 * last pushed epoch, or after a newer snapshot plus what it held. */
static void test_credit_shared_replay(void)
{
  /* Pushed up to epoch 3, no snapshot: parts of epochs 4 and 5 were not. */
  setup_from(shared_conf);
  int slot = shared_account(100);
  accounts_credit_shared(acc, (unsigned)slot, true, 100, 3);
  accounts_credit_replay_part(acc, "shared", 2);
  accounts_credit_replay_part(acc, "shared", 3);
  accounts_credit_replay_part(acc, "shared", 4);
  accounts_credit_replay_part(acc, "shared", 5);
  accounts_credit_replay_part(acc, "shared", 5);
  CU_ASSERT_EQUAL(accounts_credit_replay_done(acc), 1);
  CU_ASSERT_EQUAL(left_of(slot), 97);
  uint32_t epoch;
  char name[MSG_USER_LEN];
  int64_t parts;
  CU_ASSERT_TRUE(accounts_credit_push(acc, (unsigned)slot, name, &parts, &epoch));
  CU_ASSERT_EQUAL(parts, 3);
  CU_ASSERT_EQUAL(epoch, 6);                     /* past every epoch the journal holds */
  teardown();

  /* A snapshot at epoch 6 (2 not pushed then) newer than the last push (4):
   * its 2 and the parts after it; older parts may be gone from the journal. */
  setup_from(shared_conf);
  slot = shared_account(100);
  accounts_credit_shared(acc, (unsigned)slot, true, 100, 4);
  accounts_credit_replay_snapshot(acc, "shared", CREDIT_SHARED, 2, 6);
  accounts_credit_replay_part(acc, "shared", 7);
  CU_ASSERT_EQUAL(accounts_credit_replay_done(acc), 1);
  CU_ASSERT_EQUAL(left_of(slot), 97);
  teardown();

  /* The same snapshot, but a push (epoch 8) after it: only parts after that. */
  setup_from(shared_conf);
  slot = shared_account(100);
  accounts_credit_shared(acc, (unsigned)slot, true, 100, 8);
  accounts_credit_replay_snapshot(acc, "shared", CREDIT_SHARED, 2, 6);
  accounts_credit_replay_part(acc, "shared", 7);
  accounts_credit_replay_part(acc, "shared", 9);
  CU_ASSERT_EQUAL(accounts_credit_replay_done(acc), 1);
  CU_ASSERT_EQUAL(left_of(slot), 99);
  teardown();
}

/* A thread inside the accounts' grace domain with a version of "held"
 * loaded, as accounts_login is while it hashes a password. */
struct holder {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int slot;
  int stage;                       /* 1: inside, version loaded; 2: may read it and leave; 3: left */
  char name_seen[MSG_USER_LEN];
  bool enabled_seen;
};

static void holder_wait(struct holder *h, int stage)
{
  pthread_mutex_lock(&h->lock);
  while (h->stage < stage)
    pthread_cond_wait(&h->cond, &h->lock);
  pthread_mutex_unlock(&h->lock);
}

static void holder_move(struct holder *h, int stage)
{
  pthread_mutex_lock(&h->lock);
  h->stage = stage;
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->lock);
}

static void *hold_version(void *arg)
{
  struct holder *h = arg;
  grace_enter(acc->grace);
  const struct account_def *d = atomic_load_explicit(&acc->slots[h->slot].def, memory_order_acquire);
  holder_move(h, 1);
  holder_wait(h, 2);
  /* Changed and ticked meanwhile: still the version loaded, whole (ASan
   * says so too when it was freed under us). */
  memcpy(h->name_seen, d->cfg.name, sizeof h->name_seen);
  h->enabled_seen = d->cfg.enabled;
  grace_leave(acc->grace);
  holder_move(h, 3);
  return NULL;
}

static void test_version_held(void)
{
  setup();
  char err[256];
  int slot;
  struct config_account a = account_named("held", "pw");
  CU_ASSERT_EQUAL_FATAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  accounts_tick(acc, 1000000000ull);
  CU_ASSERT_EQUAL(accounts_pending(acc), 0);   /* nobody inside: what the put replaced is gone */
  struct holder h = { .slot = slot };
  pthread_mutex_init(&h.lock, NULL);
  pthread_cond_init(&h.cond, NULL);
  pthread_t t;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, hold_version, &h), 0);
  holder_wait(&h, 1);
  /* Disabled: new logins see it at once, the old version is kept. */
  a.enabled = false;
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_EQUAL(login(0, "127.0.0.1:5", "held", "pw", false), ACCOUNT_DISABLED);
  CU_ASSERT_EQUAL(accounts_pending(acc), 1);
  accounts_tick(acc, 2000000000ull);
  CU_ASSERT_EQUAL(accounts_pending(acc), 1);
  /* Another change (which reclaims first) and more ticks: still kept. */
  a.enabled = true;
  CU_ASSERT_EQUAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  accounts_tick(acc, 3000000000ull);
  CU_ASSERT_EQUAL(accounts_pending(acc), 2);
  holder_move(&h, 2);
  holder_wait(&h, 3);
  pthread_join(t, NULL);
  CU_ASSERT_STRING_EQUAL(h.name_seen, "held");
  CU_ASSERT_TRUE(h.enabled_seen);              /* the first version, not the disabled one */
  /* It left: the next tick frees both. */
  accounts_tick(acc, 4000000000ull);
  CU_ASSERT_EQUAL(accounts_pending(acc), 0);
  /* Removed while nobody is inside: version and index freed by the next tick. */
  CU_ASSERT_EQUAL(accounts_remove(acc, "held"), slot);
  CU_ASSERT_EQUAL(accounts_pending(acc), 2);
  accounts_tick(acc, 5000000000ull);
  CU_ASSERT_EQUAL(accounts_pending(acc), 0);
  /* Freed, and no session left, yet its slot is not the next account's:
   * a thread may still hold the number (an HTTP login before its submit). */
  int next;
  struct config_account b = account_named("next", "pw");
  CU_ASSERT_EQUAL(accounts_put(acc, &b, &next, err, sizeof err), ACCOUNT_CHANGED);
  CU_ASSERT_NOT_EQUAL(next, slot);
  pthread_cond_destroy(&h.cond);
  pthread_mutex_destroy(&h.lock);
  teardown();
}

/* One thread logs in, submits and looks while another keeps changing the
 * account (settings, password, removed and added again) and ticking. */
#define RACE_CHANGES 3000
#define RACE_READS_MAX 1000000

struct race {
  _Atomic bool done;
  _Atomic unsigned reads;
  unsigned ok, refused, strange, admitted, names;
};

static void *race_reader(void *arg)
{
  struct race *r = arg;
  struct account_view v;
  char name[MSG_USER_LEN];
  /* A thousand at least, should the changes be over before it starts. */
  for (unsigned i = 0; i < RACE_READS_MAX && (i < 1000 || !atomic_load(&r->done)); i++) {
    int slot = -1;
    enum account_refusal why = accounts_login(acc, 0, "127.0.0.1:5", "churn", "pw", NULL, false, &slot);
    if (why == ACCOUNT_OK) {
      r->ok++;
      struct msg m = from("");
      enum proto_status st = accounts_admit(acc, slot, &m, 1000000000ull + i);
      r->admitted += st == PROTO_OK;
      if (st != PROTO_OK && st != PROTO_E_SOURCE && st != PROTO_E_AUTH)
        r->strange++;
      enum account_refusal still;
      accounts_session_allowed(acc, slot, 0, "127.0.0.1:5", &still);
      accounts_uses(acc, slot, 0);
      accounts_rate_wait_ns(acc, slot, 1000000000ull + i);
      if (accounts_view(acc, (unsigned)slot, &v) && strcmp(v.cfg.name, "churn") != 0)
        r->strange++;
      if (accounts_name(acc, (unsigned)slot, name))
        r->names += strcmp(name, "churn") == 0;
    } else if (why == ACCOUNT_DISABLED || why == ACCOUNT_UNKNOWN || why == ACCOUNT_PASSWORD) {
      r->refused++;
    } else {
      r->strange++;
    }
    atomic_fetch_add(&r->reads, 1);
  }
  return NULL;
}

static void test_changes_race(void)
{
  setup();
  char err[256];
  int slot;
  struct race r = { .done = false };
  struct config_account a = account_named("churn", "pw");
  CU_ASSERT_EQUAL_FATAL(accounts_put(acc, &a, &slot, err, sizeof err), ACCOUNT_CHANGED);
  pthread_t t;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, race_reader, &r), 0);
  /* The changes start once it reads (ten seconds at most). */
  for (int w = 0; w < 10000 && !atomic_load(&r.reads); w++)
    nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
  unsigned changed = 0;
  for (unsigned i = 0; i < RACE_CHANGES; i++) {
    a.enabled = i % 3 != 0;
    snprintf(a.password, sizeof a.password, "%s", i % 5 == 1 ? "other" : "pw");
    a.n_senders = i % 2;
    snprintf(a.senders[0], sizeof a.senders[0], "%s", "SHOP");
    snprintf(a.default_sender, sizeof a.default_sender, "%s", i % 4 ? "SHOP" : "");
    if (i % 100 == 99 && accounts_remove(acc, "churn") < 0)
      continue;
    changed += accounts_put(acc, &a, &slot, err, sizeof err) == ACCOUNT_CHANGED;
    if (i % 10 == 0)
      accounts_tick(acc, 1000000000ull * (i + 1));
    sched_yield();   /* the reader gets the versions in between */
  }
  atomic_store(&r.done, true);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(changed, RACE_CHANGES);
  unsigned reads = atomic_load(&r.reads);
  CU_ASSERT(reads >= 1000);
  CU_ASSERT_EQUAL(r.strange, 0);
  CU_ASSERT_EQUAL(reads, r.ok + r.refused);
  /* Nobody inside any more: everything replaced is freed by one tick. */
  accounts_tick(acc, 1000000000ull * (RACE_CHANGES + 1));
  CU_ASSERT_EQUAL(accounts_pending(acc), 0);
  teardown();
}

void suite_account(void);
void suite_account(void)
{
  static const struct test_case cases[] = {
    { "logins and their refusals", test_logins },
    { "a client certificate for the password", test_certificate_logins },
    { "submits: senders, default_sender, max_rate", test_submits },
    { "accounts added, changed and removed live", test_changes },
    { "a password changed live: the old one refused at once", test_password_change },
    { "credit: taken per part, all or none, given back, set", test_credit },
    { "credit after a crash: snapshots and tagged parts", test_credit_replay },
    { "credit shared through the database: batches and pushes", test_credit_shared },
    { "shared credit after a crash: what was not pushed", test_credit_shared_replay },
    { "a version replaced while a thread reads it: kept until it leaves", test_version_held },
    { "logins and submits while the account keeps changing", test_changes_race },
    { NULL, NULL },
  };
  test_add_suite("account", cases);
}
