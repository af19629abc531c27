/* test_plugins.c - the plugin host with the real example plugins
 * (blacklist, normalize, keyword) and a plugin that misbehaves on purpose:
 * loading and its errors, each plugin's behaviour, containment of failures
 * and time-outs per on_error, the counters, and the plugins section of the
 * configuration.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "charset.h"
#include "config.h"
#include "config_checks.h"
#include "plugin_host.h"
#include "sms_text.h"
#include "testutil.h"

#define NAME "plugins.conf"
#define PLUGIN(name) EMG_PLUGIN_DIR "/" name ".so"
#define TEST_PLUGIN(name) EMG_TEST_PLUGIN_DIR "/" name ".so"

/* Room for hooks on a busy test machine, where a result must not be lost
 * to a time-out. */
#define SLACK "timeout_ms = 5000; "

/* Connector indexes of CONNECTORS. */
enum { IN, SMPP_B, SMPP_C };

#define CONNECTORS \
  "connectors = (\n" \
  "  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:0\";\n" \
  "    users = ( { name = \"u\"; password = \"p\"; } ); },\n" \
  "  { name = \"smpp-b\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:1\"; system_id = \"x\"; },\n" \
  "  { name = \"smpp-c\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:2\"; system_id = \"x\"; }\n" \
  ");\n"

/* CONNECTORS and the given plugins list as a config, asserted to load. */
static struct config *plugins_config(const char *plugins)
{
  char text[8192];
  snprintf(text, sizeof text, CONNECTORS "plugins = (\n%s\n);\n", plugins);
  struct config_errors e;
  struct config *cfg = config_load_string(text, NAME, &e);
  for (unsigned i = 0; i < e.count; i++)
    fprintf(stderr, "%s\n", e.lines[i]);
  CU_ASSERT_EQUAL(e.count, 0);
  config_errors_free(&e);
  return cfg;
}

/* A host for the plugins list, asserted to load. */
static struct plugin_host *host_for(const char *plugins)
{
  struct config *cfg = plugins_config(plugins);
  if (!cfg)
    return NULL;
  char err[2048];
  struct plugin_host *h = plugin_host_load(cfg, err, sizeof err);
  if (!h)
    fprintf(stderr, "%s\n", err);
  CU_ASSERT_PTR_NOT_NULL(h);
  config_free(cfg);
  return h;
}

