/* cluster.h - what emgd does with a shared database besides the message
 * log: id ranges from the shared sequence, this node's heartbeat, and
 * receipts between nodes.
 *
 * A receipt that no DLR entry of this node matches (the message went out
 * through another node sharing the SMSC account, or its entry is gone) is
 * looked up in the message log. When the message's origin account has a
 * session bound here, or the message was this node's own, the receipt goes
 * to it here; otherwise it is handed to the node that accepted the message,
 * which claims the receipts handed to it every CLUSTER_POLL_MS, closes its
 * DLR entry and delivers them.
 *
 * The same thread pushes the credit accounts took here and takes the
 * accounts' changes made through other nodes: through the sync function
 * its starter gives (admin/account_db.c), since accounts changed while
 * emgd runs belong to a room above this one.
 *
 * One thread of its own does all of it, on its own connection, so that a
 * slow or absent database never holds up a connector.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CLUSTER_H
#define EMG_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "msg.h"

#define CLUSTER_POLL_MS 200

struct core;
struct cluster;
struct db;

/* Pushes the credit taken here to the database and, with list, takes the
 * accounts' changes made through other nodes; 0, or -1 with the reason in
 * err. Called on the cluster's thread with its connection. */
typedef int (*cluster_accounts_sync_fn)(struct core *core, struct db *db, bool list, char *err, size_t err_len);

struct cluster_stats {
  uint64_t receipts_waiting;         /* being resolved now (looked up, or waiting for a retry) */
  uint64_t receipts_resolved;        /* unknown here, found in the log */
  uint64_t receipts_handed_over;     /* to the node that accepted the message */
  uint64_t receipts_claimed;         /* handed to this node by others */
  uint64_t receipts_unresolved;      /* not in the log either, after the retries */
  uint64_t id_ranges;                /* ranges taken from the shared sequence */
  uint64_t ids_unbacked;             /* id windows taken past the ranges (database away) */
  bool connected;
  char last_error[256];
};

/* Connects (bounded by timeout_ms), registers the node, takes the first id
 * range (ids continue from first_seq, the journal's high-water mark, or
 * above), and starts the thread, which calls accounts_sync each second.
 * Without the database at start the node runs on its own ids and keeps
 * trying. NULL with a reason in err only when conninfo is unusable or the
 * thread cannot start. */
struct cluster *cluster_start(struct core *core, uint64_t first_seq, unsigned timeout_ms,
                              cluster_accounts_sync_fn accounts_sync, char *err, size_t err_len);
void cluster_stop(struct cluster *c);

/* A receipt from an SMSC on connector `connector` that this node cannot
 * match: key is its normalised id. Copied; resolved by the thread. Any
 * thread. journal_id: its UNRESOLVED record in the journal, which the
 * thread ends (RECEIPT_DONE) once the receipt is passed on, handed over or
 * given up; 0 without. false when too many wait already (counted as
 * unresolved): the caller ends the record. */
bool cluster_resolve_receipt(struct cluster *c, uint16_t connector, const char *key,
                             const struct msg_receipt *r, uint64_t journal_id);

void cluster_stats(struct cluster *c, struct cluster_stats *out);

/* Looks message id up in the message log (the history of a message no
 * longer held in memory): 1 and *out filled, 0 when not there, -1 when the
 * database cannot answer now (err says why). Blocks up to the time-out;
 * for the admin thread. */
struct db_message;
int cluster_message(struct cluster *c, uint64_t id, struct db_message *out, char *err, size_t err_len);

/* The connection the admin API's calls share (cluster_message's, and
 * the accounts' changes): calls on it wait for each other. */
struct db *cluster_admin_db(struct cluster *c);

#endif
