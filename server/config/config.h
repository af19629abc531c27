/* config.h - emgd's configuration: etc/emgd.conf (libconfig syntax) read,
 * checked and turned into plain structs the other modules take.
 *
 * Every error names the file, the line and the key ("etc/emgd.conf:12:
 * connectors.[1].window: must be 1..1000"), and all errors of a file are
 * reported at once, so an operator fixes them in one go.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CONFIG_H
#define EMG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "msg.h"
#include "proto.h"
#include "reload_report.h"   /* what a reload of it put in place */

#define CONFIG_NAME_LEN 64
#define CONFIG_ADDR_LEN 128
#define CONFIG_PATH_LEN 512

enum config_log_level {
  CONFIG_LOG_ERROR, CONFIG_LOG_WARN, CONFIG_LOG_INFO, CONFIG_LOG_DEBUG, CONFIG_LOG_DEBUG2
};

/* A connector's `users` entry (the shorthand for an account of that
 * connector); once loaded, a server connector's users are the accounts
 * that may use it, each with its index in config.accounts. */
struct config_user {
  char name[MSG_USER_LEN];
  char password[MSG_USER_LEN];
  unsigned account;
};

#define CONFIG_ACCOUNT_LIST_MAX 32       /* connectors, allow_ip, senders of one account */
#define CONFIG_PASSWORD_HASH_LEN 256
#define CONFIG_CREDIT_UNLIMITED ((size_t)INT64_MAX)   /* credit absent */

/* An account: who may bind or submit, from where, how much. */
struct config_account {
  char name[MSG_USER_LEN];
  char password[MSG_USER_LEN];        /* cleartext, or "" when password_hash is given */
  char password_hash[CONFIG_PASSWORD_HASH_LEN]; /* yescrypt, bcrypt, SHA-512 crypt or argon2id */
  char connectors[CONFIG_ACCOUNT_LIST_MAX][CONFIG_NAME_LEN]; /* none = every server connector */
  unsigned n_connectors;
  char allow_ip[CONFIG_ACCOUNT_LIST_MAX][64]; /* CIDRs; none = any address */
  unsigned n_allow_ip;
  unsigned max_binds;                 /* sessions at once over all connectors; 0 = no limit */
  double max_rate;                    /* messages a second over all its sessions; 0 = no limit */
  size_t credit;                      /* message parts it may still send; CONFIG_CREDIT_UNLIMITED */
  char senders[CONFIG_ACCOUNT_LIST_MAX][MSG_ADDR_LEN]; /* allowed sources or prefixes; none = any */
  unsigned n_senders;
  char default_sender[MSG_ADDR_LEN];  /* for a submit without one; "" = none */
  bool enabled;
  char expires[32];                   /* "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ" (UTC); "" = never */
  char tls_subject[256];              /* the client certificate a session must present, its subject
                                         as RFC 2253 writes it ("CN=acme,O=Example"); "" = none asked.
                                         With no password, the certificate alone admits. */
  int64_t expires_at;                 /* the same in seconds since 1970; 0 = never */
  bool from_users;                    /* written as a connector's users entry */
  bool managed;                       /* read from general.accounts_file or the database: changed live */
  int64_t db_version;                 /* the database row's version it was built from; 0 = none */
  int line;
};

struct tls_ctx;

/* Who a tls = { ... } group serves: what its keys mean, which apply and
 * which library takes them (OpenSSL for sessions and the HTTP connectors,
 * libmicrohttpd's GnuTLS for the admin API). */
enum config_tls_role {
  CONFIG_TLS_SESSION_SERVER,
  CONFIG_TLS_SESSION_CLIENT,
  CONFIG_TLS_HTTP_SERVER,            /* the admin API (libmicrohttpd over GnuTLS) */
  CONFIG_TLS_HTTP_CONNECTOR_SERVER,  /* an HTTP server connector (OpenSSL, as sessions) */
  CONFIG_TLS_HTTP_CLIENT
};

/* A connector's or the admin API's tls = { ... }. File paths are absolute
 * once loaded (a relative one is taken from the configuration's folder). */
