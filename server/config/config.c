/* config.c - the tables of emgd.conf's sections (general, admin,
 * database, connectors, routes, plugins) with their checks across keys,
 * and the API of config.h. config_read.c reads a file against them (and
 * holds config_connector(), which its connector-name check needs).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <libconfig.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config_internal.h"
#include "log.h"

/* The enums are stored through int, as the value tables hold them. */
_Static_assert(sizeof(enum config_log_level) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum config_conn_mode) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum config_msgid_type) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum proto_bind_mode) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum config_route_mode) == sizeof(int), "enum stored as int");

static const struct name_value log_levels[] = {
  { "error", CONFIG_LOG_ERROR }, { "warn", CONFIG_LOG_WARN }, { "info", CONFIG_LOG_INFO },
  { "debug", CONFIG_LOG_DEBUG }, { "debug2", CONFIG_LOG_DEBUG2 }, { NULL, 0 },
};

static const struct name_value conn_modes[] = {
  { "server", CONFIG_CONN_SERVER }, { "client", CONFIG_CONN_CLIENT }, { NULL, 0 },
};

static const struct name_value bind_modes[] = {
  { "transceiver", PROTO_BIND_TRX }, { "transmitter", PROTO_BIND_TX },
  { "receiver", PROTO_BIND_RX }, { NULL, 0 },
};

static const struct name_value msgid_types[] = {
  { "string", CONFIG_MSGID_STRING }, { "decimal", CONFIG_MSGID_DECIMAL },
  { "hex", CONFIG_MSGID_HEX }, { NULL, 0 },
};

static const struct name_value deferred_holders[] = {
  { "hold", CONFIG_DEFERRED_HOLD }, { "pass", CONFIG_DEFERRED_PASS }, { NULL, 0 },
};
_Static_assert(sizeof(enum config_deferred) == sizeof(int), "enum stored as int");

static const struct name_value long_receipt_policies[] = {
  { "last", CONFIG_LONG_LAST }, { "combined", CONFIG_LONG_COMBINED }, { "each", CONFIG_LONG_EACH }, { NULL, 0 },
};
_Static_assert(sizeof(enum config_long_receipts) == sizeof(int), "enum stored as int");

static const struct name_value route_modes[] = {
  { "failover", CONFIG_ROUTE_FAILOVER }, { "weighted", CONFIG_ROUTE_WEIGHTED }, { NULL, 0 },
};

#define TARGET struct config_user
static const struct key user_keys[] = {
  { STRING_KEY("name", name, 1), .required = ALWAYS },
  { STRING_KEY("password", password, 1), .required = ALWAYS },
};
#undef TARGET
static const struct section user_section = { SECTION(user_keys) };

static long long window_bound(const void *base)
{
  /* The runtime keeps one slot of the protocol's window for its own
   * requests (bind, keep-alive, unbind). */
  const struct config_connector *c = base;
  return c->proto ? (long long)c->proto->window_max - 1 : LLONG_MAX;
}

static long long reconnect_bound(const void *base)
{
  return ((const struct config_connector *)base)->reconnect_max_ms;
}

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" DIGITS "-_."

static const struct name_value http_methods[] = {
  { "get", CONFIG_HTTP_GET }, { "post_form", CONFIG_HTTP_POST_FORM }, { "post_json", CONFIG_HTTP_POST_JSON },
  { NULL, 0 },
};
_Static_assert(sizeof(enum config_http_method) == sizeof(int), "enum stored as int");

