/* db.h - emgd's PostgreSQL side (libpq): the schema and its migrations, the
 * message log writer, message ids from a shared sequence, and what several
 * nodes on one database need (heartbeats, receipts resolved and handed over
 * between nodes, the history of a message no longer in memory).
 *
 * All of it is optional: without a `database` section emgd calls none of it.
 * The functions come in two kinds.
 *
 *  - The message log (db_log_*) is asynchronous: db_log_event copies the
 *    event into a bounded buffer under a short lock and returns; one writer
 *    thread folds the events of a batch into one row per message and writes
 *    them with COPY into a staging table and one INSERT ... ON CONFLICT.
 *    While the database is slow or away, events wait in memory up to a
 *    limit, then in a spill file (checksummed records), and are written when
 *    it is back; a graceful close spills what could not be written, and the
 *    next open writes it. Only a crash loses what was in memory then.
 *
 *  - Everything on struct db is synchronous: each call runs one statement
 *    (or one transaction) on one connection, bounded by the timeout given to
 *    db_open (a call that must connect first may take up to twice that).
 *    While the database is away, calls between reconnect attempts fail at
 *    once with DB_E_DOWN instead of each waiting for a time-out. Calls on one
 *    struct db are serialised by a lock: call them from the housekeeping
 *    thread or another thread that may wait, never from a connector
 *    instance's loop.
 *
 * Every statement is fixed text with $n parameters, or COPY data; nothing is
 * ever formatted into SQL. Connections use client_encoding UTF8; text that
 * is not valid UTF-8 (an address from the network) is stored with '?' for
 * each bad byte.
 *
 * Errors are negative DB_E_* codes; where a function takes `err` and
 * `err_len`, that buffer gets the reason (the server's message, the
 * connection's failure) whenever the result is negative; DB_ERR_LEN bytes
 * hold any reason whole.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_DB_H
#define EMG_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tables.h"
#include "msg.h"

#define DB_ERR_LEN 256
#define DB_NAME_LEN 64             /* connector names (CONFIG_NAME_LEN) */

/* The schema version --init-db brings: the number of the last sql/NNN_*.sql.
 * And the oldest one this code runs on: the migrations after it only add
 * indexes (004: a recipient's messages), so an upgraded node keeps its
 * message log and cluster before anyone runs --init-db, its searches slower
 * meanwhile. */
#define DB_SCHEMA_VERSION 4
#define DB_SCHEMA_NEEDED 3

enum db_error {
  DB_OK = 0,
  DB_E_DOWN = -1,                  /* no connection (or waiting before the next attempt) */
  DB_E_TIMEOUT = -2,               /* no answer in time; the connection was dropped */
  DB_E_SQL = -3,                   /* the server refused the statement */
  DB_E_SCHEMA = -4,                /* schema missing or older than DB_SCHEMA_NEEDED: emgd --init-db */
  DB_E_IO = -5,                    /* the spill file could not be written */
  DB_E_NOMEM = -6,
  DB_E_ARG = -7                    /* a bad argument, e.g. a conninfo libpq cannot parse */
};

/* A short English name for a DB_* code ("database down", ...). */
const char *db_strerror(int code);

/* ---- schema ---- */

/* Creates the schema, or brings it up to DB_SCHEMA_VERSION: applies every
 * migration compiled in (sql/NNN_*.sql) that schema_migrations does not
 * list, all in one transaction under an advisory lock, so running it twice,
 * or on two nodes at once, is harmless. Synchronous (for emgd --init-db and
 * tests); timeout_ms bounds the connect (0 = 30000); the migrations, and
 * waiting for another node's, have no time limit (a migration may rewrite a
 * large table).
 * Returns 0 and sets *applied (may be NULL) to the number of migrations
 * applied, or a DB_E_* code with the reason in err. */
int db_init_schema(const char *conninfo, unsigned timeout_ms, int *applied, char *err, size_t err_len);

/* ---- the message log (asynchronous) ---- */

/* What happened to a message. Each event fills the columns of its kind; the
 * writer merges them into the message's one row whatever order they come in
 * and however often (see sql/001_init.sql). */
enum db_log_kind {
  DB_LOG_ACCEPTED = 1,             /* accepted from its origin and routed: state QUEUED */
  DB_LOG_SENT = 2,                 /* an SMSC accepted it (smsc_id): state ENROUTE */
  DB_LOG_RECEIPT = 3,              /* a receipt came back: its state */
  DB_LOG_FAILED = 4                /* the gateway ended it: REJECTED, EXPIRED, DELETED, ... */
};