/* Asserts that the plugins list does not load; its errors are left in err. */
static void host_refused(const char *plugins, char *err, size_t errlen)
{
  struct config *cfg = plugins_config(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  struct plugin_host *h = plugin_host_load(cfg, err, errlen);
  CU_ASSERT_PTR_NULL(h);
  plugin_host_destroy(h);
  config_free(cfg);
}

/* A message with its own payload storage. */
struct test_msg {
  struct msg m;
  uint8_t data[2048];
};

/* A message to dst with text in coding (8-bit: the bytes of text as they
 * are). Returns the payload's length, negative when text does not fit the
 * coding. Asserts nothing, so that threads may call it. */
static int fill_msg(struct test_msg *t, const char *dst, uint8_t coding, const char *text)
{
  memset(t, 0, sizeof *t);
  snprintf(t->m.src.addr, sizeof t->m.src.addr, "4930123456");
  t->m.src.ton = MSG_TON_INTERNATIONAL;
  snprintf(t->m.dst.addr, sizeof t->m.dst.addr, "%s", dst);
  t->m.coding = coding;
  int n = (int)strlen(text);
  if (coding == SMS_TEXT_GSM7)
    n = charset_utf8_to_gsm(t->data, sizeof t->data, text, strlen(text), 0);
  else if (coding == SMS_TEXT_UCS2)
    n = charset_utf8_to_ucs2(t->data, sizeof t->data, text, strlen(text));
  else
    memcpy(t->data, text, strlen(text));
  t->m.data = t->data;
  t->m.data_len = n > 0 ? (uint32_t)n : 0;
  return n;
}

static struct msg *make_msg(struct test_msg *t, const char *dst, uint8_t coding, const char *text)
{
  CU_ASSERT_FATAL(fill_msg(t, dst, coding, text) >= 0);
  return &t->m;
}

static enum plugin_host_verdict receive(struct plugin_host *h, struct msg *m, char *reason)
{
  return plugin_host_before_receive(h, m, "in", "u", reason, PLUGIN_HOST_REASON_LEN);
}

/* before_receive on a message to dst; the message is left in *t. */
static enum plugin_host_verdict receive_to(struct plugin_host *h, struct test_msg *t,
                                           const char *dst, char *reason)
{
  return receive(h, make_msg(t, dst, SMS_TEXT_GSM7, "hello"), reason);
}

static struct plugin_host_stats stats_of(const struct plugin_host *h, unsigned i)
{
  struct plugin_host_stats s = { 0 };
  CU_ASSERT_EQUAL(plugin_host_stats(h, i, &s), 0);
  return s;
}

/* A file holding text; its name goes to path (PATH_MAX bytes). */
static void write_file(char *path, size_t len, const char *text)
{
  if (!path[0]) {
    snprintf(path, len, "/tmp/emg-plugins-XXXXXX");
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
  }
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
}

/* ---- the plugins section of the configuration ---- */

static void test_config_entries(void)
{
  struct config *cfg = plugins_config(
      "  { path = \"plugins/blacklist.so\"; file = \"etc/bl.txt\"; limit = 3; ratio = 0.1;\n"
      "    strict = true; big = 3000000000L; },\n"
      "  { path = \"keyword\"; name = \"kw\"; on_error = \"refuse\"; timeout_ms = 200; map = \"A=b\"; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  CU_ASSERT_EQUAL_FATAL(cfg->n_plugins, 2);
  const struct config_plugin *bl = &cfg->plugins[0], *kw = &cfg->plugins[1];
  /* Taken from the configuration's folder (here the working directory's). */
  CU_ASSERT_TRUE(bl->path[0] == '/' && strstr(bl->path, "/plugins/blacklist.so") != NULL);
  CU_ASSERT_STRING_EQUAL(bl->name, "blacklist");
  CU_ASSERT_EQUAL(bl->on_error, CONFIG_PLUGIN_PASS);
  CU_ASSERT_EQUAL(bl->timeout_ms, 50);
  CU_ASSERT_EQUAL(bl->line, 8);
  CU_ASSERT_EQUAL_FATAL(bl->n_settings, 5);
  static const char *const expected[][2] = {
    { "file", "etc/bl.txt" }, { "limit", "3" }, { "ratio", "0.1" }, { "strict", "true" },
    { "big", "3000000000" },
  };
  for (unsigned i = 0; i < 5; i++) {
    CU_ASSERT_STRING_EQUAL(bl->settings[i].key, expected[i][0]);
    CU_ASSERT_STRING_EQUAL(bl->settings[i].value, expected[i][1]);
  }
  CU_ASSERT_STRING_EQUAL(kw->name, "kw");
  CU_ASSERT_EQUAL(kw->on_error, CONFIG_PLUGIN_REFUSE);
  CU_ASSERT_EQUAL(kw->timeout_ms, 200);
  CU_ASSERT_EQUAL_FATAL(kw->n_settings, 1);
  CU_ASSERT_STRING_EQUAL(kw->settings[0].key, "map");
  CU_ASSERT_STRING_EQUAL(kw->settings[0].value, "A=b");
  config_free(cfg);
}

static void test_config_errors(void)
{
  struct config_errors e;
  config_check_refused(
      CONNECTORS
      "plugins = (\n"
      "  { name = \"a\"; on_error = \"drop\"; },\n"
      "  { path = \"lib/a.so\"; timeout_ms = 0; list = ( 1 ); },\n"
      "  { path = \"b.so\"; name = \"b c\"; group = { x = 1; }; }\n"
      ");\n",
      NAME, &e);
  CU_ASSERT_EQUAL(e.count, 7);
  CU_ASSERT(config_check_has_error(&e, NAME, 8, "plugins.[0].path", "missing"));
  CU_ASSERT(config_check_has_error(&e, NAME, 8, "plugins.[0].on_error", "'drop' is not one of pass|refuse"));
  CU_ASSERT(config_check_has_error(&e, NAME, 9, "plugins.[1].timeout_ms", "must be 1..60000"));
  CU_ASSERT(config_check_has_error(&e, NAME, 9, "plugins.[1].list",
                                   "must be a string, a number or a boolean, not a list"));
  CU_ASSERT(config_check_has_error(&e, NAME, 9, "plugins.[1].name", "'a' is already the name of plugins.[0]"));
  CU_ASSERT(config_check_has_error(&e, NAME, 10, "plugins.[2].name", "may hold only letters"));
  CU_ASSERT(config_check_has_error(&e, NAME, 10, "plugins.[2].group", "not a group"));
  config_errors_free(&e);
}

/* ---- loading ---- */

static void test_load_errors(void)
{
  char err[2048];
  host_refused("  { path = \"/nonexistent/dir/nothing.so\"; },\n"
               "  { path = \"nothing-here.so\"; }", err, sizeof err);
  /* Both, each with the path and what dlopen said. */
  CU_ASSERT_PTR_NOT_NULL(strstr(err, NAME ":8: plugins.[0].path: cannot load /nonexistent/dir/nothing.so: "));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, NAME ":9: plugins.[1].path: cannot load /"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nothing-here.so: "));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "No such file or directory"));
  CU_ASSERT_PTR_NOT_NULL(strchr(err, '\n'));

  host_refused("  { path = \"" TEST_PLUGIN("test_plugin_abi") "\"; }", err, sizeof err);
  char expected[128];
  snprintf(expected, sizeof expected, "was built for plugin ABI version %u, this emgd loads version %u",
           EMG_PLUGIN_ABI_VERSION + 1, EMG_PLUGIN_ABI_VERSION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, expected));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "test_plugin_abi.so"));
  CU_ASSERT_PTR_NULL(strstr(err, "init"));

  /* A plugin's init refusing its settings, named by the plugin. */
  host_refused("  { path = \"" PLUGIN("blacklist") "\"; fiel = \"x\"; }", err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, NAME ":8: plugins.[0]: blacklist: unknown setting 'fiel'"));
  host_refused("  { path = \"" PLUGIN("blacklist") "\"; file = \"/nonexistent/list.txt\"; }", err,
               sizeof err);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot open /nonexistent/list.txt"));
  host_refused("  { path = \"" PLUGIN("normalize") "\"; national_prefix = \"0\"; }", err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "normalize: country_code: missing"));
  host_refused("  { path = \"" PLUGIN("keyword") "\"; map = \"INFO\"; }", err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "keyword: map: 'INFO' is not KEYWORD=connector"));
}