#define TARGET struct config_connector
static const struct key connector_keys[] = {
  /* Names appear in the admin API's URLs and in log categories. */
  { STRING_KEY("name", name, 1), .required = ALWAYS, .chars = NAME_CHARS,
    .chars_why = "letters, digits, '-', '_' and '.'" },
  { PROTO_KEY("protocol", proto), .required = ALWAYS },
  { ENUM_KEY("mode", mode, conn_modes, CONFIG_CONN_SERVER), .required = ALWAYS },
  { ADDR_KEY("listen", listen, 0), .only = MODE_SERVER, .required = MODE_SERVER },
  { ADDR_KEY("connect", connect, 1), .only = MODE_CLIENT },   /* required: check_connector */
  { UINT_KEY("instances", instances, 1, 1000, 1) },
  { UINT_KEY("window", window, 1, 65535, 10), .bound = window_bound,
    .bound_why = "(this protocol's limit)" },
  { STRING_KEY("system_id", system_id, 1), .only = MODE_CLIENT },   /* required: check_connector */
  { STRING_KEY("password", password, 0), .only = MODE_CLIENT },
  { ENUM_KEY("bind_mode", bind_mode, bind_modes, PROTO_BIND_TRX), .only = MODE_CLIENT },
  { LIST_KEY("users", users, n_users, user_section, 1, 100000), .unique = "name", .only = MODE_SERVER,
    .live = true },
  { DOUBLE_KEY("max_rate", max_rate, 0, 1000000, 0) },
  { UINT_KEY("response_timeout", response_timeout_ms, 1, 3600000, 30000) },
  { UINT_KEY("keepalive", keepalive_ms, 1, 3600000, 30000) },
  /* reconnect_max first: it bounds reconnect_min. */
  { UINT_KEY("reconnect_max", reconnect_max_ms, 1, 3600000, 60000), .only = MODE_CLIENT },
  { UINT_KEY("reconnect_min", reconnect_min_ms, 1, 3600000, 1000), .only = MODE_CLIENT,
    .bound = reconnect_bound, .bound_why = "(not above reconnect_max)" },
  { UINT_KEY("max_queue", max_queue, 0, 100000000, 0) },
  { ENUM_KEY("msgid_type_submit", msgid_submit, msgid_types, CONFIG_MSGID_STRING), .only = MODE_CLIENT },
  { ENUM_KEY("msgid_type_receipt", msgid_receipt, msgid_types, CONFIG_MSGID_STRING), .only = MODE_CLIENT },
  { STRING_KEY("url", url, 1), .only = MODE_CLIENT },
  { ENUM_KEY("method", http_method, http_methods, CONFIG_HTTP_GET), .only = MODE_CLIENT },
  { STRING_KEY("body", body, 0), .only = MODE_CLIENT },
  { STRING_KEY("id_field", id_field, 0), .only = MODE_CLIENT },
  { UINT_KEY("connections", connections, 1, 1000, 10), .only = MODE_CLIENT },
  { BOOL_KEY("reply_sms", reply_sms, false), .only = MODE_CLIENT },
  { UINT_KEY("connections_per_ip", connections_per_ip, 1, 100000, 64), .only = MODE_SERVER },
  { UINT_KEY("max_connections", max_connections, 1, 1000000, 1000), .only = MODE_SERVER },
  { UINT_KEY("request_timeout", request_timeout_s, 1, 3600, 30), .only = MODE_SERVER },
  { UINT_KEY("bind_timeout", bind_timeout_ms, 100, 600000, 5000), .only = MODE_SERVER },
  { UINT_KEY("unbound_per_ip", unbound_per_ip, 1, 100000, 16), .only = MODE_SERVER },
  { UINT_KEY("unbound_max", unbound_max, 1, 100000, 128), .only = MODE_SERVER },
  /* Live: config_tls_needs_restart says what a reload cannot put in place. */
  { STRUCT_KEY("tls", tls, struct config_tls, tls_section), .live = true },
  { STRUCT_KEY("retry", retry, struct config_retry, retry_section), .only = MODE_CLIENT },
  { ENUM_KEY("deferred_delivery", deferred, deferred_holders, CONFIG_DEFERRED_HOLD), .only = MODE_CLIENT },
  { ENUM_KEY("long_receipts", long_receipts, long_receipt_policies, CONFIG_LONG_LAST) },
  { FILE_KEY("callback_ca", callback_ca, 1), .only = MODE_SERVER },
  { UINT_KEY("callback_connections", callback_connections, 1, 10000, 16), .only = MODE_SERVER },
  { UINT_KEY("callback_pipeline", callback_pipeline, 1, 64, 1), .only = MODE_SERVER },
};
#undef TARGET
/* What a client connector needs depends on its protocol: an SMSC's address
 * and account, or a provider's URL; and each only where it applies. */