/* One event, as the caller fills it (strings are copied by db_log_event;
 * NULL or "" means unknown; each is cut at 255 bytes). */
struct db_log_event {
  enum db_log_kind kind;
  uint64_t msg_id;
  int64_t time_ms;                 /* when it happened, Unix ms; 0 = now */
  /* ACCEPTED */
  const char *origin_connector;
  const char *origin_user;
  const char *origin_ref;          /* the id the client was given */
  struct msg_addr src, dst;
  uint8_t dlr_mask;
  uint16_t segment_ref;            /* a part of a concatenated message: reference, */
  uint8_t segment_seq;             /* its number (1..) and the number of parts; */
  uint8_t segment_count;           /* all 0 for a message of one part */
  /* ACCEPTED (the route's choice) and SENT (where it went) */
  const char *target_connector;
  /* SENT */
  const char *smsc_id;             /* normalised (dlr_id_normalize), as the DLR table keys it */
  uint16_t attempt;                /* 1 = first submit, 2 = first retry...; 0 counts as 1 */
  /* RECEIPT and FAILED */
  uint8_t state;                   /* enum msg_state */
  uint16_t error;                  /* network or SMSC error code */
  int64_t done_time;               /* RECEIPT: the receipt's done date, Unix s; 0 = none */
};

/* Fills ev (zeroing it first) with kind and what m says: id, time (the
 * received time for ACCEPTED, now otherwise), origin account and ref,
 * addresses and dlr_mask. The strings point into m: log the event before m
 * goes. The caller adds connector names and the kind's own fields. */
void db_log_event_from_msg(struct db_log_event *ev, enum db_log_kind kind, const struct msg *m);

struct db_log_limits {
  unsigned writers;                /* writer threads, each with its own connection, memory and
                                      spill file; a message's events always go to the same one;
                                      0 = 2, at most 16 */
  size_t memory_bytes;             /* events held in memory, all writers together, before they go
                                      to the spill files; 0 = 4 MiB (about 25,000 events); at
                                      least 64 KiB per writer */
  unsigned batch_events;           /* most events in one transaction (per writer); 0 = 20000 */
  unsigned flush_ms;               /* longest an event waits in memory before a write; 0 = 100 */
  unsigned timeout_ms;             /* connect and statement time-out; 0 = 10000 */
  unsigned retry_min_ms;           /* reconnect back-off, doubling up to retry_max_ms; 0 = 250 */
  unsigned retry_max_ms;           /* 0 = 5000 */
  /* Called from a writer thread when the log as a whole comes up (every
   * writer connected; error NULL) or goes down (a writer lost its
   * connection; error says why), e.g. to log it. Quick, and no db_log_*
   * calls from it. May be NULL. */
  void (*on_change)(void *ctx, bool connected, const char *error);
  void *ctx;
};

struct db_log_stats {
  uint64_t events_logged;          /* taken by db_log_event (and found in the spill file at open) */
  uint64_t events_written;         /* committed to the database */
  uint64_t events_pending;         /* not yet written: in memory, in the spill file, in the batch */
  uint64_t events_spilled;         /* went through the spill file */
  uint64_t events_lost;            /* refused by db_log_event: memory full and the spill file failing */
  uint64_t events_dropped;         /* refused by the database as bad data (never retried) */
  uint64_t batches;                /* transactions committed */
  uint64_t spill_bytes;            /* the spill files' size now */
  uint64_t spill_corrupt_bytes;    /* skipped in the spill files (damaged records) */
  size_t memory_bytes;             /* held in the event buffers now */
  double lag_s;                    /* age of the oldest event not yet written; 0 when none */
  bool connected;                  /* every writer has its connection */
  char last_error[DB_ERR_LEN];     /* the last connection, statement or spill error; "" when none */
};

struct db_log;

/* Starts the message log: writer i spills to spill_dir/dblog-i.spill
 * (created if missing; events a previous run left there are written first,
 * and the files of a previous run with more writers are taken over). The
 * writers connect by themselves and keep retrying: a database that is away
 * at start is not an error. limits may be NULL (all defaults). Returns NULL
 * with the reason in err when conninfo cannot be parsed, a spill file cannot
 * be opened (or another process has it), or a thread cannot start. */
struct db_log *db_log_open(const char *conninfo, const char *spill_dir,
                           const struct db_log_limits *limits, char *err, size_t err_len);

/* Writes what it can within timeout_ms (0 = 5000; a statement under way is
 * cut off then), puts the rest into the spill files (made durable), stops
 * the writers and frees everything. No db_log_event may run meanwhile. */