static void test_no_plugins(void)
{
  char reason[PLUGIN_HOST_REASON_LEN] = "";
  struct test_msg t;
  int target = 7;
  CU_ASSERT_EQUAL(receive_to(NULL, &t, "015112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(plugin_host_route(NULL, &t.m, "in", "u", &target, reason, sizeof reason),
                  PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(target, -1);
  CU_ASSERT_EQUAL(plugin_host_count(NULL), 0);

  struct config_errors e;
  struct config *cfg = config_load_string(CONNECTORS, NAME, &e);
  config_errors_free(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  char err[256] = "x";
  struct plugin_host *h = plugin_host_load(cfg, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_STRING_EQUAL(err, "");
  CU_ASSERT_EQUAL(plugin_host_count(h), 0);
  struct plugin_host_stats s;
  CU_ASSERT_EQUAL(plugin_host_stats(h, 0, &s), -1);
  CU_ASSERT_EQUAL(receive_to(h, &t, "015112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "015112345678");
  plugin_host_destroy(h);
  config_free(cfg);
}

/* ---- blacklist ---- */

static void test_blacklist(void)
{
  char list[64] = "", plugins[512], reason[PLUGIN_HOST_REASON_LEN];
  write_file(list, sizeof list, "# barred numbers\n49151   # a comment after it\n\n  +4917012\n");
  snprintf(plugins, sizeof plugins, "{ path = \"%s\"; file = \"%s\"; " SLACK "}", PLUGIN("blacklist"),
           list);
  struct plugin_host *h = host_for(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  struct test_msg t;
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_REFUSE);
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, "blacklist: destination 4915112345678 is blacklisted (prefix 49151)"));
  CU_ASSERT_EQUAL(receive_to(h, &t, "+4917012999", reason), PLUGIN_HOST_REFUSE);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4916012345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4917", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915", reason), PLUGIN_HOST_ACCEPT);
  struct plugin_host_stats s = stats_of(h, 0);
  CU_ASSERT_STRING_EQUAL(s.name, "blacklist");
  CU_ASSERT_EQUAL(s.calls, 5);
  CU_ASSERT_EQUAL(s.refusals, 2);
  CU_ASSERT_EQUAL(s.flagged, 0);
  CU_ASSERT_EQUAL(s.errors, 0);
  plugin_host_destroy(h);

  /* action = "log": through, but counted. */
  snprintf(plugins, sizeof plugins, "{ path = \"%s\"; file = \"%s\"; action = \"log\"; " SLACK "}",
           PLUGIN("blacklist"), list);
  h = host_for(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4916012345678", reason), PLUGIN_HOST_ACCEPT);
  s = stats_of(h, 0);
  CU_ASSERT_EQUAL(s.calls, 2);
  CU_ASSERT_EQUAL(s.flagged, 1);
  CU_ASSERT_EQUAL(s.refusals, 0);
  plugin_host_destroy(h);

  /* A line that is no prefix fails the load, with the file's line. */
  write_file(list, sizeof list, "49151\n49 160\n");
  host_refused(plugins, reason, sizeof reason);
  char expected[128];
  snprintf(expected, sizeof expected, "%s:2: '49 160' is no number prefix", list);
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, expected));
  unlink(list);
}

/* A reload is a new host: it reads the file again, while the old one keeps
 * working until it is destroyed. */
static void test_blacklist_reload(void)
{
  char list[64] = "", plugins[512], reason[PLUGIN_HOST_REASON_LEN];
  write_file(list, sizeof list, "49151\n");
  snprintf(plugins, sizeof plugins, "{ path = \"%s\"; file = \"%s\"; " SLACK "}", PLUGIN("blacklist"),
           list);
  struct plugin_host *old = host_for(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(old);
  write_file(list, sizeof list, "49160\n");
  struct plugin_host *fresh = host_for(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fresh);
  struct test_msg t;
  CU_ASSERT_EQUAL(receive_to(fresh, &t, "4915112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(receive_to(fresh, &t, "4916012345678", reason), PLUGIN_HOST_REFUSE);
  CU_ASSERT_EQUAL(receive_to(old, &t, "4915112345678", reason), PLUGIN_HOST_REFUSE);
  plugin_host_destroy(old);
  CU_ASSERT_EQUAL(receive_to(fresh, &t, "4916012345678", reason), PLUGIN_HOST_REFUSE);
  plugin_host_destroy(fresh);
  unlink(list);
}

/* ---- normalize ---- */

/* before_receive on a message to dst of TON ton; asserts the address and TON after. */
static void check_normalized(struct plugin_host *h, const char *dst, uint8_t ton, const char *want,
                             uint8_t want_ton)
{
  char reason[PLUGIN_HOST_REASON_LEN];
  struct test_msg t;
  make_msg(&t, dst, SMS_TEXT_GSM7, "hello");
  t.m.dst.ton = ton;
  CU_ASSERT_EQUAL(receive(h, &t.m, reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, want);
  CU_ASSERT_EQUAL(t.m.dst.ton, want_ton);
  if (strcmp(t.m.dst.addr, want) != 0)
    fprintf(stderr, "%s became %s, not %s\n", dst, t.m.dst.addr, want);
}

static void test_normalize(void)
{
  struct plugin_host *h =
      host_for("{ path = \"" PLUGIN("normalize") "\"; country_code = \"49\"; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  check_normalized(h, "015112345678", MSG_TON_UNKNOWN, "4915112345678", MSG_TON_INTERNATIONAL);
  check_normalized(h, "+4915112345678", MSG_TON_UNKNOWN, "4915112345678", MSG_TON_INTERNATIONAL);
  check_normalized(h, "004915112345678", MSG_TON_UNKNOWN, "4915112345678", MSG_TON_INTERNATIONAL);
  check_normalized(h, "15112345678", MSG_TON_NATIONAL, "4915112345678", MSG_TON_INTERNATIONAL);
  check_normalized(h, "ACME", MSG_TON_ALPHANUMERIC, "ACME", MSG_TON_ALPHANUMERIC);
  check_normalized(h, "ACME", MSG_TON_UNKNOWN, "ACME", MSG_TON_UNKNOWN);
  check_normalized(h, "12345", MSG_TON_UNKNOWN, "12345", MSG_TON_UNKNOWN);
  check_normalized(h, "012345", MSG_TON_UNKNOWN, "012345", MSG_TON_UNKNOWN);
  /* Unknown TON and no prefix: it may be international already. */
  check_normalized(h, "4915112345678", MSG_TON_UNKNOWN, "4915112345678", MSG_TON_UNKNOWN);
  struct test_msg t;
  char reason[PLUGIN_HOST_REASON_LEN];
  CU_ASSERT_EQUAL(receive_to(h, &t, "015112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(t.m.dst.npi, EMG_PLUGIN_NPI_E164);
  CU_ASSERT_STRING_EQUAL(t.m.src.addr, "4930123456");    /* apply_to = "dst" by default */
  plugin_host_destroy(h);

  /* Another country's prefixes, sources too, a lower minimum. */
  h = host_for("{ path = \"" PLUGIN("normalize") "\"; country_code = \"1\"; national_prefix = \"1\";\n"
               "  international_prefix = \"011\"; min_length = 5; apply_to = \"both\"; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  check_normalized(h, "0114915112345678", MSG_TON_UNKNOWN, "4915112345678", MSG_TON_INTERNATIONAL);
  check_normalized(h, "12125550123", MSG_TON_UNKNOWN, "12125550123", MSG_TON_INTERNATIONAL);
  check_normalized(h, "12345", MSG_TON_UNKNOWN, "12345", MSG_TON_INTERNATIONAL);
  check_normalized(h, "1234", MSG_TON_UNKNOWN, "1234", MSG_TON_UNKNOWN);
  make_msg(&t, "2125550123", SMS_TEXT_GSM7, "hi");
  snprintf(t.m.src.addr, sizeof t.m.src.addr, "13055550100");
  t.m.src.ton = MSG_TON_UNKNOWN;
  CU_ASSERT_EQUAL(receive(h, &t.m, reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.src.addr, "13055550100");
  CU_ASSERT_EQUAL(t.m.src.ton, MSG_TON_INTERNATIONAL);
  plugin_host_destroy(h);
}

/* Plugins run in the order of the file: normalised first, a national
 * number is caught by an international prefix. */
static void test_normalize_then_blacklist(void)
{
  char list[64] = "", plugins[1024], reason[PLUGIN_HOST_REASON_LEN];
  write_file(list, sizeof list, "49151\n");
  snprintf(plugins, sizeof plugins,
           "{ path = \"%s\"; country_code = \"49\"; " SLACK "},\n"
           "{ path = \"%s\"; file = \"%s\"; " SLACK "}",
           PLUGIN("normalize"), PLUGIN("blacklist"), list);
  struct plugin_host *h = host_for(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  struct test_msg t;
  CU_ASSERT_EQUAL(receive_to(h, &t, "015112345678", reason), PLUGIN_HOST_REFUSE);
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, "4915112345678"));
  /* Refused: the message keeps the address it came with. */
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "015112345678");
  CU_ASSERT_EQUAL(receive_to(h, &t, "016012345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "4916012345678");
  CU_ASSERT_EQUAL(plugin_host_count(h), 2);
  CU_ASSERT_STRING_EQUAL(stats_of(h, 1).name, "blacklist");
  plugin_host_destroy(h);
  unlink(list);
}

/* ---- keyword ---- */

static int route_text(struct plugin_host *h, uint8_t coding, const char *text,
                      enum plugin_host_verdict *verdict, char *reason)
{
  struct test_msg t;
  int target = 99;
  make_msg(&t, "4915112345678", coding, text);
  *verdict = plugin_host_route(h, &t.m, "in", "u", &target, reason, PLUGIN_HOST_REASON_LEN);
  return target;
}

static void test_keyword(void)
{
  struct plugin_host *h =
      host_for("{ path = \"" PLUGIN("keyword") "\"; map = \"INFO=smpp-b, stop = smpp-c ,\"; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  enum plugin_host_verdict v;
  char reason[PLUGIN_HOST_REASON_LEN];
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, "info today", &v, reason), SMPP_B);
  CU_ASSERT_EQUAL(v, PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, "  Stop\nplease", &v, reason), SMPP_C);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_UCS2, "STOP", &v, reason), SMPP_C);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, "information", &v, reason), -1);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, "hello info", &v, reason), -1);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, "", &v, reason), -1);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_8BIT, "INFO", &v, reason), -1);
  CU_ASSERT_EQUAL(v, PLUGIN_HOST_ACCEPT);
  /* A long message, whose text is longer than one SMS's. */
  char long_text[1200];
  memset(long_text, 'x', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  memcpy(long_text, "INFO ", 5);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, long_text, &v, reason), SMPP_B);
  struct plugin_host_stats s = stats_of(h, 0);
  CU_ASSERT_EQUAL(s.calls, 8);
  CU_ASSERT_EQUAL(s.errors, 0);
  plugin_host_destroy(h);

  /* A connector the config lacks: the hook failed; pass or refuse. */
  h = host_for("{ path = \"" PLUGIN("keyword") "\"; map = \"INFO=nowhere\"; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, "INFO", &v, reason), -1);
  CU_ASSERT_EQUAL(v, PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(stats_of(h, 0).errors, 1);
  plugin_host_destroy(h);
  h = host_for("{ path = \"" PLUGIN("keyword") "\"; map = \"INFO=nowhere\"; on_error = \"refuse\"; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(route_text(h, SMS_TEXT_GSM7, "INFO", &v, reason), -1);
  CU_ASSERT_EQUAL(v, PLUGIN_HOST_FAILED);
  CU_ASSERT_STRING_EQUAL(reason, "keyword: route failed");
  plugin_host_destroy(h);
}

/* ---- containment ---- */

#define MISBEHAVE "path = \"" TEST_PLUGIN("test_plugin_misbehave") "\"; rewrite = \"666\"; "

/* A hook that errors: its writes are undone; pass goes on, refuse refuses. */
static void test_failing_hook(void)
{
  char reason[PLUGIN_HOST_REASON_LEN];
  struct test_msg t;
  /* Healthy, the plugin's rewrite reaches the message. */
  struct plugin_host *h = host_for("{ " MISBEHAVE SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "666");
  CU_ASSERT_EQUAL(t.m.dst.ton, MSG_TON_ABBREVIATED);
  plugin_host_destroy(h);

  h = host_for("{ " MISBEHAVE "error = true; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "4915112345678");
  CU_ASSERT_EQUAL(t.m.dst.ton, MSG_TON_UNKNOWN);
  struct plugin_host_stats s = stats_of(h, 0);
  CU_ASSERT_EQUAL(s.calls, 1);
  CU_ASSERT_EQUAL(s.errors, 1);
  CU_ASSERT_EQUAL(s.refusals, 0);
  CU_ASSERT_EQUAL(s.timeouts, 0);
  plugin_host_destroy(h);

  h = host_for("{ " MISBEHAVE "error = true; on_error = \"refuse\"; name = \"bad\"; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_FAILED);
  CU_ASSERT_STRING_EQUAL(reason, "bad: before_receive failed");
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "4915112345678");
  CU_ASSERT_EQUAL(plugin_host_before_send(h, &t.m, "smpp-b", reason, sizeof reason), PLUGIN_HOST_FAILED);
  CU_ASSERT_STRING_EQUAL(reason, "bad: before_send failed");
  CU_ASSERT_EQUAL(stats_of(h, 0).errors, 2);
  plugin_host_destroy(h);
}

/* A slow hook: its result, even a refusal, is discarded and counted. */
static void test_slow_hook(void)
{
  char reason[PLUGIN_HOST_REASON_LEN];
  struct test_msg t;
  struct plugin_host *h = host_for("{ " MISBEHAVE "sleep_ms = 30; timeout_ms = 5; answer = 1; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "4915112345678");
  struct plugin_host_stats s = stats_of(h, 0);
  CU_ASSERT_EQUAL(s.calls, 1);
  CU_ASSERT_EQUAL(s.timeouts, 1);
  CU_ASSERT_EQUAL(s.refusals, 0);
  CU_ASSERT_EQUAL(s.errors, 0);
  plugin_host_destroy(h);

  h = host_for("{ " MISBEHAVE "sleep_ms = 30; timeout_ms = 5; on_error = \"refuse\"; target = \"smpp-b\"; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_FAILED);
  CU_ASSERT_STRING_EQUAL(reason, "test_plugin_misbehave: before_receive timed out");
  int target = 99;
  CU_ASSERT_EQUAL(plugin_host_route(h, &t.m, "in", "u", &target, reason, sizeof reason),
                  PLUGIN_HOST_FAILED);
  CU_ASSERT_EQUAL(target, -1);
  CU_ASSERT_STRING_EQUAL(reason, "test_plugin_misbehave: route timed out");
  CU_ASSERT_EQUAL(stats_of(h, 0).timeouts, 2);
  plugin_host_destroy(h);
}

/* Answers a hook may not give count as failures, and their writes are undone. */
static void test_broken_contract(void)
{
  char reason[PLUGIN_HOST_REASON_LEN];
  struct test_msg t;
  struct plugin_host *h = host_for("{ " MISBEHAVE "answer = 3; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "4915112345678");
  CU_ASSERT_EQUAL(stats_of(h, 0).errors, 1);
  plugin_host_destroy(h);

  h = host_for("{ path = \"" TEST_PLUGIN("test_plugin_misbehave") "\"; unterminated = true; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "4915112345678");
  CU_ASSERT_EQUAL(stats_of(h, 0).errors, 1);
  plugin_host_destroy(h);
}

/* A failed plugin with on_error pass is as if absent: the next one still runs. */
static void test_chain_after_failure(void)
{
  char list[64] = "", plugins[1024], reason[PLUGIN_HOST_REASON_LEN];
  write_file(list, sizeof list, "49151\n");
  snprintf(plugins, sizeof plugins,
           "{ " MISBEHAVE "error = true; " SLACK "},\n"
           "{ path = \"%s\"; file = \"%s\"; " SLACK "}",
           PLUGIN("blacklist"), list);
  struct plugin_host *h = host_for(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  struct test_msg t;
  CU_ASSERT_EQUAL(receive_to(h, &t, "4915112345678", reason), PLUGIN_HOST_REFUSE);
  CU_ASSERT_PTR_NOT_NULL(strstr(reason, "blacklist: "));
  CU_ASSERT_EQUAL(stats_of(h, 0).errors, 1);
  CU_ASSERT_EQUAL(stats_of(h, 1).refusals, 1);
  plugin_host_destroy(h);
  unlink(list);
}

/* Route, before_send, after_send and after_dlr reach the plugin. */
static void test_other_hooks(void)
{
  char reason[PLUGIN_HOST_REASON_LEN];
  struct test_msg t;
  struct plugin_host *h = host_for("{ " MISBEHAVE "target = \"smpp-c\"; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  make_msg(&t, "4915112345678", SMS_TEXT_GSM7, "hello");
  int target = 99;
  CU_ASSERT_EQUAL(plugin_host_route(h, &t.m, "in", "u", &target, reason, sizeof reason),
                  PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(target, SMPP_C);
  t.m.origin.connector = IN;
  CU_ASSERT_EQUAL(plugin_host_before_send(h, &t.m, "smpp-c", reason, sizeof reason), PLUGIN_HOST_ACCEPT);
  CU_ASSERT_STRING_EQUAL(t.m.dst.addr, "666");
  plugin_host_after_send(h, &t.m, "smpp-c", EMG_PLUGIN_SENT);
  struct msg_receipt r = { .id = "abc", .state = MSG_STATE_DELIVERED };
  plugin_host_after_dlr(h, 42, &r);
  struct plugin_host_stats s = stats_of(h, 0);
  CU_ASSERT_EQUAL(s.calls, 4);
  CU_ASSERT_EQUAL(s.errors, 0);
  plugin_host_destroy(h);

  h = host_for("{ " MISBEHAVE "error = true; " SLACK "}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  plugin_host_after_send(h, &t.m, "smpp-c", EMG_PLUGIN_SEND_FAILED);
  plugin_host_after_dlr(h, 42, &r);
  target = 99;
  CU_ASSERT_EQUAL(plugin_host_route(h, &t.m, "in", "u", &target, reason, sizeof reason),
                  PLUGIN_HOST_ACCEPT);
  CU_ASSERT_EQUAL(target, -1);
  s = stats_of(h, 0);
  CU_ASSERT_EQUAL(s.calls, 3);
  CU_ASSERT_EQUAL(s.errors, 3);
  plugin_host_destroy(h);
}

/* ---- many threads ---- */

#define THREADS 4
#define PER_THREAD 2000

struct worker {
  struct plugin_host *h;
  unsigned refused, wrong;
};

/* Every other message is to a barred national number: normalised, then
 * refused. No CUnit call here: CUnit is not thread-safe. */
static void *work(void *arg)
{
  struct worker *w = arg;
  char reason[PLUGIN_HOST_REASON_LEN];
  struct test_msg t;
  for (unsigned i = 0; i < PER_THREAD; i++) {
    char dst[32];
    snprintf(dst, sizeof dst, "0%s%07u", i % 2 ? "151" : "160", i);
    if (fill_msg(&t, dst, SMS_TEXT_GSM7, "hello") < 0) {
      w->wrong++;
      continue;
    }
    enum plugin_host_verdict v = receive(w->h, &t.m, reason);
    w->refused += v == PLUGIN_HOST_REFUSE;
    if (v == PLUGIN_HOST_ACCEPT && strncmp(t.m.dst.addr, "49160", 5) != 0)
      w->wrong++;
  }
  return NULL;
}

static void test_threads(void)
{
  char list[64] = "", plugins[1024];
  write_file(list, sizeof list, "49151\n");
  snprintf(plugins, sizeof plugins,
           "{ path = \"%s\"; country_code = \"49\"; " SLACK "},\n"
           "{ path = \"%s\"; file = \"%s\"; " SLACK "}",
           PLUGIN("normalize"), PLUGIN("blacklist"), list);
  struct plugin_host *h = host_for(plugins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  pthread_t threads[THREADS];
  struct worker workers[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    workers[i] = (struct worker){ .h = h };
    CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
  }
  unsigned refused = 0, wrong = 0;
  for (unsigned i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    refused += workers[i].refused;
    wrong += workers[i].wrong;
  }
  CU_ASSERT_EQUAL(refused, THREADS * PER_THREAD / 2);
  CU_ASSERT_EQUAL(wrong, 0);
  CU_ASSERT_EQUAL(stats_of(h, 0).calls, THREADS * PER_THREAD);
  CU_ASSERT_EQUAL(stats_of(h, 1).calls, THREADS * PER_THREAD);
  CU_ASSERT_EQUAL(stats_of(h, 1).refusals, THREADS * PER_THREAD / 2);
  plugin_host_destroy(h);
  unlink(list);
}

void suite_plugins(void);
void suite_plugins(void)
{
  static const struct test_case cases[] = {
    { "config: entries and settings", test_config_entries },
    { "config: errors", test_config_errors },
    { "load errors: path, ABI, init", test_load_errors },
    { "no plugins", test_no_plugins },
    { "blacklist", test_blacklist },
    { "blacklist: reload", test_blacklist_reload },
    { "normalize", test_normalize },
    { "normalize, then blacklist", test_normalize_then_blacklist },
    { "keyword", test_keyword },
    { "a failing hook", test_failing_hook },
    { "a slow hook", test_slow_hook },
    { "a broken contract", test_broken_contract },
    { "the next plugin after a failure", test_chain_after_failure },
    { "route, before_send, after_send, after_dlr", test_other_hooks },
    { "many threads at once", test_threads },
    { NULL, NULL },
  };
  test_add_suite("plugins", cases);
}