static enum config_tls_role connector_tls_role(const struct config_connector *c)
{
  if (c->http)
    return c->mode == CONFIG_CONN_SERVER ? CONFIG_TLS_HTTP_CONNECTOR_SERVER : CONFIG_TLS_HTTP_CLIENT;
  return c->mode == CONFIG_CONN_SERVER ? CONFIG_TLS_SESSION_SERVER : CONFIG_TLS_SESSION_CLIENT;
}

static void check_connector(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  struct config_connector *c = base;
  char p[KEY_PATH_LEN];
  /* system_id and password serve both: an SMSC account, or a provider's HTTP Basic credentials. */
  static const char *const session_only[] = { "connect", "bind_mode", "keepalive",
                                               "msgid_type_submit", "msgid_type_receipt", NULL };
  static const char *const http_only[] = { "url", "method", "body", "id_field", "connections", "reply_sms", NULL };
  const char *const *wrong = c->http ? session_only : http_only;
  for (unsigned i = 0; wrong[i]; i++) {
    const config_setting_t *s = config_setting_get_member(grp, wrong[i]);
    join_path(p, path, wrong[i]);
    if (s && (c->http || c->mode == CONFIG_CONN_CLIENT))
      report(ld, s, p, "applies only when protocol = %s", c->http ? "\"smpp\" or \"ucp\"" : "\"http\"");
  }
  static const char *const http_server_only[] = { "connections_per_ip", "max_connections", "request_timeout",
                                                  "callback_ca", "callback_connections", "callback_pipeline",
                                                  NULL };
  static const char *const session_server_only[] = { "bind_timeout", "unbound_per_ip", "unbound_max", NULL };
  const char *const *server_wrong = c->http ? session_server_only : http_server_only;
  for (unsigned i = 0; server_wrong[i]; i++) {
    const config_setting_t *s = config_setting_get_member(grp, server_wrong[i]);
    join_path(p, path, server_wrong[i]);
    if (s && c->mode == CONFIG_CONN_SERVER)
      report(ld, s, p, "applies only when protocol = %s", c->http ? "\"smpp\" or \"ucp\"" : "\"http\"");
  }
  config_tls_check(ld, grp, &c->tls, path, connector_tls_role(c));
  const config_setting_t *callback_ca = config_setting_get_member(grp, "callback_ca");
  if (callback_ca && c->http && c->mode == CONFIG_CONN_SERVER) {
    join_path(p, path, "callback_ca");
    config_ca_check(ld, callback_ca, p, c->callback_ca);
  }
  if (c->mode != CONFIG_CONN_CLIENT)
    return;
  const char *const *needed = c->http ? (const char *const[]){ "url", NULL }
                                      : (const char *const[]){ "connect", "system_id", NULL };
  for (unsigned i = 0; needed[i]; i++)
    if (!config_setting_get_member(grp, needed[i])) {
      join_path(p, path, needed[i]);
      report(ld, grp, p, "missing (required when mode = \"client\" and protocol = \"%s\")",
             c->http ? "http" : c->proto ? c->proto->name : "?");
    }
}

static const struct section connector_section = {
  SECTION(connector_keys), .mode_key = "mode", .check = check_connector,
  .has_line = true, .line_offset = offsetof(struct config_connector, line),
};

static bool route_is_default(const struct config_route *r)
{
  return !r->from[0] && !r->dst_prefix[0] && !r->src_prefix[0] && !r->account[0];
}

