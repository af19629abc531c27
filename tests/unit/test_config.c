/* test_config.c - the configuration: the shipped default, defaults, and one
 * test per class of error, each naming its line and key.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "config_checks.h"
#include "testutil.h"
#include "tls_certs.h"

#define NAME "test.conf"

/* A connector list that is valid on its own, for configs about other sections. */
#define ONE_CLIENT \
  "connectors = ( { name = \"out\"; protocol = \"smpp\"; mode = \"client\";\n" \
  "                 connect = \"127.0.0.1:2775\"; system_id = \"emg\"; } );\n"

static bool ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void load_bad(const char *text, struct config_errors *e)
{
  config_check_refused(text, NAME, e);
}

static bool has_error(const struct config_errors *e, unsigned line, const char *key, const char *what)
{
  return config_check_has_error(e, NAME, line, key, what);
}

static void test_default_file(void)
{
  struct config_errors e;
  struct config *c = config_load(EMG_TEST_DATA "/../../etc/emgd.conf", &e);
  CU_ASSERT_EQUAL(e.count, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_PTR_NOT_NULL(strstr(c->path, "etc/emgd.conf"));
  CU_ASSERT_EQUAL(c->node_id, 1);
  CU_ASSERT_TRUE(c->persist);
  /* Taken from the file's folder: the repository's var/spool. */
  CU_ASSERT_TRUE(c->spool_dir[0] == '/' && ends_with(c->spool_dir, "/etc/../var/spool"));
  CU_ASSERT_EQUAL(c->id_window, 100);
  CU_ASSERT_EQUAL(c->log_level, CONFIG_LOG_INFO);
  CU_ASSERT_STRING_EQUAL(c->log_file, "");
  CU_ASSERT_EQUAL(c->dlr_table_size, 1000000);
  CU_ASSERT_EQUAL(c->dlr_ttl_s, 172800);
  CU_ASSERT_EQUAL(c->journal_commit_interval_us, 500);
  CU_ASSERT_EQUAL(c->journal_segment_mb, 64);
  CU_ASSERT_EQUAL(c->max_total_queue, 110000);
  CU_ASSERT_EQUAL(c->max_total_queue_soft, 100000);
  CU_ASSERT_FALSE(c->has_admin);   /* commented out until given a token of one's own */
  CU_ASSERT_FALSE(c->has_database);

  CU_ASSERT_EQUAL_FATAL(c->n_connectors, 2);
  const struct config_connector *in = config_connector(c, "ucp-in");
  CU_ASSERT_PTR_EQUAL_FATAL(in, &c->connectors[0]);
  CU_ASSERT_PTR_EQUAL(in->proto, &ucp_proto_ops);
  CU_ASSERT_EQUAL(in->mode, CONFIG_CONN_SERVER);
  CU_ASSERT_STRING_EQUAL(in->listen, "127.0.0.1:3000");
  CU_ASSERT_STRING_EQUAL(in->connect, "");
  CU_ASSERT_EQUAL(in->instances, 10);
  CU_ASSERT_EQUAL(in->window, 10);
  CU_ASSERT_EQUAL_FATAL(in->n_users, 1);
  CU_ASSERT_STRING_EQUAL(in->users[0].name, "load");
  CU_ASSERT_STRING_EQUAL(c->accounts[in->users[0].account].password, "secret");
  CU_ASSERT(in->line > 0);

  const struct config_connector *out = config_connector(c, "smpp-out");
  CU_ASSERT_PTR_EQUAL_FATAL(out, &c->connectors[1]);
  CU_ASSERT_PTR_EQUAL(out->proto, &smpp_proto_ops);
  CU_ASSERT_EQUAL(out->mode, CONFIG_CONN_CLIENT);
  CU_ASSERT_STRING_EQUAL(out->connect, "127.0.0.1:2775");
  CU_ASSERT_EQUAL(out->instances, 10);
  CU_ASSERT_STRING_EQUAL(out->system_id, "emg");
  CU_ASSERT_STRING_EQUAL(out->password, "secret");
  CU_ASSERT_EQUAL(out->window, 100);
  CU_ASSERT_EQUAL(out->bind_mode, PROTO_BIND_TRX);
  CU_ASSERT_EQUAL(out->n_users, 0);
  CU_ASSERT(out->line > in->line);
  CU_ASSERT_PTR_NULL(config_connector(c, "smpp-in"));

  CU_ASSERT_EQUAL_FATAL(c->n_routes, 2);
  CU_ASSERT_STRING_EQUAL(c->routes[0].from, "ucp-in");
  CU_ASSERT_STRING_EQUAL(c->routes[0].dst_prefix, "49");
  CU_ASSERT_STRING_EQUAL(c->routes[0].src_prefix, "");
  CU_ASSERT_STRING_EQUAL(c->routes[0].to[0], "smpp-out");
  CU_ASSERT_STRING_EQUAL(c->routes[1].from, "");
  CU_ASSERT_STRING_EQUAL(c->routes[1].dst_prefix, "");
  CU_ASSERT_STRING_EQUAL(c->routes[1].to, "smpp-out");
  CU_ASSERT(c->routes[1].line > c->routes[0].line);
  CU_ASSERT_EQUAL(c->n_plugins, 0);
  config_free(c);
}

/* The examples next to the default load too. */
static void test_examples(void)
{
  static const char *const files[] = { "smpp-in.conf", "database.conf" };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, EMG_TEST_DATA "/../../etc/examples/%s", files[i]);
    struct config_errors e;
    struct config *c = config_load(path, &e);
    for (unsigned j = 0; j < e.count; j++)
      fprintf(stderr, "%s\n", e.lines[j]);
    CU_ASSERT_PTR_NOT_NULL(c);
    CU_ASSERT_EQUAL(e.count, 0);
    config_errors_free(&e);
    config_free(c);
  }
}