struct config_tls {
  bool enabled;                       /* the group is present */
  char cert[CONFIG_PATH_LEN];         /* PEM certificate (chain); servers must have one */
  char key[CONFIG_PATH_LEN];          /* its private key; "" = in cert's file */
  char ca[CONFIG_PATH_LEN];           /* CAs the peer's certificate must chain to; "" = the system's */
  bool verify_peer;                   /* client: the server's chain and name (default true);
                                         server: require a client certificate (default false) */
  char server_name[256];              /* session client: SNI and the certificate's name; "" = connect's host */
  char min_version[8];                /* "1.2" (default) or "1.3" */
  char ciphers[512];                  /* TLS 1.2 ciphers in OpenSSL's syntax; "" = OpenSSL's default */
  struct tls_ctx *ctx;                /* sessions: built from the files at load, checked whole */
};

enum config_conn_mode {
  CONFIG_CONN_SERVER,      /* we listen: clients bind to us */
  CONFIG_CONN_CLIENT       /* we connect and bind to an SMSC */
};

/* How an SMSC writes its message ids (Kannel's msg-id-type): in the
 * submit response and in the receipt. */
enum config_msgid_type {
  CONFIG_MSGID_STRING,     /* compared as text, case and leading zeros ignored */
  CONFIG_MSGID_DECIMAL,
  CONFIG_MSGID_HEX
};

/* How an outgoing HTTP connector sends (http_client_method). */
enum config_http_method {
  CONFIG_HTTP_GET,
  CONFIG_HTTP_POST_FORM,
  CONFIG_HTTP_POST_JSON
};

/* Who holds a message with a deferred delivery time until it is due. */
enum config_deferred {
  CONFIG_DEFERRED_HOLD,    /* emgd: it waits in the gateway, then goes out without the time */
  CONFIG_DEFERRED_PASS     /* the SMSC: it goes out at once, the time passed on (SMSCs that schedule) */
};

/* Which receipts the origin of a message split into parts hears. */
enum config_long_receipts {
  CONFIG_LONG_LAST,        /* the last part's alone: the others ask the SMSC for none */
  CONFIG_LONG_COMBINED,    /* one for the whole: delivered when every part is, else the first failure */
  CONFIG_LONG_EACH         /* every part's, as it comes */
};

/* What a client connector does with a submit its peer refused. */
enum config_retry_action {
  CONFIG_RETRY_RETRY,      /* send it again here, after the back-off */
  CONFIG_RETRY_REROUTE,    /* move it to another member of its route's group that can take it
                              (none: as the error's class does, retry or fail) */
  CONFIG_RETRY_FAIL        /* give up: a failure receipt to its origin */
};

#define CONFIG_RETRY_ERRORS_MAX 32

/* One of the peer's own codes (SMPP command_status, UCP error code, HTTP
 * status) and what to do when a submit gets it. */
struct config_retry_error {
  unsigned code;
  enum config_retry_action action;
};

struct config_retry {
  unsigned attempts;                  /* sends of a message at most; then it fails. 0 = no limit */
  unsigned backoff_first_ms;          /* the wait after a first refusal; default 100 */
  double backoff_factor;              /* each further one waits this much longer; default 2 */
  unsigned backoff_max_ms;            /* at most; default 10000 */
  enum config_retry_action temporary; /* throttled, queue full, other temporary errors; default retry */
  enum config_retry_action permanent; /* every other refusal; default fail */
  struct config_retry_error *errors;  /* by code, before the classes */
  unsigned n_errors;
};