/* One default route at most: a second could never be taken. */
static void check_default_route(struct load *ld, const config_setting_t *grp,
                                const struct config_route *r, const char *path)
{
  if (!route_is_default(r))
    return;
  for (const struct config_route *earlier = ld->cfg->routes; earlier < r; earlier++)
    if (route_is_default(earlier)) {
      report(ld, grp, path, "a second default route (no from, dst_prefix or src_prefix); "
             "the first is at line %d", earlier->line);
      return;
    }
}

/* The target's keys taken together, so that nothing written is silently
 * ignored: a mode needs a group, weights a weighted one, one weight for
 * each of its connectors. A connector twice in a group is an error too: it
 * is a typo more often than a way to weigh or to retry. Then the weights
 * not given are 1, so that a loaded route holds one for each connector. */
static void check_target(struct load *ld, const config_setting_t *grp, struct config_route *r,
                         const char *path)
{
  const config_setting_t *to = config_setting_get_member(grp, "to");
  const config_setting_t *mode = config_setting_get_member(grp, "mode");
  const config_setting_t *weights = config_setting_get_member(grp, "weights");
  bool group = to && config_setting_type(to) == CONFIG_TYPE_ARRAY;
  char p[KEY_PATH_LEN];
  if (mode && !group) {
    join_path(p, path, "mode");
    report(ld, mode, p, "applies only when to is an array [ ... ] of connectors");
  }
  if (weights) {
    join_path(p, path, "weights");
    if (r->mode != CONFIG_ROUTE_WEIGHTED)
      report(ld, weights, p, "applies only when mode = \"weighted\"");
    else if (r->n_to && r->n_weights != r->n_to)
      report(ld, weights, p, "%u weights for %u connectors in to", r->n_weights, r->n_to);
  } else {
    for (unsigned i = 0; i < r->n_to; i++)
      r->weights[i] = 1;
    r->n_weights = r->n_to;
  }
  for (unsigned i = 1; group && i < r->n_to; i++)
    for (unsigned j = 0; j < i && r->to[i][0]; j++)
      if (strcmp(r->to[i], r->to[j]) == 0) {
        char to_path[KEY_PATH_LEN];
        join_path(to_path, path, "to");
        elem_path(p, to_path, i);
        report(ld, config_setting_get_elem(to, i), p, "'%s' is already to.[%u]", r->to[i], j);
        break;
      }
}

static void check_route(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  check_default_route(ld, grp, base, path);
  check_target(ld, grp, base, path);
}

#define TARGET struct config_route
static const struct key route_keys[] = {
  { STRING_KEY("from", from, 0), .connector_ref = true },
  { STRING_KEY("dst_prefix", dst_prefix, 0), .chars = DIGITS, .chars_why = "digits" },
  { STRING_KEY("src_prefix", src_prefix, 0), .chars = DIGITS, .chars_why = "digits" },
  { STRING_KEY("account", account, 0) },   /* checked once the accounts are known: config_accounts.c */
  { STRINGS_KEY("to", to, n_to, 1), .connector_ref = true, .required = ALWAYS },
  { ENUM_KEY("mode", mode, route_modes, CONFIG_ROUTE_FAILOVER) },
  /* Capped so that a weighted route's sequence (router.c) stays a few kilobytes. */
  { UINTS_KEY("weights", weights, n_weights, 1, 1000, 1) },
  { STRING_KEY("user", user, 0) },
};
#undef TARGET
static const struct section route_section = {
  SECTION(route_keys), .has_line = true,
  .line_offset = offsetof(struct config_route, line), .check = check_route,
};

static const struct name_value plugin_on_errors[] = {
  { "pass", CONFIG_PLUGIN_PASS }, { "refuse", CONFIG_PLUGIN_REFUSE }, { NULL, 0 },
};
_Static_assert(sizeof(enum config_plugin_on_error) == sizeof(int), "enum stored as int");