static void test_defaults(void)
{
  struct config_errors e;
  struct config *c = config_load_string(ONE_CLIENT, NAME, &e);
  CU_ASSERT_EQUAL(e.count, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_STRING_EQUAL(c->path, NAME);
  CU_ASSERT_EQUAL(c->node_id, 1);
  CU_ASSERT_TRUE(c->persist);
  CU_ASSERT_TRUE(c->spool_dir[0] == '/' && ends_with(c->spool_dir, "/./var/spool"));
  CU_ASSERT_EQUAL(c->id_window, 100);
  CU_ASSERT_EQUAL(c->log_level, CONFIG_LOG_INFO);
  CU_ASSERT_STRING_EQUAL(c->log_file, "");
  CU_ASSERT_EQUAL(c->dlr_table_size, 1000000);
  CU_ASSERT_EQUAL(c->dlr_ttl_s, 172800);
  CU_ASSERT_EQUAL(c->journal_commit_interval_us, 500);
  CU_ASSERT_EQUAL(c->journal_segment_mb, 64);
  CU_ASSERT_EQUAL(c->max_total_queue, 110000);
  CU_ASSERT_EQUAL(c->max_total_queue_soft, 100000);
  CU_ASSERT_FALSE(c->has_admin);
  CU_ASSERT_FALSE(c->has_database);
  CU_ASSERT_EQUAL(c->n_routes, 0);
  CU_ASSERT_EQUAL(c->n_plugins, 0);
  CU_ASSERT_EQUAL_FATAL(c->n_connectors, 1);
  const struct config_connector *k = &c->connectors[0];
  CU_ASSERT_EQUAL(k->line, 1);
  CU_ASSERT_EQUAL(k->instances, 1);
  CU_ASSERT_EQUAL(k->window, 10);
  CU_ASSERT_STRING_EQUAL(k->password, "");
  CU_ASSERT_EQUAL(k->bind_mode, PROTO_BIND_TRX);
  CU_ASSERT_EQUAL(k->max_rate, 0);
  CU_ASSERT_EQUAL(k->response_timeout_ms, 30000);
  CU_ASSERT_EQUAL(k->keepalive_ms, 30000);
  CU_ASSERT_EQUAL(k->reconnect_min_ms, 1000);
  CU_ASSERT_EQUAL(k->reconnect_max_ms, 60000);
  CU_ASSERT_EQUAL(k->max_queue, 0);
  CU_ASSERT_EQUAL(k->msgid_submit, CONFIG_MSGID_STRING);
  CU_ASSERT_EQUAL(k->msgid_receipt, CONFIG_MSGID_STRING);
  config_free(c);
}

/* Every key set to something other than its default, and read back. */
static void test_all_keys(void)
{
  static const char text[] =
      "general: { node_id = 65535; persist = false; spool_dir = \"/var/spool/emg\"; id_window = 1000000;\n"
      "  log_level = \"debug2\"; log_file = \"/var/log/emgd.log\"; dlr_table_size = 100000000;\n"
      "  dlr_ttl = 3600; max_total_queue = 1000000000L; max_total_queue_soft = 900000000;\n"
      "  journal_commit_interval_us = 2500; journal_segment_mb = 8; };\n"
      "database: { conninfo = \"postgresql:///emg\"; message_log = true; };\n"
      "connectors = (\n"
      "  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"[::1]:0\"; instances = 1000;\n"
      "    window = 999; max_rate = 250.5; users = ( { name = \"a\"; password = \"p\"; },\n"
      "                                              { name = \"b\"; password = \"q\"; } ); },\n"
      "  { name = \"out\"; protocol = \"ucp\"; mode = \"client\"; connect = \"smsc.example.net:5000\";\n"
      "    system_id = \"me\"; password = \"pw\"; window = 99; bind_mode = \"receiver\"; max_rate = 10;\n"
      "    response_timeout = 5000; keepalive = 60000; reconnect_min = 10; reconnect_max = 20;\n"
      "    max_queue = 500; msgid_type_submit = \"hex\"; msgid_type_receipt = \"decimal\"; }\n"
      ");\n"
      "routes = ( { from = \"in\"; src_prefix = \"4930\"; dst_prefix = \"\"; to = \"out\"; } );\n"
      "plugins = ( { path = \"plugins/blacklist.so\"; file = \"etc/blacklist.txt\"; limit = 3; } );\n";
  struct config_errors e;
  struct config *c = config_load_string(text, NAME, &e);
  for (unsigned i = 0; i < e.count; i++)
    fprintf(stderr, "%s\n", e.lines[i]);
  CU_ASSERT_EQUAL(e.count, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL(c->node_id, 65535);
  CU_ASSERT_FALSE(c->persist);
  CU_ASSERT_STRING_EQUAL(c->spool_dir, "/var/spool/emg");
  CU_ASSERT_EQUAL(c->id_window, 1000000);
  CU_ASSERT_EQUAL(c->log_level, CONFIG_LOG_DEBUG2);
  CU_ASSERT_STRING_EQUAL(c->log_file, "/var/log/emgd.log");
  CU_ASSERT_EQUAL(c->dlr_table_size, 100000000);
  CU_ASSERT_EQUAL(c->dlr_ttl_s, 3600);
  CU_ASSERT_EQUAL(c->journal_commit_interval_us, 2500);
  CU_ASSERT_EQUAL(c->journal_segment_mb, 8);
  CU_ASSERT_EQUAL(c->max_total_queue, 1000000000);
  CU_ASSERT_EQUAL(c->max_total_queue_soft, 900000000);
  CU_ASSERT_TRUE(c->has_database);
  CU_ASSERT_STRING_EQUAL(c->db_conninfo, "postgresql:///emg");
  CU_ASSERT_TRUE(c->db_message_log);
  CU_ASSERT_EQUAL_FATAL(c->n_connectors, 2);
  const struct config_connector *in = &c->connectors[0], *out = &c->connectors[1];
  CU_ASSERT_STRING_EQUAL(in->listen, "[::1]:0");
  CU_ASSERT_EQUAL(in->instances, 1000);
  CU_ASSERT_EQUAL(in->window, 999);
  CU_ASSERT_DOUBLE_EQUAL(in->max_rate, 250.5, 1e-9);
  CU_ASSERT_EQUAL_FATAL(in->n_users, 2);
  CU_ASSERT_STRING_EQUAL(in->users[1].name, "b");
  CU_ASSERT_STRING_EQUAL(c->accounts[in->users[1].account].password, "q");
  CU_ASSERT_STRING_EQUAL(out->connect, "smsc.example.net:5000");
  CU_ASSERT_STRING_EQUAL(out->system_id, "me");
  CU_ASSERT_STRING_EQUAL(out->password, "pw");
  CU_ASSERT_EQUAL(out->window, 99);
  CU_ASSERT_EQUAL(out->bind_mode, PROTO_BIND_RX);
  CU_ASSERT_DOUBLE_EQUAL(out->max_rate, 10.0, 1e-9);
  CU_ASSERT_EQUAL(out->response_timeout_ms, 5000);
  CU_ASSERT_EQUAL(out->keepalive_ms, 60000);
  CU_ASSERT_EQUAL(out->reconnect_min_ms, 10);
  CU_ASSERT_EQUAL(out->reconnect_max_ms, 20);
  CU_ASSERT_EQUAL(out->max_queue, 500);
  CU_ASSERT_EQUAL(out->msgid_submit, CONFIG_MSGID_HEX);
  CU_ASSERT_EQUAL(out->msgid_receipt, CONFIG_MSGID_DECIMAL);
  CU_ASSERT_EQUAL_FATAL(c->n_routes, 1);
  CU_ASSERT_STRING_EQUAL(c->routes[0].src_prefix, "4930");
  CU_ASSERT_EQUAL(c->routes[0].line, 15);
  CU_ASSERT_EQUAL_FATAL(c->n_plugins, 1);
  CU_ASSERT_TRUE(c->plugins[0].path[0] == '/' && ends_with(c->plugins[0].path, "/plugins/blacklist.so"));
  CU_ASSERT_EQUAL(c->plugins[0].line, 16);
  config_free(c);
}

/* A default never exceeds the key that bounds it. */
static void test_bounded_defaults(void)
{
  struct config_errors e;
  struct config *c = config_load_string(
      "general: { max_total_queue = 500; };\n"
      "connectors = ( { name = \"out\"; protocol = \"smpp\"; mode = \"client\";\n"
      "  connect = \"127.0.0.1:2775\"; system_id = \"emg\"; reconnect_max = 300; } );\n",
      NAME, &e);
  CU_ASSERT_EQUAL(e.count, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL(c->max_total_queue_soft, 500);
  CU_ASSERT_EQUAL(c->connectors[0].reconnect_min_ms, 300);
  config_free(c);
}

static void test_syntax_error(void)
{
  struct config_errors e;
  load_bad("general: {\n  node_id = 1;\n  persist = true false;\n  id_window = 5;\n};\n" ONE_CLIENT, &e);
  CU_ASSERT_EQUAL_FATAL(e.count, 1);
  CU_ASSERT_STRING_EQUAL(e.lines[0], NAME ":3: syntax error");
  config_errors_free(&e);
  CU_ASSERT_PTR_NULL(e.lines);
  CU_ASSERT_EQUAL(e.count, 0);

  load_bad("a = 1;\na = 2;\n", &e);
  CU_ASSERT_EQUAL_FATAL(e.count, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(e.lines[0], NAME ":2: duplicate setting"));
  config_errors_free(&e);
}

static void test_missing_file(void)
{
  struct config_errors e;
  struct config *c = config_load("/nonexistent/emgd.conf", &e);
  CU_ASSERT_PTR_NULL(c);
  CU_ASSERT_EQUAL_FATAL(e.count, 1);
  CU_ASSERT_STRING_EQUAL(e.lines[0], "/nonexistent/emgd.conf: cannot read: No such file or directory");
  config_errors_free(&e);
}

static void test_unknown_keys(void)
{
  struct config_errors e;
  load_bad("genral: { };\n"
           "general: { nodeid = 3; colour = \"red\"; };\n"
           "connectors = ( { name = \"out\"; protocol = \"smpp\"; mode = \"client\";\n"
           "  connect = \"127.0.0.1:2775\"; system_id = \"emg\";\n"
           "  windw = 5; Keepalive = 1; } );\n"
           "routes = ( { form = \"out\"; to = \"out\"; } );\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 6);
  CU_ASSERT(has_error(&e, 1, "genral", "unknown key 'genral' (did you mean 'general'?)"));
  CU_ASSERT(has_error(&e, 2, "general.nodeid", "unknown key 'nodeid' (did you mean 'node_id'?)"));
  CU_ASSERT(has_error(&e, 2, "general.colour", "unknown key 'colour'"));
  CU_ASSERT(!has_error(&e, 2, "general.colour", "did you mean"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].windw", "unknown key 'windw' (did you mean 'window'?)"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].Keepalive", "(did you mean 'keepalive'?)"));
  CU_ASSERT(has_error(&e, 6, "routes.[0].form", "(did you mean 'from'?)"));
  config_errors_free(&e);
}

static void test_wrong_types(void)
{
  struct config_errors e;
  load_bad("general: { node_id = \"1\"; persist = 1; id_window = 1.5; spool_dir = 7; };\n"
           "admin = ( );\n"
           "connectors = ( { name = \"out\"; protocol = \"smpp\"; mode = \"client\";\n"
           "  connect = \"127.0.0.1:2775\"; system_id = \"emg\"; max_rate = \"fast\"; },\n"
           "  \"second\" );\n"
           "routes = { to = \"out\"; };\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 8);
  CU_ASSERT(has_error(&e, 1, "general.node_id", "must be an integer, not a string"));
  CU_ASSERT(has_error(&e, 1, "general.persist", "must be true or false, not an integer"));
  CU_ASSERT(has_error(&e, 1, "general.id_window", "must be an integer, not a float"));
  CU_ASSERT(has_error(&e, 1, "general.spool_dir", "must be a string, not an integer"));
  CU_ASSERT(has_error(&e, 2, "admin", "must be a group { ... }, not a list"));
  CU_ASSERT(has_error(&e, 4, "connectors.[0].max_rate", "must be a number, not a string"));
  CU_ASSERT(has_error(&e, 5, "connectors.[1]", "must be a group { ... }, not a string"));
  CU_ASSERT(has_error(&e, 6, "routes", "must be a list ( ... ), not a group"));
  config_errors_free(&e);
}

static void test_ranges(void)
{
  struct config_errors e;
  load_bad("general: { node_id = 0; id_window = 1000001; dlr_table_size = 0; dlr_ttl = 0;\n"
           "  max_total_queue = 100; max_total_queue_soft = 101; journal_commit_interval_us = 99; journal_segment_mb = 1025; };\n"
           "connectors = (\n"
           "  { name = \"u\"; protocol = \"ucp\"; mode = \"client\"; connect = \"h:1\"; system_id = \"s\";\n"
           "    window = 100; instances = 0; max_rate = -1; },\n"
           "  { name = \"s\"; protocol = \"smpp\"; mode = \"client\"; connect = \"h:1\"; system_id = \"s\";\n"
           "    window = 1000; instances = 1001; response_timeout = 0; keepalive = 0;\n"
           "    reconnect_max = 100; reconnect_min = 101; max_queue = -1; }\n"
           ");\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 16);
  CU_ASSERT(has_error(&e, 1, "general.node_id", "must be 1..65535"));
  CU_ASSERT(has_error(&e, 2, "general.journal_segment_mb", "must be 1..1024"));
  CU_ASSERT(has_error(&e, 2, "general.journal_commit_interval_us", "must be 100..100000"));
  CU_ASSERT(has_error(&e, 1, "general.id_window", "must be 1..1000000"));
  CU_ASSERT(has_error(&e, 1, "general.dlr_table_size", "must be 1..100000000"));
  CU_ASSERT(has_error(&e, 1, "general.dlr_ttl", "must be 1.."));
  CU_ASSERT(has_error(&e, 2, "general.max_total_queue_soft", "must be 1..100 (not above max_total_queue)"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].window", "must be 1..99"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].instances", "must be 1..1000"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].max_rate", "must be 0.."));
  CU_ASSERT(has_error(&e, 7, "connectors.[1].window", "must be 1..999"));
  CU_ASSERT(has_error(&e, 7, "connectors.[1].instances", "must be 1..1000"));
  CU_ASSERT(has_error(&e, 7, "connectors.[1].response_timeout", "must be 1.."));
  CU_ASSERT(has_error(&e, 7, "connectors.[1].keepalive", "must be 1.."));
  CU_ASSERT(has_error(&e, 8, "connectors.[1].reconnect_min", "must be 1..100 (not above reconnect_max)"));
  CU_ASSERT(has_error(&e, 8, "connectors.[1].max_queue", "must be 0.."));
  config_errors_free(&e);
}

static void test_strings(void)
{
  struct config_errors e;
  load_bad("general: { log_level = \"verbose\"; spool_dir = \"\"; };\n"
           "admin: { listen = \"8480\"; token = \"a-token-of-16-chars\"; };\n"
           "connectors = ( { name = \"my out\"; protocol = \"smtp\"; mode = \"client\";\n"
           "  connect = \"127.0.0.1:99999\"; system_id = \"a-system-id-that-is-far-far-too-long\";\n"
           "  bind_mode = \"trx\"; msgid_type_receipt = \"octal\"; } );\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 9);
  CU_ASSERT(has_error(&e, 1, "general.log_level", "'verbose' is not one of error|warn|info|debug|debug2"));
  CU_ASSERT(has_error(&e, 1, "general.spool_dir", "must not be empty"));
  CU_ASSERT(has_error(&e, 2, "admin.listen", "must be HOST:PORT"));
  CU_ASSERT(has_error(&e, 3, "connectors.[0].name", "may hold only letters, digits"));
  CU_ASSERT(has_error(&e, 3, "connectors.[0].protocol", "unknown protocol 'smtp'"));
  CU_ASSERT(has_error(&e, 4, "connectors.[0].connect", "must be HOST:PORT with a port 1..65535"));
  CU_ASSERT(has_error(&e, 4, "connectors.[0].system_id", "longer than 32 characters"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].bind_mode", "'trx' is not one of transceiver|transmitter|receiver"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].msgid_type_receipt", "'octal' is not one of string|decimal|hex"));
  config_errors_free(&e);
}

static void test_modes(void)
{
  struct config_errors e;
  load_bad("connectors = (\n"
           "  { name = \"in\"; protocol = \"ucp\"; mode = \"server\";\n"
           "    connect = \"127.0.0.1:1\"; system_id = \"x\"; reconnect_min = 5; },\n"
           "  { name = \"in2\"; protocol = \"ucp\"; mode = \"server\"; listen = \"0.0.0.0:3001\"; users = ( ); },\n"
           "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\";\n"
           "    listen = \"127.0.0.1:1\"; users = ( { name = \"a\"; password = \"b\"; } ); },\n"
           "  { name = \"what\"; protocol = \"smpp\"; },\n"
           "  { name = \"who\"; protocol = \"smpp\"; mode = \"both\"; }\n"
           ");\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 12);
  CU_ASSERT(has_error(&e, 2, "connectors.[0].listen", "missing (required when mode = \"server\")"));
  CU_ASSERT(has_error(&e, 2, "connectors.[0]", "no account may use this server connector"));
  CU_ASSERT(has_error(&e, 3, "connectors.[0].connect", "applies only when mode = \"client\""));
  CU_ASSERT(has_error(&e, 3, "connectors.[0].system_id", "applies only when mode = \"client\""));
  CU_ASSERT(has_error(&e, 3, "connectors.[0].reconnect_min", "applies only when mode = \"client\""));
  CU_ASSERT(has_error(&e, 4, "connectors.[1].users", "needs at least 1 entry"));
  CU_ASSERT(has_error(&e, 5, "connectors.[2].connect",
                      "missing (required when mode = \"client\" and protocol = \"smpp\")"));
  CU_ASSERT(has_error(&e, 5, "connectors.[2].system_id",
                      "missing (required when mode = \"client\" and protocol = \"smpp\")"));
  CU_ASSERT(has_error(&e, 6, "connectors.[2].listen", "applies only when mode = \"server\""));
  CU_ASSERT(has_error(&e, 6, "connectors.[2].users", "applies only when mode = \"server\""));
  /* Without a valid mode only the mode itself is wrong. */
  CU_ASSERT(has_error(&e, 7, "connectors.[3].mode", "missing"));
  CU_ASSERT(has_error(&e, 8, "connectors.[4].mode", "'both' is not one of server|client"));
  config_errors_free(&e);

  load_bad("connectors = ( );\n", &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 1, "connectors", "needs at least 1 entry"));
  config_errors_free(&e);

  /* No connectors at all: the key has no line, the message still names it. */
  load_bad("general: { node_id = 2; };\n", &e);
  CU_ASSERT_EQUAL_FATAL(e.count, 1);
  CU_ASSERT_STRING_EQUAL(e.lines[0], NAME ": connectors: missing");
  config_errors_free(&e);
}

/* HTTP connectors: a provider's URL instead of an SMSC's address and
 * account, and each protocol's keys only where they apply. */
static void test_http_connectors(void)
{
  struct config_errors e;
  struct config *c = config_load_string(
    "connectors = (\n"
    "  { name = \"web\"; protocol = \"http\"; mode = \"server\"; listen = \"127.0.0.1:8080\";\n"
    "    users = ( { name = \"app\"; password = \"p\"; } ); },\n"
    "  { name = \"provider\"; protocol = \"http\"; mode = \"client\"; url = \"http://h/send?to=%p&text=%b\";\n"
    "    method = \"post_json\"; body = \"{}\"; id_field = \"messages.0.id\"; connections = 4; }\n"
    ");\n", NAME, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT(c->connectors[0].http && !c->connectors[0].proto);
  CU_ASSERT(c->connectors[1].http);
  CU_ASSERT_STRING_EQUAL(c->connectors[1].url, "http://h/send?to=%p&text=%b");
  CU_ASSERT_EQUAL(c->connectors[1].http_method, CONFIG_HTTP_POST_JSON);
  CU_ASSERT_STRING_EQUAL(c->connectors[1].id_field, "messages.0.id");
  CU_ASSERT_EQUAL(c->connectors[1].connections, 4);
  config_free(c);

  load_bad("connectors = (\n"
           "  { name = \"p\"; protocol = \"http\"; mode = \"client\"; connect = \"127.0.0.1:1\"; },\n"
           "  { name = \"s\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:1\";\n"
           "    system_id = \"x\"; url = \"http://h/\"; },\n"
           "  { name = \"q\"; protocol = \"carrier-pigeon\"; mode = \"server\"; listen = \"127.0.0.1:1\";\n"
           "    users = ( { name = \"a\"; password = \"b\"; } ); }\n"
           ");\n", &e);
  CU_ASSERT(has_error(&e, 2, "connectors.[0].connect", "applies only when protocol = \"smpp\" or \"ucp\""));
  CU_ASSERT(has_error(&e, 2, "connectors.[0].url",
                      "missing (required when mode = \"client\" and protocol = \"http\")"));
  CU_ASSERT(has_error(&e, 4, "connectors.[1].url", "applies only when protocol = \"http\""));
  CU_ASSERT(has_error(&e, 5, "connectors.[2].protocol", "unknown protocol 'carrier-pigeon' (smpp, ucp, cimd2 or http)"));
  config_errors_free(&e);
}

/* Whether r has want's numbers and actions, and as many errors. */
static bool retry_is(const struct config_retry *r, struct config_retry want)
{
  return r->attempts == want.attempts && r->backoff_first_ms == want.backoff_first_ms &&
         r->backoff_factor == want.backoff_factor && r->backoff_max_ms == want.backoff_max_ms &&
         r->temporary == want.temporary && r->permanent == want.permanent && r->n_errors == want.n_errors;
}

/* A client connector's retry group: defaults when absent, every key read,
 * and each mistake named by file, line and key. */
static void test_retry_policy(void)
{
  struct config_errors e;
  struct config *c = config_load_string(
    "connectors = (\n"
    "  { name = \"a\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:1\"; system_id = \"x\"; },\n"
    "  { name = \"b\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:2\"; system_id = \"x\";\n"
    "    retry = { attempts = 5; backoff_first = 50; backoff_factor = 1.5; backoff_max = 2000;\n"
    "              temporary = \"reroute\"; permanent = \"reroute\";\n"
    "              errors = ( { code = 0x58; action = \"fail\"; }, { code = 11; action = \"retry\"; } ); }; }\n"
    ");\n", NAME, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  const struct config_retry *r = &c->connectors[1].retry;
  CU_ASSERT(retry_is(&c->connectors[0].retry,
                     (struct config_retry){ 0, 100, 2.0, 10000, CONFIG_RETRY_RETRY, CONFIG_RETRY_FAIL, NULL, 0 }));
  CU_ASSERT(retry_is(r, (struct config_retry){ 5, 50, 1.5, 2000, CONFIG_RETRY_REROUTE, CONFIG_RETRY_REROUTE,
                                               NULL, 2 }));
  CU_ASSERT_EQUAL_FATAL(r->n_errors, 2);
  CU_ASSERT_EQUAL(r->errors[0].code, 0x58);
  CU_ASSERT_EQUAL(r->errors[0].action, CONFIG_RETRY_FAIL);
  CU_ASSERT_EQUAL(r->errors[1].action, CONFIG_RETRY_RETRY);
  config_free(c);

  load_bad("connectors = (\n"
           "  { name = \"a\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:1\"; system_id = \"x\";\n"
           "    retry = { backoff_first = 5000; backoff_max = 1000; permanent = \"shrug\";\n"
           "              errors = ( { code = 8; action = \"fail\"; },\n"
           "                         { code = 8; action = \"retry\"; } ); }; },\n"
           "  { name = \"s\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:3\";\n"
           "    users = ( { name = \"u\"; password = \"p\"; } ); retry = { attempts = 2; }; }\n"
           ");\n", &e);
  CU_ASSERT(has_error(&e, 3, "connectors.[0].retry.backoff_first", "not above backoff_max"));
  CU_ASSERT(has_error(&e, 3, "connectors.[0].retry.permanent", "retry"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].retry.errors.[1]", "code 8 (0x8) is given twice"));
  CU_ASSERT(has_error(&e, 7, "connectors.[1].retry", "mode = \"client\""));
  config_errors_free(&e);
}

static void test_duplicates(void)
{
  struct config_errors e;
  load_bad("connectors = (\n"
           "  { name = \"in\"; protocol = \"ucp\"; mode = \"server\"; listen = \"127.0.0.1:3000\";\n"
           "    users = ( { name = \"a\"; password = \"x\"; },\n"
           "              { name = \"b\"; password = \"x\"; },\n"
           "              { name = \"a\"; password = \"y\"; } ); },\n"
           "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\"; connect = \"h:1\"; system_id = \"s\"; },\n"
           "  { name = \"in\"; protocol = \"smpp\"; mode = \"client\"; connect = \"h:1\"; system_id = \"s\"; }\n"
           ");\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 2);
  CU_ASSERT(has_error(&e, 5, "connectors.[0].users.[2].name",
                      "'a' is already the name of connectors.[0].users.[0] (line 3)"));
  CU_ASSERT(has_error(&e, 7, "connectors.[2].name", "'in' is already the name of connectors.[0] (line 2)"));
  config_errors_free(&e);
}

static void test_routes(void)
{
  struct config_errors e;
  load_bad(ONE_CLIENT
           "routes = (\n"
           "  { from = \"in\"; to = \"out\"; },\n"
           "  { dst_prefix = \"+49\"; to = \"out\"; },\n"
           "  { src_prefix = \"49x\"; to = \"elsewhere\"; },\n"
           "  { to = \"out\"; },\n"
           "  { dst_prefix = \"\"; to = \"out\"; },\n"
           "  { from = \"out\"; }\n"
           ");\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 6);
  CU_ASSERT(has_error(&e, 4, "routes.[0].from", "no connector is named 'in'"));
  CU_ASSERT(has_error(&e, 5, "routes.[1].dst_prefix", "may hold only digits"));
  CU_ASSERT(has_error(&e, 6, "routes.[2].src_prefix", "may hold only digits"));
  CU_ASSERT(has_error(&e, 6, "routes.[2].to", "no connector is named 'elsewhere'"));
  CU_ASSERT(has_error(&e, 8, "routes.[4]", "a second default route"));
  CU_ASSERT(has_error(&e, 8, "routes.[4]", "the first is at line 7"));
  CU_ASSERT(has_error(&e, 9, "routes.[5].to", "missing"));
  config_errors_free(&e);
}

static void test_admin_database_plugins(void)
{
  struct config_errors e;
  load_bad(ONE_CLIENT
           "admin: { listen = \"127.0.0.1:8480\"; };\n"
           "database: { message_log = true; };\n"
           "plugins = ( { file = \"list.txt\"; }, { path = \"\"; } );\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 4);
  CU_ASSERT(has_error(&e, 3, "admin.token", "missing"));
  CU_ASSERT(has_error(&e, 4, "database.conninfo", "missing"));
  CU_ASSERT(has_error(&e, 5, "plugins.[0].path", "missing"));
  CU_ASSERT(has_error(&e, 5, "plugins.[1].path", "must not be empty"));
  config_errors_free(&e);

  load_bad(ONE_CLIENT "admin: { listen = \"127.0.0.1:8480\"; token = \"\"; };\n", &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 3, "admin.token", "must not be empty"));
  config_errors_free(&e);
}

/* The admin token: 16 characters or more, no example placeholder, from the
 * file or from token_file (its trailing newline stripped), never both. */
static void test_admin_token(void)
{
  struct config_errors e;
  load_bad(ONE_CLIENT "admin: { listen = \"127.0.0.1:8480\"; token = \"fifteen-chars-x\"; };\n", &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 3, "admin.token", "has 15 characters: at least 16 are needed"));
  config_errors_free(&e);
  load_bad(ONE_CLIENT "admin: { listen = \"127.0.0.1:8480\"; token = \"replace-with-a-long-random-token\"; };\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 3, "admin.token", "the example configuration's placeholder"));
  config_errors_free(&e);

  char dir[] = "/tmp/emg-config-XXXXXX", good[64], bad[64], text[512];
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  snprintf(good, sizeof good, "%s/good", dir);
  snprintf(bad, sizeof bad, "%s/bad", dir);
  FILE *f = fopen(good, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("sixteen-chars-ok\n", f);
  fclose(f);
  f = fopen(bad, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("short\n", f);
  fclose(f);

  snprintf(text, sizeof text, ONE_CLIENT "admin: { listen = \"127.0.0.1:8480\"; token_file = \"%s\"; };\n", good);
  struct config *c = config_load_string(text, NAME, &e);
  CU_ASSERT_EQUAL(e.count, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_STRING_EQUAL(c->admin_token, "sixteen-chars-ok");
  config_free(c);
  snprintf(text, sizeof text, ONE_CLIENT "admin: { listen = \"127.0.0.1:8480\"; token_file = \"%s\"; };\n", bad);
  load_bad(text, &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 3, "admin.token_file", "has 5 characters"));
  config_errors_free(&e);
  snprintf(text, sizeof text, ONE_CLIENT "admin: { listen = \"127.0.0.1:8480\"; token_file = \"%s/none\"; };\n", dir);
  load_bad(text, &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 3, "admin.token_file", "cannot read"));
  config_errors_free(&e);
  snprintf(text, sizeof text,
           ONE_CLIENT "admin: { listen = \"127.0.0.1:8480\"; token = \"sixteen-chars-ok\"; token_file = \"%s\"; };\n",
           good);
  load_bad(text, &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 3, "admin.token", "exclude each other"));
  config_errors_free(&e);
  unlink(good);
  unlink(bad);
  rmdir(dir);
}

/* Errors of every section in one file all come back, in line order. */
static void test_all_errors_sorted(void)
{
  struct config_errors e;
  load_bad("routes = ( { to = \"nowhere\"; } );\n"
           "general: { node_id = 70000; };\n"
           "connectors = ( { name = \"out\"; protocol = \"smpp\"; mode = \"client\";\n"
           "  connect = \"127.0.0.1:2775\"; system_id = \"emg\"; window = 0; } );\n"
           "admin: { listen = \"127.0.0.1:8480\"; tokn = \"x\"; };\n",
           &e);
  CU_ASSERT_EQUAL_FATAL(e.count, 5);
  CU_ASSERT(has_error(&e, 1, "routes.[0].to", "no connector is named 'nowhere'"));
  CU_ASSERT(has_error(&e, 2, "general.node_id", "must be 1..65535"));
  CU_ASSERT(has_error(&e, 4, "connectors.[0].window", "must be 1..999"));
  CU_ASSERT(has_error(&e, 5, "admin.token", "missing"));
  CU_ASSERT(has_error(&e, 5, "admin.tokn", "(did you mean 'token'?)"));
  /* One digit lines: the text order of "NAME:LINE:" is line order. */
  size_t prefix = strlen(NAME) + 3;
  for (unsigned i = 1; i < e.count; i++)
    CU_ASSERT(strncmp(e.lines[i - 1], e.lines[i], prefix) <= 0);
  config_errors_free(&e);
}

/* Whatever is wrong around a password, the password stays out of the message. */
static void test_no_passwords(void)
{
  struct config_errors e;
  load_bad("connectors = (\n"
           "  { name = \"in\"; protocol = \"ucp\"; mode = \"server\"; listen = \"127.0.0.1:3000\";\n"
           "    users = ( { name = \"a\"; password = \"Hunter2-in-a-password-far-too-long-to-fit\"; },\n"
           "              { name = \"a\"; password = \"Hunter3\"; pasword = \"Hunter4\"; } );\n"
           "    password = \"Hunter5\"; },\n"
           "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\"; connect = \"h:1\";\n"
           "    system_id = \"s\"; password = \"Hunter6-in-a-password-far-too-long-to-fit\"; }\n"
           ");\n",
           &e);
  CU_ASSERT_EQUAL(e.count, 5);
  CU_ASSERT(has_error(&e, 3, "connectors.[0].users.[0].password", "longer than 32 characters"));
  CU_ASSERT(has_error(&e, 4, "connectors.[0].users.[1].name", "already the name"));
  CU_ASSERT(has_error(&e, 4, "connectors.[0].users.[1].pasword", "(did you mean 'password'?)"));
  CU_ASSERT(has_error(&e, 5, "connectors.[0].password", "applies only when mode = \"client\""));
  CU_ASSERT(has_error(&e, 7, "connectors.[1].password", "longer than 32 characters"));
  for (unsigned i = 0; i < e.count; i++)
    CU_ASSERT_PTR_NULL(strstr(e.lines[i], "Hunter"));
  config_errors_free(&e);
}

/* An @include'd file is found next to the including one, and its errors
 * name it and its own lines. */
static void test_included_file(void)
{
  char dir[] = "/tmp/emg-config-XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  char main_path[64], part_path[64];
  snprintf(main_path, sizeof main_path, "%s/main.conf", dir);
  snprintf(part_path, sizeof part_path, "%s/part.conf", dir);
  FILE *f = fopen(part_path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("# connectors\n\n" ONE_CLIENT, f);
  fputs("general: { id_window = 0; };\n", f);
  fclose(f);
  f = fopen(main_path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  /* Relative to the including file, not to the working directory. */
  fputs("admin: { listen = \"127.0.0.1:8480\"; token = \"a-token-of-16-chars\"; };\n@include \"part.conf\"\n", f);
  fclose(f);

  struct config_errors e;
  struct config *c = config_load(main_path, &e);
  CU_ASSERT_PTR_NULL(c);
  CU_ASSERT_EQUAL_FATAL(e.count, 1);
  char want[160];
  snprintf(want, sizeof want, "%s:5: general.id_window: must be 1..1000000", part_path);
  CU_ASSERT_STRING_EQUAL(e.lines[0], want);
  config_errors_free(&e);
  config_free(c);
  unlink(part_path);
  unlink(main_path);
  rmdir(dir);
}

static void test_log_level_names(void)
{
  CU_ASSERT_STRING_EQUAL(config_log_level_name(CONFIG_LOG_ERROR), "error");
  CU_ASSERT_STRING_EQUAL(config_log_level_name(CONFIG_LOG_WARN), "warn");
  CU_ASSERT_STRING_EQUAL(config_log_level_name(CONFIG_LOG_INFO), "info");
  CU_ASSERT_STRING_EQUAL(config_log_level_name(CONFIG_LOG_DEBUG), "debug");
  CU_ASSERT_STRING_EQUAL(config_log_level_name(CONFIG_LOG_DEBUG2), "debug2");
  CU_ASSERT_STRING_EQUAL(config_log_level_name((enum config_log_level)42), "unknown");
}

#define TWO_SERVERS \
  "connectors = (\n" \
  "  { name = \"smpp-in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:1\";\n" \
  "    users = ( { name = \"u1\"; password = \"p1\"; } ); },\n" \
  "  { name = \"ucp-in\"; protocol = \"ucp\"; mode = \"server\"; listen = \"127.0.0.1:2\";\n" \
  "    users = ( { name = \"u1\"; password = \"p1\"; }, { name = \"u2\"; password = \"p2\"; } ); },\n" \
  "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\"; connect = \"h:1\"; system_id = \"s\"; }\n" \
  ");\n"

/* Accounts: the top-level list with every key, and the users lists as its
 * shorthand; each server connector's users are the accounts that may use it. */
static void test_accounts(void)
{
  struct config_errors e;
  struct config *c = config_load_string(
      "accounts = ( { name = \"acme\"; password_hash = \"$y$j9T$Xib.iFndFAHMXBdG80OKB/$pjODb2D38g43Gr8knzCBTXG3MNlLPU79UmIn4bLzzg2\"; connectors = [ \"smpp-in\" ];\n"
      "  allow_ip = [ \"10.0.0.0/8\", \"::1\" ]; max_binds = 4; max_rate = 1000.5; credit = 5000;\n"
      "  senders = [ \"ACME\", \"4917\" ]; default_sender = \"ACME\"; expires = \"2027-01-31\"; },\n"
      "  { name = \"every\"; password = \"pw\"; enabled = false; expires = \"2027-01-31T12:30:00Z\"; } );\n"
      TWO_SERVERS, NAME, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL_FATAL(c->n_accounts, 4);
  const struct config_account *acme = &c->accounts[0], *every = &c->accounts[1];
  CU_ASSERT_STRING_EQUAL(acme->password_hash, "$y$j9T$Xib.iFndFAHMXBdG80OKB/$pjODb2D38g43Gr8knzCBTXG3MNlLPU79UmIn4bLzzg2");
  CU_ASSERT_STRING_EQUAL(acme->password, "");
  CU_ASSERT_EQUAL(acme->n_connectors, 1);
  CU_ASSERT_EQUAL(acme->n_allow_ip, 2);
  CU_ASSERT_STRING_EQUAL(acme->allow_ip[1], "::1");
  CU_ASSERT_EQUAL(acme->max_binds, 4);
  CU_ASSERT_DOUBLE_EQUAL(acme->max_rate, 1000.5, 1e-9);
  CU_ASSERT_EQUAL(acme->credit, 5000);
  CU_ASSERT_EQUAL(acme->n_senders, 2);
  CU_ASSERT_STRING_EQUAL(acme->default_sender, "ACME");
  CU_ASSERT_TRUE(acme->enabled);
  CU_ASSERT_EQUAL(acme->expires_at, 1801353600);   /* 2027-01-31T00:00:00Z */
  CU_ASSERT_FALSE(every->enabled);
  CU_ASSERT_EQUAL(every->expires_at, 1801398600);
  CU_ASSERT_EQUAL(every->credit, CONFIG_CREDIT_UNLIMITED);
  /* u1 of both server connectors is one account of both; u2 of one. */
  int u1 = config_account_index(c, "u1"), u2 = config_account_index(c, "u2");
  CU_ASSERT_FATAL(u1 >= 0 && u2 >= 0);
  CU_ASSERT_EQUAL(c->accounts[u1].n_connectors, 2);
  CU_ASSERT_TRUE(c->accounts[u1].from_users);
  CU_ASSERT_EQUAL(c->accounts[u2].n_connectors, 1);
  CU_ASSERT_EQUAL(config_account_index(c, "nobody"), -1);
  /* smpp-in: acme, every, u1; ucp-in: every, u1, u2 (in the accounts' order). */
  const struct config_connector *smpp = config_connector(c, "smpp-in"), *ucp = config_connector(c, "ucp-in");
  CU_ASSERT_EQUAL_FATAL(smpp->n_users, 3);
  CU_ASSERT_STRING_EQUAL(smpp->users[0].name, "acme");
  CU_ASSERT_EQUAL(smpp->users[0].account, 0);
  CU_ASSERT_STRING_EQUAL(smpp->users[2].name, "u1");
  CU_ASSERT_EQUAL(smpp->users[2].account, (unsigned)u1);
  CU_ASSERT_EQUAL_FATAL(ucp->n_users, 3);
  CU_ASSERT_STRING_EQUAL(ucp->users[0].name, "every");
  CU_ASSERT_STRING_EQUAL(ucp->users[2].name, "u2");
  config_free(c);

  load_bad("accounts = ( { name = \"a\"; password = \"x\"; password_hash = \"$y$x\"; },\n"
           "  { name = \"b\"; },\n"
           "  { name = \"c\"; password_hash = \"plain\"; expires = \"31.01.2027\"; },\n"
           "  { name = \"d\"; password = \"x\"; connectors = [ \"out\", \"nope\" ]; },\n"
           "  { name = \"u2\"; password = \"x\"; } );\n"
           TWO_SERVERS, &e);
  CU_ASSERT_EQUAL(e.count, 8);
  CU_ASSERT(has_error(&e, 1, "accounts.[0].password", "give either password or password_hash, not both"));
  CU_ASSERT(has_error(&e, 1, "accounts.[0].password_hash", "malformed yescrypt hash"));
  CU_ASSERT(has_error(&e, 2, "accounts.[1].password", "give password or password_hash (or tls_subject"));
  CU_ASSERT(has_error(&e, 3, "accounts.[2].password_hash", "not a password hash"));
  CU_ASSERT(has_error(&e, 3, "accounts.[2].expires", "must be a date"));
  CU_ASSERT(has_error(&e, 4, "accounts.[3].connectors", "'out' is a client connector"));
  CU_ASSERT(has_error(&e, 4, "accounts.[3].connectors", "no connector is named 'nope'"));
  CU_ASSERT(has_error(&e, 10, "connectors.[1].users.[1]", "account 'u2' is also in accounts (line 5)"));
  config_errors_free(&e);

  load_bad("connectors = (\n"
           "  { name = \"a\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:1\";\n"
           "    users = ( { name = \"u\"; password = \"p1\"; } ); },\n"
           "  { name = \"b\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:2\";\n"
           "    users = ( { name = \"u\"; password = \"p2\"; } ); } );\n", &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 5, "connectors.[1].users.[0]", "with another password"));
  config_errors_free(&e);
}

/* A reload puts routes and plugins in place; any other change is refused,
 * named by its key's path. */
static void test_restart_keys(void)
{
  struct config_errors e;
  const char *base = ONE_CLIENT "routes = ( { to = \"out\"; } );\n";
  struct config *running = config_load_string(base, NAME, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(running);
  struct {
    const char *text;
    const char *key;   /* NULL: put in place by a reload */
  } cases[] = {
    { ONE_CLIENT "routes = ( { to = \"out\"; } );\n", NULL },
    { ONE_CLIENT "routes = ( { to = \"out\"; dst_prefix = \"49\"; }, { to = \"out\"; } );\n", NULL },
    { "\n\n" ONE_CLIENT "routes = ( { to = \"out\"; } );\n", NULL },   /* only lines moved */
    { "general: { dlr_ttl = 60; };\n" ONE_CLIENT "routes = ( { to = \"out\"; } );\n", "general.dlr_ttl" },
    { "connectors = ( { name = \"out\"; protocol = \"smpp\"; mode = \"client\";\n"
      "  connect = \"127.0.0.1:2776\"; system_id = \"emg\"; } );\nroutes = ( { to = \"out\"; } );\n",
      "connectors.[0].connect" },
    { ONE_CLIENT "routes = ( { to = \"out\"; } );\nadmin: { listen = \"127.0.0.1:8080\"; "
      "token = \"0123456789abcdef0123\"; };\n", "admin.listen" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct config *next = config_load_string(cases[i].text, NAME, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(next);
    char why[512] = "";
    bool refused = config_needs_restart(running, next, why, sizeof why);
    CU_ASSERT_EQUAL(refused, cases[i].key != NULL);
    if (cases[i].key && strncmp(why, cases[i].key, strlen(cases[i].key)) != 0) {
      CU_FAIL("the refusal names another key");
      fprintf(stderr, "case %zu: %s\n", i, why);
    }
    config_free(next);
  }
  config_free(running);
}

/* A TLS server connector, its tls group given as text; loaded as if the
 * file were in the certificates' folder. */
static struct config *load_tls(const char *tls, const char *mode_keys, struct config_errors *e)
{
  char text[2048], name[600];
  snprintf(text, sizeof text,
           "connectors = ( { name = \"c\"; protocol = \"smpp\"; %s\n"
           "  tls = { %s };\n} );\nroutes = ( { to = \"c\"; } );\n", mode_keys, tls);
  snprintf(name, sizeof name, "%s", file("emgd.conf"));
  return config_load_string(text, name, e);
}

#define SERVER_KEYS \
  "mode = \"server\"; listen = \"127.0.0.1:2775\"; users = ( { name = \"a\"; password = \"p\"; } );"
#define CLIENT_KEYS "mode = \"client\"; connect = \"127.0.0.1:2775\"; system_id = \"emg\";"

static void test_tls(void)
{
  make_certs();
  struct config_errors e;
  /* Relative paths from the configuration's folder; defaults by role. */
  struct config *c = load_tls("cert = \"server.pem\"; key = \"server.key\";", SERVER_KEYS, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  const struct config_tls *t = &c->connectors[0].tls;
  CU_ASSERT_TRUE(t->enabled);
  CU_ASSERT_STRING_EQUAL(t->cert, file("server.pem"));
  CU_ASSERT_FALSE(t->verify_peer);
  CU_ASSERT_STRING_EQUAL(t->min_version, "1.2");
  CU_ASSERT_PTR_NOT_NULL(t->ctx);
  struct config *client = load_tls("ca = \"ca.pem\";", CLIENT_KEYS, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(client);
  CU_ASSERT_TRUE(client->connectors[0].tls.verify_peer);
  CU_ASSERT_STRING_EQUAL(client->connectors[0].tls.ca, file("ca.pem"));

  /* A change of the files or the settings is put in place by a reload. */
  struct config *next = load_tls("cert = \"server.pem\"; key = \"server.key\"; min_version = \"1.3\";",
                                 SERVER_KEYS, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(next);
  char why[512];
  CU_ASSERT_FALSE(config_needs_restart(c, next, why, sizeof why));
  config_free(next);
  config_free(client);
  config_free(c);

  /* Each bad group refused with its line, its key and the reason. */
  static const struct {
    const char *tls, *mode, *key, *what;
  } bad[] = {
    { "cert = \"expired.pem\"; key = \"server.key\";", SERVER_KEYS, "connectors.[0].tls", "expired on" },
    { "cert = \"future.pem\"; key = \"server.key\";", SERVER_KEYS, "connectors.[0].tls", "not valid before" },
    { "cert = \"missing.pem\"; key = \"server.key\";", SERVER_KEYS, "connectors.[0].tls",
      "missing.pem: No such file or directory" },
    { "cert = \"server.pem\"; key = \"client.key\";", SERVER_KEYS, "connectors.[0].tls",
      "does not match the certificate" },
    { "ca = \"ca.pem\";", SERVER_KEYS, "connectors.[0].tls", "needs a certificate" },
    { "cert = \"server.pem\"; key = \"server.key\"; verify_peer = true;", SERVER_KEYS, "connectors.[0].tls",
      "needs ca" },
    { "cert = \"server.pem\"; key = \"server.key\"; server_name = \"x\";", SERVER_KEYS,
      "connectors.[0].tls.server_name", "does not apply to an smpp, ucp or cimd2 server connector" },
    { "cert = \"server.pem\"; key = \"server.key\"; min_version = \"1.1\";", SERVER_KEYS,
      "connectors.[0].tls", "must be \"1.2\" or \"1.3\"" },
    { "ca = \"server.key\";", CLIENT_KEYS, "connectors.[0].tls", "ca " },
    { "cert = \"server.pem\"; kye = \"server.key\";", SERVER_KEYS, "connectors.[0].tls.kye",
      "did you mean 'key'" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    c = load_tls(bad[i].tls, bad[i].mode, &e);
    CU_ASSERT_PTR_NULL(c);
    config_free(c);
    bool found = false;
    for (unsigned j = 0; j < e.count && !found; j++)
      found = strstr(e.lines[j], ":2: ") && strstr(e.lines[j], bad[i].key) && strstr(e.lines[j], bad[i].what);
    if (!found) {
      CU_FAIL("a bad tls group without its error");
      fprintf(stderr, "case %zu (%s): %s\n", i, bad[i].tls, e.count ? e.lines[0] : "no error");
    }
    config_errors_free(&e);
  }

  /* HTTPS served by an HTTP server connector runs on OpenSSL as sessions
   * do: a cipher list applies, a server name does not, and a reload takes
   * a new context whole (version included) without a restart. */
  char text[2048];
  const char *http = "connectors = ( { name = \"h\"; protocol = \"http\"; mode = \"server\";\n"
                     "  listen = \"127.0.0.1:8080\"; users = ( { name = \"a\"; password = \"p\"; } );\n"
                     "  tls = { cert = \"%s\"; key = \"server.key\"; %s };\n} );\n";
  snprintf(text, sizeof text, http, "server.pem", "server_name = \"x\";");
  CU_ASSERT_PTR_NULL(config_load_string(text, file("emgd.conf"), &e));
  CU_ASSERT_TRUE(e.count == 1 && strstr(e.lines[0], "connectors.[0].tls.server_name: does not apply to an http server"));
  config_errors_free(&e);
  snprintf(text, sizeof text, http, "server.pem", "ciphers = \"HIGH\";");
  c = config_load_string(text, file("emgd.conf"), &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_PTR_NOT_NULL(c->connectors[0].tls.ctx);
  snprintf(text, sizeof text, http, "expired.pem", "");
  CU_ASSERT_PTR_NULL(config_load_string(text, file("emgd.conf"), &e));
  CU_ASSERT_TRUE(e.count == 1 && strstr(e.lines[0], "expired on"));
  config_errors_free(&e);
  snprintf(text, sizeof text, http, "server.pem", "min_version = \"1.3\";");
  next = config_load_string(text, file("emgd.conf"), &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(next);
  CU_ASSERT_FALSE(config_needs_restart(c, next, why, sizeof why));
  config_free(next);
  config_free(c);

  /* The admin API's HTTPS, and the receipt callbacks' CAs. */
  snprintf(text, sizeof text,
           ONE_CLIENT "admin: { listen = \"127.0.0.1:8080\"; token = \"0123456789abcdef0123\";\n"
           "  tls = { cert = \"server.pem\"; key = \"ca.key\"; }; };\n");
  CU_ASSERT_PTR_NULL(config_load_string(text, file("emgd.conf"), &e));
  CU_ASSERT_TRUE(e.count == 1 && strstr(e.lines[0], ":4: admin.tls: key ") &&
                 strstr(e.lines[0], "does not match"));
  config_errors_free(&e);
  snprintf(text, sizeof text,
           "connectors = ( { name = \"h\"; protocol = \"http\"; mode = \"server\";\n"
           "  listen = \"127.0.0.1:8080\"; users = ( { name = \"a\"; password = \"p\"; } );\n"
           "  callback_ca = \"nothing.pem\"; } );\n");
  CU_ASSERT_PTR_NULL(config_load_string(text, file("emgd.conf"), &e));
  CU_ASSERT_TRUE(e.count == 1 && strstr(e.lines[0], ":3: connectors.[0].callback_ca: ca ") &&
                 strstr(e.lines[0], "No such file"));
  config_errors_free(&e);
  remove_certs();
}

void suite_config(void);
void suite_config(void)
{
  static const struct test_case cases[] = {
    { "etc/emgd.conf", test_default_file },
    { "etc/examples", test_examples },
    { "defaults", test_defaults },
    { "every key", test_all_keys },
    { "defaults within bounds", test_bounded_defaults },
    { "syntax error", test_syntax_error },
    { "missing file", test_missing_file },
    { "unknown keys and suggestions", test_unknown_keys },
    { "wrong types", test_wrong_types },
    { "ranges", test_ranges },
    { "strings, enums, addresses", test_strings },
    { "keys per mode", test_modes },
    { "HTTP connectors", test_http_connectors },
    { "a client connector's retry policy", test_retry_policy },
    { "duplicate names", test_duplicates },
    { "routes", test_routes },
    { "admin, database, plugins", test_admin_database_plugins },
    { "admin token", test_admin_token },
    { "all errors, sorted", test_all_errors_sorted },
    { "no passwords in messages", test_no_passwords },
    { "included file", test_included_file },
    { "log level names", test_log_level_names },
    { "what a reload cannot put in place", test_restart_keys },
    { "accounts, and users as their shorthand", test_accounts },
    { "tls groups", test_tls },
    { NULL, NULL },
  };
  test_add_suite("config", cases);
}