struct config_connector {
  char name[CONFIG_NAME_LEN];
  const struct proto_ops *proto;      /* NULL for HTTP */
  bool http;                          /* protocol = "http": no sessions, requests */
  enum config_conn_mode mode;
  char listen[CONFIG_ADDR_LEN];       /* server */
  char connect[CONFIG_ADDR_LEN];      /* client */
  unsigned instances;                 /* threads, each one session; default 1 */
  unsigned window;                    /* outstanding requests per session; default 10 */
  char system_id[MSG_USER_LEN];       /* client: our account at the SMSC */
  char password[MSG_USER_LEN];
  enum proto_bind_mode bind_mode;     /* client; default TRX */
  struct config_user *users;          /* server: accounts allowed to bind */
  unsigned n_users;
  double max_rate;                    /* msgs/s for the whole connector; 0 = unlimited */
  unsigned response_timeout_ms;       /* default 30000 */
  unsigned keepalive_ms;              /* default 30000 */
  unsigned reconnect_min_ms;          /* default 1000 */
  unsigned reconnect_max_ms;          /* default 60000 */
  unsigned max_queue;                 /* this connector's queue limit; 0 = only the totals */
  enum config_msgid_type msgid_submit; /* client: ids in submit responses */
  enum config_msgid_type msgid_receipt;/* client: ids in receipts */
  /* HTTP client: the provider's API */
  char url[1024];                     /* URL template with Kannel's escapes */
  enum config_http_method http_method;
  char body[2048];                    /* POST body template; "" = none */
  char id_field[128];                 /* where the provider's id is in its JSON answer; "" = whole body */
  unsigned connections;               /* HTTP client: connections kept alive; default 10 */
  bool reply_sms;                     /* HTTP client: an application's answer to a pushed MO goes
                                         back to the handset as an SMS (Kannel's get-url reply) */
  /* HTTP server: what one client may hold */
  unsigned connections_per_ip;        /* connections at once from one address; default 64 */
  unsigned max_connections;           /* connections at once in all; default 1000 */
  unsigned request_timeout_s;         /* for a request to come whole; default 30 */
  /* SMPP/UCP server: connections that have not bound, held by the listener */
  unsigned bind_timeout_ms;           /* for the bind to come; default 5000 */
  unsigned unbound_per_ip;            /* at once from one address; default 16 */
  unsigned unbound_max;               /* at once in all; default 128 */
  struct config_tls tls;              /* TLS on every connection; tls.enabled false = plain TCP */
  struct config_retry retry;          /* client: refused submits */
  enum config_deferred deferred;      /* client: who holds a message until its deferred time */
  enum config_long_receipts long_receipts; /* messages split to go out here: whose receipts pass */
  char callback_ca[CONFIG_PATH_LEN];  /* HTTP server: CAs of the receipt callbacks' HTTPS servers;
                                         "" = the system's */
  unsigned callback_connections;      /* HTTP server: callbacks at once per instance (and connections
                                         to one host); default 16 */
  unsigned callback_pipeline;         /* ... pipelined on each connection; default 1 (none) */
  int line;                           /* where it was defined, for later messages */
};

/* Connectors in one route's target group at most. */
#define CONFIG_ROUTE_TARGETS_MAX 16

/* How a route picks among the connectors of its group. */
enum config_route_mode {
  CONFIG_ROUTE_FAILOVER,   /* the first usable one, in the order given */
  CONFIG_ROUTE_WEIGHTED    /* spread over the usable ones by weight */
};

struct config_route {
  char from[CONFIG_NAME_LEN];         /* source connector; "" = any */
  char dst_prefix[MSG_ADDR_LEN];      /* "" = any */
  char src_prefix[MSG_ADDR_LEN];      /* "" = any */
  char account[MSG_USER_LEN];         /* the submitting account; "" = any */
  char to[CONFIG_ROUTE_TARGETS_MAX][CONFIG_NAME_LEN]; /* destination connectors: one, or a group */
  unsigned n_to;
  enum config_route_mode mode;        /* default failover */
  unsigned weights[CONFIG_ROUTE_TARGETS_MAX]; /* of to[i]; 1 each unless given */
  unsigned n_weights;                 /* n_to once loaded */
  char user[MSG_USER_LEN];            /* target is a server connector: the account that gets
                                         the message (MO, or client to client); "" = its only one */
  int line;
};

/* What the plugin host does when a plugin's hook fails or runs past its
 * timeout (server/routing/plugin_host.h). */
enum config_plugin_on_error {
  CONFIG_PLUGIN_PASS,      /* the message goes on as if the plugin were absent */
  CONFIG_PLUGIN_REFUSE     /* the message is refused */
};

/* Settings of one plugin at most, and the longest value. */
#define CONFIG_PLUGIN_SETTINGS_MAX 32
#define CONFIG_PLUGIN_VALUE_LEN 1024

/* One of the plugin's own keys, its value as text: numbers as written
 * (floats in their shortest exact form), booleans "true" / "false". */
struct config_plugin_setting {
  char key[CONFIG_NAME_LEN];
  char value[CONFIG_PLUGIN_VALUE_LEN];
};

