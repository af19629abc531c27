/* account_db.c - accounts kept in PostgreSQL, shared by every node.
 *
 * The table accounts holds each account's settings with a version, and
 * its credit over all nodes (sql/003_accounts.sql). A change through any
 * node's admin API is written there and put in place on that node at once;
 * every other node lists the versions each second and reads the settings
 * that changed, so it sees the change within about two seconds.
 *
 * Credit is taken locally, without waiting for the database, and what each
 * account took is pushed every CLUSTER_POLL_MS in one statement for all
 * accounts. Between two pushes a node takes at most database.credit_batch
 * parts of an account (more are answered "throttled", and go once the push
 * is done), and each push brings back what is left over all nodes: so the
 * credit goes below zero by at most nodes x credit_batch parts (each node's
 * last batch, taken against a figure the others had already spent).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "account.h"
#include "account_change.h"
#include "account_db.h"
#include "account_json.h"
#include "cluster.h"
#include "log.h"

/* The last (name, version) whose settings this node refused, so that a bad
 * row (a connector this node does not have) is logged once, not each
 * second. The sync's thread only. */
#define REFUSED_MAX 64
static struct {
  char name[MSG_USER_LEN];
  int64_t version;
} refused[REFUSED_MAX];
static unsigned n_refused;

static bool refused_before(const char *name, int64_t version)
{
  for (unsigned i = 0; i < n_refused; i++)
    if (refused[i].version == version && strcmp(refused[i].name, name) == 0)
      return true;
  unsigned at = n_refused < REFUSED_MAX ? n_refused++ : (unsigned)(version % REFUSED_MAX);
  snprintf(refused[at].name, sizeof refused[at].name, "%s", name);
  refused[at].version = version;
  return false;
}

/* The credit each shared account took since the last push: n entries of
 * push, names in names. The caller frees both. */
static size_t gather_pushes(struct accounts *a, struct db_credit_push **push, char (**names)[MSG_USER_LEN])
{
  unsigned used = accounts_used(a);
  *push = calloc(used ? used : 1, sizeof **push);
  *names = calloc(used ? used : 1, sizeof **names);
  size_t n = 0;
  for (unsigned s = 0; *push && *names && s < used; s++) {
    struct db_credit_push *p = &(*push)[n];
    if (accounts_credit_push(a, s, (*names)[n], &p->parts, &p->epoch)) {
      p->name = (*names)[n];
      n++;
    }
  }
  return n;
}

/* Puts account row in place from its settings in the database: true when
 * it changed here. */
static bool take_row(struct core *c, struct db *db, const struct db_account_row *row)
{
  char *settings = NULL, err[DB_ERR_LEN];
  int64_t version;
  int rc = db_account_settings(db, row->name, &settings, &version, err, sizeof err);
  if (rc != 1) {   /* gone meanwhile, or the database away: the next listing tells */
    free(settings);
    return false;
  }
  json_error_t jerr;
  json_t *body = json_loads(settings, JSON_REJECT_DUPLICATES, &jerr);
  free(settings);
  struct config_account ac;
  char why[512];
  bool ok = json_is_object(body) && account_json_parse(body, &ac, why, sizeof why);
  json_decref(body);
  if (ok && strcmp(ac.name, row->name) != 0) {
    snprintf(why, sizeof why, "its settings name another account (%s)", ac.name);
    ok = false;
  }
  int slot;
  if (ok) {
    ac.db_version = version;
    ac.credit = !row->limited ? CONFIG_CREDIT_UNLIMITED : row->credit < 0 ? 0 : (size_t)row->credit;
    ok = accounts_put(c->accounts, &ac, &slot, why, sizeof why) == ACCOUNT_CHANGED;
  }
  if (!ok) {
    if (!refused_before(row->name, version))
      LOGW(c->log, "account %s from the database (version %" PRId64 ") not taken: %s", row->name, version, why);
    return false;
  }
  return true;
}

/* Every account of the listing in place here; those of the database no
 * longer listed removed. Under account_change_lock. */
static void apply_rows(struct core *c, struct db *db, const struct db_account_row *rows, size_t n, bool starting)
{
  struct accounts *a = c->accounts;
  unsigned added = 0, changed = 0, removed = 0;
  /* The slots a row names, whether or not its settings could be taken. */
  bool *listed = calloc(accounts_capacity(a), sizeof *listed);
  if (!listed) {
    LOGW(c->log, "accounts from the database: out of memory, taken at the next listing");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const struct db_account_row *row = &rows[i];
    int slot = accounts_find(a, row->name);
    struct account_view v;
    bool known = slot >= 0 && accounts_view(a, (unsigned)slot, &v);
    if (known)
      listed[slot] = true;
    if (known && !v.shared) {
      if (starting || !refused_before(row->name, row->version))
        LOGW(c->log, "account %s of the database not taken: emgd.conf defines one of that name (line %d)",
             row->name, v.cfg.line);
      continue;
    }
    if (!known || v.cfg.db_version != row->version) {
      if (!take_row(c, db, row))
        continue;
      slot = accounts_find(a, row->name);
      listed[slot] = true;
      if (!known)
        account_change_drop_slot(c, slot, "dropped: its account was removed");   /* a slot used before */
      known ? changed++ : added++;
    }
    accounts_credit_shared(a, (unsigned)slot, row->limited, row->credit, row->pushed_epoch);
  }
  unsigned used = accounts_used(a);
  for (unsigned s = 0; s < used; s++) {
    struct account_view v;
    if (listed[s] || !accounts_view(a, s, &v) || !v.shared)
      continue;
    accounts_remove(a, v.cfg.name);
    account_change_drop_slot(c, (int)s, "dropped: its account was deleted");
    removed++;
  }
  free(listed);
  if (added || changed || removed) {
    account_change_unbind_shut_out(c);
    LOGI(c->log, "accounts from the database: %u added, %u changed, %u removed", added, changed, removed);
  }
}