void db_log_close(struct db_log *log, unsigned timeout_ms);

/* Logs one event; any thread. Never waits for the database: the event goes
 * into memory, and when memory is full the memory buffer is written to the
 * spill file by this call (a write to the page cache, no fsync). Returns 0,
 * DB_E_ARG for a kind or state out of range, or DB_E_IO when the event is
 * lost because the spill file cannot be written (counted). */
int db_log_event(struct db_log *log, const struct db_log_event *ev);

/* Waits until as many events as had been logged when it was called are
 * written (or dropped), asking the writer not to wait for a full batch.
 * For a graceful stop and for tests. Returns 0, or DB_E_TIMEOUT. */
int db_log_sync(struct db_log *log, unsigned timeout_ms);

/* A snapshot for /api/status; any thread, never blocks on the database. */
void db_log_stats(struct db_log *log, struct db_log_stats *out);

/* ---- synchronous calls on one connection ---- */

struct db;

/* Checks conninfo and sets up a handle; connects on first use (so a
 * database that is away now is not an error here). timeout_ms bounds each
 * connect and each statement (0 = 5000). NULL with the reason in err when
 * conninfo cannot be parsed or memory is short. */
struct db *db_open(const char *conninfo, unsigned timeout_ms, char *err, size_t err_len);
void db_close(struct db *db);

/* Ids. Takes count consecutive sequence numbers (the low 48 bits of ids,
 * see ids.h) from the shared sequence, the first not below at_least (pass
 * the node's own high-water mark + 1, so that ids it handed out while the
 * database was away are never given again). No two calls, on any node,
 * ever get overlapping blocks. Sets *first; returns 0 or DB_E_*. */
int db_id_block(struct db *db, uint64_t count, uint64_t at_least, uint64_t *first, char *err, size_t err_len);

/* Nodes. register: at start (sets started_at); heartbeat: every few
 * seconds (sets last_seen; registers a node it does not know). */
int db_node_register(struct db *db, unsigned node_id, const char *name, char *err, size_t err_len);
int db_node_heartbeat(struct db *db, unsigned node_id, const char *name, char *err, size_t err_len);

struct db_node {
  unsigned node_id;
  char name[DB_NAME_LEN];
  int64_t started_ms;              /* Unix ms */
  double seen_ago_s;               /* since its last heartbeat, by the database's clock */
};

/* Up to max nodes into out, by node_id; returns how many, or DB_E_*. */
int db_node_list(struct db *db, struct db_node *out, unsigned max, char *err, size_t err_len);

/* One message log row. Times are Unix ms, 0 when unknown. */
struct db_message {
  uint64_t id;
  unsigned node_id;
  int64_t received_ms;
  char origin_connector[DB_NAME_LEN];
  char origin_user[MSG_USER_LEN];
  char origin_ref[MSG_ID_LEN];
  struct msg_addr src, dst;
  uint8_t dlr_mask;
  uint16_t segment_ref;
  uint8_t segment_seq, segment_count;
  unsigned attempts;
  char target_connector[DB_NAME_LEN];
  char smsc_id[DLR_ID_LEN];
  int64_t sent_ms;
  uint8_t state;                   /* 0 = QUEUED, else enum msg_state */
  int64_t state_ms;
  int error_code;
  int64_t final_ms;
  bool has_receipt;
  uint8_t receipt_state;
  int64_t receipt_ms;
  int64_t done_ms;
};

/* History: the row of message id. Returns 1 (filled *out), 0 when the log
 * has no such message, or DB_E_*. */
int db_message_get(struct db *db, uint64_t id, struct db_message *out, char *err, size_t err_len);

/* Search: the newest messages (up to max into out) sent to a recipient
 * (value, as msg_addr_set keeps addresses: a number without its '+';
 * target_connector unused), or sent on target_connector and known to its
 * SMSC as value (normalised, see dlr_id_normalize). Returns how many, or
 * DB_E_*. */
enum db_message_key { DB_MESSAGE_BY_RECIPIENT, DB_MESSAGE_BY_SMSC_ID };
int db_message_search(struct db *db, enum db_message_key key, const char *value, const char *target_connector,
                      struct db_message *out, size_t max, char *err, size_t err_len);

/* Cross-node receipts: the message that connector `target_connector` sent
 * and the SMSC knows as smsc_id (normalised), for a receipt the local DLR
 * table does not know. out->node_id says which node accepted it; the origin
 * connector, account, ref, addresses and dlr_mask say where the receipt
 * goes. The newest such message wins. Returns 1, 0 when none (the row may
 * not be written yet: the log lags by up to a batch; retry for a few
 * seconds, as for a receipt that beats its submit response), or DB_E_*. */