#define TARGET struct config_plugin
static const struct key plugin_keys[] = {
  { FILE_KEY("path", path, 1), .required = ALWAYS },
  /* Names appear in the admin API and in log categories, as connectors' do. */
  { STRING_KEY("name", name, 1), .chars = NAME_CHARS,
    .chars_why = "letters, digits, '-', '_' and '.'" },
  { ENUM_KEY("on_error", on_error, plugin_on_errors, CONFIG_PLUGIN_PASS) },
  { UINT_KEY("timeout_ms", timeout_ms, 1, 60000, 50) },
};
#undef TARGET

/* A float in the shortest form that reads back as the same value, so that
 * 0.1 reaches the plugin as "0.1", not "0.10000000000000001". */
static int float_text(char *out, size_t len, double v)
{
  int n = 0;
  for (int precision = 1; precision <= 17; precision++) {
    n = snprintf(out, len, "%.*g", precision, v);
    if (strtod(out, NULL) == v)
      break;
  }
  return n;
}

/* A plugin's own setting as text. Returns the length the text needs (at
 * least len: it was cut), or -1 for a type that has no text (a group, a
 * list, an array). */
static int setting_text(const config_setting_t *s, char *out, size_t len)
{
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_STRING:
    return snprintf(out, len, "%s", config_setting_get_string(s));
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64:
    return snprintf(out, len, "%lld", config_setting_get_int64(s));
  case CONFIG_TYPE_FLOAT:
    return float_text(out, len, config_setting_get_float(s));
  case CONFIG_TYPE_BOOL:
    return snprintf(out, len, "%s", config_setting_get_bool(s) ? "true" : "false");
  }
  return -1;
}

/* The keys the table does not know are the plugin's own settings, kept as
 * text in file order for the plugin's init, which judges them: only the
 * plugin knows what it takes. A plugin without a name is called after its
 * file, so that "plugins/blacklist.so" shows as "blacklist". */
static void check_plugin(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  struct config_plugin *pl = base;
  const struct section own = { SECTION(plugin_keys) };
  char p[KEY_PATH_LEN];
  for (int i = 0; i < config_setting_length(grp); i++) {
    const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
    const char *key = config_setting_name(s);
    if (find_key(&own, key))
      continue;
    join_path(p, path, key);
    if (pl->n_settings == CONFIG_PLUGIN_SETTINGS_MAX) {
      report(ld, s, p, "more than %d settings in one plugin", CONFIG_PLUGIN_SETTINGS_MAX);
      break;
    }
    struct config_plugin_setting *set = &pl->settings[pl->n_settings];
    int len = setting_text(s, set->value, sizeof set->value);
    if (strlen(key) >= sizeof set->key) {
      report(ld, s, p, "a setting's name may be %zu characters at most", sizeof set->key - 1);
    } else if (len < 0) {
      report(ld, s, p, "must be a string, a number or a boolean, not %s",
             type_name(config_setting_type(s)));
    } else if ((size_t)len >= sizeof set->value) {
      report(ld, s, p, "longer than %zu characters", sizeof set->value - 1);
    } else {
      snprintf(set->key, sizeof set->key, "%s", key);
      pl->n_settings++;
    }
  }
  if (!pl->name[0]) {
    const char *file = strrchr(pl->path, '/');
    file = file ? file + 1 : pl->path;
    size_t len = strlen(file);
    if (len > 3 && strcmp(file + len - 3, ".so") == 0)
      len -= 3;
    snprintf(pl->name, sizeof pl->name, "%.*s", (int)len, file);
  }
}

/* Open: the plugin's own settings sit next to path (check_plugin). */
static const struct section plugin_section = {
  SECTION(plugin_keys), .open = true, .check = check_plugin,
  .has_line = true, .line_offset = offsetof(struct config_plugin, line),
};

static long long soft_queue_bound(const void *base)
{
  return (long long)((const struct config *)base)->max_total_queue;
}