struct config_plugin {
  char path[CONFIG_PATH_LEN];         /* the shared object; absolute once loaded (from the configuration's folder) */
  char name[CONFIG_NAME_LEN];         /* unique; default: the file name of path without ".so" */
  enum config_plugin_on_error on_error; /* default pass */
  unsigned timeout_ms;                /* a hook taking longer fails; default 50 */
  struct config_plugin_setting settings[CONFIG_PLUGIN_SETTINGS_MAX]; /* every other key, in file order */
  unsigned n_settings;
  int line;
};

struct config {
  char path[CONFIG_PATH_LEN];

  /* general */
  unsigned node_id;                   /* 1..65535 */
  bool persist;
  char spool_dir[CONFIG_PATH_LEN];
  unsigned id_window;                 /* default 100 */
  enum config_log_level log_level;    /* default info */
  char log_file[CONFIG_PATH_LEN];     /* "" = stderr, "journal" = the systemd journal, else a file */
  char access_log[CONFIG_PATH_LEN];   /* a line per message in its final state; "" = none */
  size_t dlr_table_size;              /* default 1000000 */
  unsigned dlr_ttl_s;                 /* how long a receipt is awaited; default 172800 (48 h) */
  unsigned mo_join_timeout_s;         /* how long the parts of a long MO wait for each other; 0 = not
                                         joined; default 60 */
  size_t mo_join_max;                 /* long MOs being joined at once; default 10000 */
  unsigned auth_max_failures;         /* failed logins from one address that block it; 0 = never */
  unsigned auth_failure_window_s;     /* ... within this long */
  unsigned auth_block_s;              /* the first block's length, doubled when it comes again */
  size_t history_size;                /* message events kept for lookups; default 262144, 0 = none */
  size_t history_series;              /* the console's series of counters kept at most; 0 = none */
  unsigned journal_commit_interval_us; /* least time between group commits' starts; default 500 */
  unsigned journal_segment_mb;   /* journal segment files' size; default 64 */
  size_t max_total_queue;             /* default 110000 */
  size_t max_total_queue_soft;        /* default 100000 */
  char accounts_file[CONFIG_PATH_LEN]; /* accounts changed live are kept here; "" = none (changes refused);
                                        * a relative path is taken from the configuration file's folder */
  unsigned max_accounts;              /* accounts at once, live additions included; default 4096 */

  /* admin */
  bool has_admin;
  char admin_listen[CONFIG_ADDR_LEN];
  char admin_token[128];              /* given, or read from admin_token_file */
  char admin_token_file[CONFIG_PATH_LEN];
  struct config_tls admin_tls;        /* HTTPS for the API and the status page */

  /* database (optional) */
  bool has_database;
  char db_conninfo[512];
  bool db_message_log;
  unsigned db_credit_batch;           /* parts an account may take on this node between two pushes of its
                                       * use to the database (the overdraft bound); default 1000 */

  struct config_account *accounts;
  unsigned n_accounts;
  struct config_connector *connectors;
  unsigned n_connectors;
  struct config_route *routes;
  unsigned n_routes;
  struct config_plugin *plugins;
  unsigned n_plugins;
};

/* Where load errors go: one line each, "FILE:LINE: KEY: what is wrong". */
struct config_errors {
  char **lines;
  unsigned count;
};
void config_errors_free(struct config_errors *e);

/* Reads and checks path. Returns the config (free with config_free), or
 * NULL with every problem in *errors (caller frees with config_errors_free). */
struct config *config_load(const char *path, struct config_errors *errors);

/* The same for text in memory; name stands for the file in messages. */
struct config *config_load_string(const char *text, const char *name, struct config_errors *errors);

/* Whether next differs from the running configuration in a key a reload
 * cannot put in place (all but routes and plugins); why names the first. */
bool config_needs_restart(const struct config *running, const struct config *next, char *why, size_t len);

void config_free(struct config *c);

/* The checks across an account's keys (password or its hash, allow_ip,
 * expires, which it also turns into expires_at): each problem is passed to
 * problem with the key it concerns. */
void config_account_check(struct config_account *a, void (*problem)(void *ctx, const char *key, const char *why),
                          void *ctx);

/* The index in c->accounts of the account named name, or -1. */
int config_account_index(const struct config *c, const char *name);

/* The connector named name, or NULL. */
const struct config_connector *config_connector(const struct config *c, const char *name);

const char *config_log_level_name(enum config_log_level level);

/* "smpp", "ucp" or "http". */
const char *config_protocol_name(const struct config_connector *c);

#endif
