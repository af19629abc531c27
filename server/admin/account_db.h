/* account_db.h - with a database section, the accounts changed while emgd
 * runs are kept in PostgreSQL and shared by every node (account_db.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ACCOUNT_DB_H
#define EMG_ACCOUNT_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "core.h"
#include "db.h"

/* At start, before the journal is read (its credit records name these
 * accounts): the database's accounts put in place. 0, or -1 when the
 * database cannot answer now (logged; the cluster thread takes them once
 * it can). */
int account_db_load(struct core *c);

/* The cluster thread, every CLUSTER_POLL_MS: the credit each account took
 * here since the last push goes to the database; with list (each second)
 * every change of any node is put in place here too. 0, or -1 with the
 * reason in err. */
int account_db_sync(struct core *c, struct db *db, bool list, char *err, size_t err_len);

/* The admin API's changes, written to the database (the caller holds
 * account_change_lock). credit: DB_CREDIT_KEEP, DB_CREDIT_UNLIMITED or the
 * parts to set. 0, or -1 with the reason in err. */
int account_db_put(struct core *c, const struct config_account *a, bool create, int64_t credit, int64_t *version,
                   char *err, size_t err_len);
int account_db_delete(struct core *c, const char *name, char *err, size_t err_len);
/* Credit added or set over all nodes; *left is the figure after, which
 * slot's account here takes at once. */
int account_db_credit(struct core *c, int slot, const char *name, bool add, int64_t value, int64_t *left, char *err,
                      size_t err_len);

#endif