#define TARGET struct config
static const struct key general_keys[] = {
  { UINT_KEY("node_id", node_id, 1, 65535, 1) },
  { BOOL_KEY("persist", persist, true) },
  { FILE_KEY("spool_dir", spool_dir, 1), .def_str = "var/spool" },
  { UINT_KEY("id_window", id_window, 1, 1000000, 100) },
  { ENUM_KEY("log_level", log_level, log_levels, CONFIG_LOG_INFO) },
  { FILE_KEY("log_file", log_file, 0), .not_file = LOG_JOURNAL },
  { FILE_KEY("access_log", access_log, 0) },
  { SIZE_KEY("dlr_table_size", dlr_table_size, 1, 100000000, 1000000) },
  { UINT_KEY("dlr_ttl", dlr_ttl_s, 1, 31536000, 172800) },
  { UINT_KEY("mo_join_timeout", mo_join_timeout_s, 0, 86400, 60) },
  { SIZE_KEY("mo_join_max", mo_join_max, 1, 1000000, 10000) },
  { UINT_KEY("auth_max_failures", auth_max_failures, 0, 1000000, 10) },
  { UINT_KEY("auth_failure_window", auth_failure_window_s, 1, 86400, 60) },
  { UINT_KEY("auth_block_time", auth_block_s, 1, 86400, 60) },
  { SIZE_KEY("history_size", history_size, 0, 100000000, 262144) },
  { SIZE_KEY("history_series", history_series, 0, 100000, 512) },
  { UINT_KEY("journal_commit_interval_us", journal_commit_interval_us, 100, 100000, 500) },
  { UINT_KEY("journal_segment_mb", journal_segment_mb, 1, 1024, 64) },
  /* max_total_queue first: it bounds the soft limit. */
  { SIZE_KEY("max_total_queue", max_total_queue, 1, 1000000000, 110000) },
  { SIZE_KEY("max_total_queue_soft", max_total_queue_soft, 1, 1000000000, 100000),
    .bound = soft_queue_bound, .bound_why = "(not above max_total_queue)" },
  { FILE_KEY("accounts_file", accounts_file, 1) },
  { UINT_KEY("max_accounts", max_accounts, 1, 1000000, 4096) },
};
static const struct section general_section = { SECTION(general_keys) };

/* The admin token: long enough not to be guessed, and not one of the
 * placeholders of the example configurations (etc/). */
#define ADMIN_TOKEN_MIN 16
static const char *const example_tokens[] = { "change-me", "replace-with-a-long-random-token", NULL };

/* The token file's content, its trailing newlines stripped, into
 * cfg->admin_token. Returns 0, or -1 with the reason reported. */
static int read_token_file(struct load *ld, const config_setting_t *s, const char *path)
{
  struct config *c = ld->cfg;
  char buf[sizeof c->admin_token + 2];
  FILE *f = fopen(c->admin_token_file, "r");
  if (!f) {
    report(ld, s, path, "cannot read %s: %s", c->admin_token_file, strerror(errno));
    return -1;
  }
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  bool more = fgetc(f) != EOF;
  fclose(f);
  buf[n] = 0;
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    buf[--n] = 0;
  if (more || n >= sizeof c->admin_token) {
    report(ld, s, path, "%s holds more than %zu characters", c->admin_token_file, sizeof c->admin_token - 1);
    return -1;
  }
  if (strlen(buf) != n || strpbrk(buf, "\r\n")) {
    report(ld, s, path, "%s must hold the token on one line", c->admin_token_file);
    return -1;
  }
  memcpy(c->admin_token, buf, n + 1);
  memset(buf, 0, sizeof buf);
  return 0;
}

/* Exactly one of token and token_file; and a token fit to guard the API
 * (never echoed in the message). */