int account_db_sync(struct core *c, struct db *db, bool list, char *err, size_t err_len)
{
  struct db_credit_push *push;
  char(*names)[MSG_USER_LEN];
  size_t n_push = gather_pushes(c->accounts, &push, &names);
  if (!push || !names) {
    free(push);
    free(names);
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  if (!n_push && !list) {
    free(push);
    free(names);
    return 0;
  }
  /* Listing and putting in place under the lock, so that a change the
   * API makes meanwhile is not undone by a listing taken before it. */
  if (list)
    account_change_lock();
  struct db_account_row *rows = NULL;
  char dberr[DB_ERR_LEN];
  int n = db_accounts_sync(db, c->cfg->node_id, push, n_push, list, &rows, dberr, sizeof dberr);
  if (n < 0) {
    for (size_t i = 0; i < n_push; i++) {   /* pushed with the next one */
      int slot = accounts_find(c->accounts, push[i].name);
      if (slot >= 0)
        accounts_credit_unpush(c->accounts, (unsigned)slot, push[i].parts);
    }
    snprintf(err, err_len, "%s", dberr);
  } else if (list) {
    apply_rows(c, db, rows, (size_t)n, false);
  } else {
    /* What is left after the push, every node's pushes included. */
    for (int i = 0; i < n; i++) {
      int slot = accounts_find(c->accounts, rows[i].name);
      if (slot >= 0)
        accounts_credit_shared(c->accounts, (unsigned)slot, rows[i].limited, rows[i].credit, rows[i].pushed_epoch);
    }
  }
  if (list)
    account_change_unlock();
  free(rows);
  free(push);
  free(names);
  return n < 0 ? -1 : 0;
}

int account_db_load(struct core *c)
{
  char err[DB_ERR_LEN];
  struct db *db = db_open(c->cfg->db_conninfo, 5000, err, sizeof err);
  struct db_account_row *rows = NULL;
  int n = db ? db_accounts_sync(db, c->cfg->node_id, NULL, 0, true, &rows, err, sizeof err) : -1;
  if (n >= 0) {
    account_change_lock();
    apply_rows(c, db, rows, (size_t)n, true);
    account_change_unlock();
    LOGI(c->log, "accounts: %d from the database", n);
  } else {
    LOGW(c->log, "accounts of the database not loaded at start (%s): they are taken once it answers; "
         "credit the journal holds for them is given back", err);
  }
  free(rows);
  db_close(db);
  return n < 0 ? -1 : 0;
}

static int answer(int rc, const char *what, const char *name, const char *dberr, char *err, size_t err_len)
{
  if (rc == 1)
    return 0;
  if (rc == 0)
    snprintf(err, err_len, "account %s %s in the database (another node changed it meanwhile)", name, what);
  else
    snprintf(err, err_len, "database: %s", dberr);
  return -1;
}

int account_db_put(struct core *c, const struct config_account *a, bool create, int64_t credit, int64_t *version,
                   char *err, size_t err_len)
{
  json_t *settings = account_json_settings(a);
  char *text = settings ? json_dumps(settings, JSON_COMPACT) : NULL;
  json_decref(settings);
  if (!text) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  char dberr[DB_ERR_LEN];
  int rc = db_account_put(cluster_admin_db(c->cluster), a->name, text, create, credit, version, dberr, sizeof dberr);
  free(text);
  return answer(rc, create ? "exists already" : "is not", a->name, dberr, err, err_len);
}

int account_db_delete(struct core *c, const char *name, char *err, size_t err_len)
{
  char dberr[DB_ERR_LEN];
  int rc = db_account_delete(cluster_admin_db(c->cluster), name, dberr, sizeof dberr);
  return answer(rc, "is not", name, dberr, err, err_len);
}

int account_db_credit(struct core *c, int slot, const char *name, bool add, int64_t value, int64_t *left, char *err,
                      size_t err_len)
{
  char dberr[DB_ERR_LEN];
  int rc = db_account_credit(cluster_admin_db(c->cluster), name, add, value, left, dberr, sizeof dberr);
  if (rc == 1)
    accounts_credit_shared(c->accounts, (unsigned)slot, true, *left, 0);
  return answer(rc, "is not", name, dberr, err, err_len);
}