int db_receipt_lookup(struct db *db, const char *target_connector, const char *smsc_id,
                      struct db_message *out, char *err, size_t err_len);

/* A receipt handed from the node that resolved it to the node whose client
 * the message came from. */
struct db_handoff {
  uint64_t msg_id;
  unsigned from_node;              /* set by db_receipt_claim */
  char origin_connector[DB_NAME_LEN];
  char origin_user[MSG_USER_LEN];
  char target_connector[DB_NAME_LEN]; /* where it was sent, and the SMSC's id: the origin */
  char smsc_id[DLR_ID_LEN];        /* node's DLR table entry, to close it */
  struct msg_receipt receipt;      /* as it goes to the client: id = the origin's ref */
  uint8_t dlr_mask;                /* the receipts the client asked for (MSG_DLR_*) */
};

/* Queues h for node to_node. Returns 0 or DB_E_*. */
int db_receipt_handoff(struct db *db, unsigned from_node, unsigned to_node,
                       const struct db_handoff *h, char *err, size_t err_len);

/* Takes up to max receipts handed to node_id, oldest first: calls take(ctx,
 * h) for each inside one transaction and deletes those it accepted (take
 * returned 0) when it commits. take returning non-zero stops the claim: that
 * receipt and the rest stay for a later call. Before the delete, settle(ctx)
 * (when given, and take accepted any) makes what take did durable; non-zero
 * rolls the claim back (DB_E_IO). take and settle must not call db_*
 * functions on this db. Receipts locked by a concurrent claim are skipped.
 * Polled: call every 200 ms or so from the housekeeping thread. Returns the
 * number taken, or DB_E_*; if the commit fails after take accepted some,
 * they come again (at least once, never lost). */
int db_receipt_claim(struct db *db, unsigned node_id, unsigned max,
                     int (*take)(void *ctx, const struct db_handoff *h), int (*settle)(void *ctx),
                     void *ctx, char *err, size_t err_len);

/* ---- accounts shared by the nodes (db_accounts.c) ---- */

/* An account's row as every node sees it each second. */
struct db_account_row {
  char name[MSG_USER_LEN];
  int64_t version;                 /* new on every change of its settings */
  bool limited;                    /* has a credit limit */
  int64_t credit;                  /* parts left over all nodes (below 0 by at most the overdraft) */
  uint32_t pushed_epoch;           /* the last credit epoch this node pushed; 0 = none */
};

/* Parts one account took on this node since the last push, and the credit
 * epoch they are tagged with up to. */
struct db_credit_push {
  const char *name;
  int64_t parts;                   /* may be below 0: more given back than taken */
  uint32_t epoch;
};

/* In one transaction: each push's parts off its account's credit, and its
 * epoch recorded as node_id's; then into *rows (the caller frees it) every
 * account by name when list, or else the pushed accounts with their credit
 * after the push (version 0). The number of rows, or DB_E_*. */
int db_accounts_sync(struct db *db, unsigned node_id, const struct db_credit_push *push, size_t n_push, bool list,
                     struct db_account_row **rows, char *err, size_t err_len);

/* The settings of account name (JSON text into *settings, the caller
 * frees it) and their version: 1, 0 when there is no such account, or
 * DB_E_*. */
int db_account_settings(struct db *db, const char *name, char **settings, int64_t *version, char *err,
                        size_t err_len);

#define DB_CREDIT_KEEP INT64_MIN             /* db_account_put: the credit stays as it is */
#define DB_CREDIT_UNLIMITED (INT64_MIN + 1)  /* no limit */

/* Adds account name (create; 0 when the name is taken) or replaces its
 * settings (0 when there is no such account), with a new version into
 * *version; credit is set to credit unless DB_CREDIT_KEEP. 1 when done,
 * 0 refused, or DB_E_*. */
int db_account_put(struct db *db, const char *name, const char *settings, bool create, int64_t credit,
                   int64_t *version, char *err, size_t err_len);

/* Deletes account name: 1, 0 when there is none, or DB_E_*. */
int db_account_delete(struct db *db, const char *name, char *err, size_t err_len);

/* Adds value to account name's credit (a negative value stops at 0, or at
 * what is left when that is below 0 already), or sets it; *left gets the
 * credit after. 1, 0 when there is no such account, or DB_E_*. */
int db_account_credit(struct db *db, const char *name, bool add, int64_t value, int64_t *left, char *err,
                      size_t err_len);

#endif