static void check_admin(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  struct config *c = base;
  const config_setting_t *token = config_setting_get_member(grp, "token");
  const config_setting_t *file = config_setting_get_member(grp, "token_file");
  const config_setting_t *where = token ? token : file;
  char p[KEY_PATH_LEN];
  join_path(p, path, token || !file ? "token" : "token_file");
  if (token && file) {
    report(ld, file, p, "token and token_file exclude each other: give one");
    return;
  }
  if (!where) {
    report(ld, grp, p, "missing (or token_file, a file holding the token)");
    return;
  }
  if (file && (!c->admin_token_file[0] || read_token_file(ld, file, p) == -1))
    return;
  size_t len = strlen(c->admin_token);
  if (!len)
    return;   /* "must not be empty", already */
  const char *in = file ? " in " : "", *name = file ? c->admin_token_file : "";
  if (len < ADMIN_TOKEN_MIN) {
    report(ld, where, p, "the token%s%s has %zu characters: at least %d are needed", in, name, len,
           ADMIN_TOKEN_MIN);
    return;
  }
  for (unsigned i = 0; example_tokens[i]; i++)
    if (strcmp(c->admin_token, example_tokens[i]) == 0)
      report(ld, where, p, "the token%s%s is the example configuration's placeholder: choose one of your own",
             in, name);
  config_tls_check(ld, grp, &c->admin_tls, path, CONFIG_TLS_HTTP_SERVER);
}

static const struct key admin_keys[] = {
  { ADDR_KEY("listen", admin_listen, 0), .required = ALWAYS },
  { STRING_KEY("token", admin_token, 1) },                 /* one of the two: check_admin */
  { FILE_KEY("token_file", admin_token_file, 1) },
  { STRUCT_KEY("tls", admin_tls, struct config_tls, tls_section), .live = true },
};
static const struct section admin_section = { SECTION(admin_keys), .check = check_admin };

static const struct key database_keys[] = {
  { STRING_KEY("conninfo", db_conninfo, 1), .required = ALWAYS },
  { BOOL_KEY("message_log", db_message_log, false) },
  { UINT_KEY("credit_batch", db_credit_batch, 1, 1000000, 1000) },
};
static const struct section database_section = { SECTION(database_keys) };

/* Connectors before routes: routes name them. */
static const struct key root_keys[] = {
  { GROUP_KEY("general", general_section) },
  { GROUP_KEY("admin", admin_section) },
  { GROUP_KEY("database", database_section) },
  { LIST_KEY("connectors", connectors, n_connectors, connector_section, 1, 65535),
    .unique = "name", .required = ALWAYS },
  /* After the connectors: a change of a users entry is then named by its
   * own path, not by the account it became (config_accounts.c). */
  { LIST_KEY("accounts", accounts, n_accounts, account_section, 0, 100000), .unique = "name", .live = true },
  { LIST_KEY("routes", routes, n_routes, route_section, 0, 100000), .live = true },
  { LIST_KEY("plugins", plugins, n_plugins, plugin_section, 0, 1000), .unique = "name", .live = true },
};
#undef TARGET
static const struct section root_section = { SECTION(root_keys) };

/* ---- the API ---- */

bool config_needs_restart(const struct config *running, const struct config *next, char *why, size_t len)
{
  char path[KEY_PATH_LEN];
  if (section_differs(&root_section, running, next, "", path)) {
    snprintf(why, len, "%s changed: a reload puts routes, plugins, accounts and TLS certificates in place, "
             "a restart applies the rest", path);
    return true;
  }
  for (unsigned i = 0; i < running->n_connectors; i++)
    if (config_tls_needs_restart(&running->connectors[i].tls, &next->connectors[i].tls,
                                 connector_tls_role(&running->connectors[i]))) {
      bool served = running->connectors[i].mode == CONFIG_CONN_SERVER;
      snprintf(why, len, "connectors.[%u].tls changed: %s", i,
               served ? "for HTTPS served, a reload puts in place the certificate and its key, "
                        "a restart applies the rest"
                      : "an http client connector takes its TLS files at start: restart to change them");
      return true;
    }
  if (config_tls_needs_restart(&running->admin_tls, &next->admin_tls, CONFIG_TLS_HTTP_SERVER)) {
    snprintf(why, len, "admin.tls changed: a reload puts in place the certificate and its key, "
             "a restart applies the rest");
    return true;
  }
  return false;
}

void config_free(struct config *c)
{
  if (!c)
    return;
  for (unsigned i = 0; i < c->n_connectors; i++)
    config_tls_free(&c->connectors[i].tls);
  config_tls_free(&c->admin_tls);
  free_lists(&root_section, c);
  free(c);
}

/* Turns what libconfig read (ok false: its error) into a config, or NULL
 * with the errors in *errors. read_errno is errno after a failed read. */
static struct config *build(config_t *lc, bool ok, int read_errno, const char *name,
                            struct config_errors *errors)
{
  struct load ld = { .name = name, .include_dir = config_get_include_dir(lc) };
  struct config *c = NULL;
  config_t accounts_lc;    /* general.accounts_file: its errors point into it until sorted */
  config_init(&accounts_lc);
  *errors = (struct config_errors){ 0 };
  if (!ok) {
    if (config_error_type(lc) == CONFIG_ERR_FILE_IO)
      report_at(&ld, NULL, 0, "cannot read: %s", strerror(read_errno));
    else
      report_at(&ld, config_error_file(lc), (unsigned)config_error_line(lc), "%s",
                config_error_text(lc));
    goto out;
  }
  c = calloc(1, sizeof *c);
  if (!c) {
    ld.out_of_memory = true;
    goto out;
  }
  snprintf(c->path, sizeof c->path, "%s", name);
  ld.cfg = c;
  const config_setting_t *root = config_root_setting(lc);
  read_group(&ld, root, &root_section, c, "");
  c->has_database = config_setting_get_member(root, "database") != NULL;
  config_accounts_file(&ld, &accounts_lc, c);
  config_accounts_merge(&ld, root, c);
  c->has_admin = config_setting_get_member(root, "admin") != NULL;
  if (c->has_database && c->accounts_file[0]) {
    const config_setting_t *general = config_setting_get_member(root, "general");
    report(&ld, general ? config_setting_get_member(general, "accounts_file") : NULL, "general.accounts_file",
           "with a database section, accounts changed while emgd runs are kept in the database "
           "(table accounts, shared by every node): remove accounts_file");
  }
out:
  if (finish_errors(&ld, errors)) {
    config_free(c);
    c = NULL;
  }
  config_destroy(&accounts_lc);
  return c;
}

struct config *config_load(const char *path, struct config_errors *errors)
{
  config_t lc;
  config_init(&lc);
  /* An @include names a file next to the one that includes it, wherever
   * emgd was started (without a directory in path, that is where it runs). */
  char dir[CONFIG_PATH_LEN];
  snprintf(dir, sizeof dir, "%s", path);
  if (strchr(path, '/'))
    config_set_include_dir(&lc, dirname(dir));
  errno = 0;
  bool ok = config_read_file(&lc, path) == CONFIG_TRUE;
  struct config *c = build(&lc, ok, errno, path, errors);
  config_destroy(&lc);
  return c;
}

struct config *config_load_string(const char *text, const char *name, struct config_errors *errors)
{
  config_t lc;
  config_init(&lc);
  bool ok = config_read_string(&lc, text) == CONFIG_TRUE;
  struct config *c = build(&lc, ok, 0, name, errors);
  config_destroy(&lc);
  return c;
}

const char *config_log_level_name(enum config_log_level level)
{
  for (const struct name_value *nv = log_levels; nv->name; nv++)
    if (nv->value == (int)level)
      return nv->name;
  return "unknown";
}

const char *config_protocol_name(const struct config_connector *c)
{
  return c->http ? "http" : c->proto ? c->proto->name : "?";
}
