/* account_admin.c - accounts changed while emgd runs: the admin API's
 * /api/accounts, and a reload's accounts put in place.
 *
 * A change is applied to the running accounts (new binds and submits see
 * it at once), written to general.accounts_file, and then each server
 * connector unbinds the sessions the change shuts out. Only accounts of
 * the accounts file change this way: one written in emgd.conf is changed
 * there, and reloaded, so that no file says one thing while emgd does
 * another. With a database, accounts changed live are kept there instead
 * (account_db.c), and every node takes each change within a second or
 * two. Changes come one at a time (account_change.c): from the API's
 * thread, from a reload, and from the database's. An account's JSON is
 * account_json.c's.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "account.h"
#include "account_admin.h"
#include "account_change.h"
#include "account_db.h"
#include "account_json.h"
#include "account_store.h"
#include "log.h"
#include "logins.h"
#include "strutil.h"

/* ---- what the API shows ---- */

json_t *account_admin_list(struct core *c)
{
  json_t *list = json_array();
  unsigned used = accounts_used(c->accounts);
  for (unsigned s = 0; list && s < used; s++) {
    struct account_view v;
    if (accounts_view(c->accounts, s, &v))
      json_array_append_new(list, account_json_view(&v));
  }
  return json_pack("{s:o}", "accounts", list);
}

/* ---- changes ---- */

/* Writes every account of the accounts file. A cleartext password read
 * from it is hashed first (and the running account takes the hash), so
 * that none is ever written back. Without a journal, credit is written as
 * what is left: it is all a restart has. */
static int store(struct core *c, char *err, size_t err_len)
{
  unsigned used = accounts_used(c->accounts);
  struct config_account *list = calloc(used ? used : 1, sizeof *list);
  size_t n = 0;
  if (!list) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  for (unsigned s = 0; s < used; s++) {
    struct account_view v;
    if (!accounts_view(c->accounts, s, &v) || !v.cfg.managed)
      continue;
    struct config_account *a = &list[n++];
    *a = v.cfg;
    if (a->password[0]) {
      int slot;
      if (password_hash_new(a->password, a->password_hash, sizeof a->password_hash) != 0) {
        snprintf(err, err_len, "cannot hash the password of %s: %s", a->name, strerror(errno));
        free(list);
        return -1;
      }
      a->password[0] = 0;
      accounts_put(c->accounts, a, &slot, err, err_len);
    }
    if (!c->spool && a->credit != CONFIG_CREDIT_UNLIMITED)
      a->credit = (size_t)v.credit_left;
  }
  int rc = account_store_write(c->cfg->accounts_file, list, n, err, err_len);
  memset(list, 0, (used ? used : 1) * sizeof *list);
  free(list);
  return rc;
}

static unsigned answer_error(json_t **answer, unsigned status, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static unsigned answer_error(json_t **answer, unsigned status, const char *fmt, ...)
{
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  *answer = json_pack("{s:s}", "error", text);
  return status;
}

/* Why an account may not be changed here, or NULL. */
static bool changeable(struct core *c, const struct account_view *v, json_t **answer, unsigned *status)
{
  if (!c->cfg->accounts_file[0] && !c->cfg->has_database) {
    *status = answer_error(answer, 409, "no general.accounts_file (nor database) is configured: a change "
                                        "would not survive a restart");
    return false;
  }
  if (v && !v->cfg.managed) {
    *status = answer_error(answer, 409, "account %s is defined in %s (line %d): change it there and reload",
                           v->cfg.name, c->cfg->path, v->cfg.line);
    return false;
  }
  return true;
}

/* The change written where it lasts: the database (credit_given: the
 * request set the credit) or the accounts file. */
static int save(struct core *c, const struct config_account *next, bool create, bool credit_given, char *err,
                size_t err_len)
{
  if (!c->cfg->has_database)
    return store(c, err, err_len);
  int64_t credit = !create && !credit_given ? DB_CREDIT_KEEP
                   : next->credit == CONFIG_CREDIT_UNLIMITED ? DB_CREDIT_UNLIMITED : (int64_t)next->credit;
  int64_t version;
  if (account_db_put(c, next, create, credit, &version, err, err_len) != 0)
    return -1;
  struct config_account versioned = *next;
  versioned.db_version = version;
  int slot;
  accounts_put(c->accounts, &versioned, &slot, err, err_len);
  return 0;
}

static unsigned put_account(struct core *c, const struct config_account *next, const struct config_account *before,
                            bool credit_given, unsigned ok_status, json_t **answer)
{
  char err[512];
  int slot;
  enum account_change r = accounts_put(c->accounts, next, &slot, err, sizeof err);
  if (r != ACCOUNT_CHANGED)
    return answer_error(answer, r == ACCOUNT_E_INVALID ? 400 : r == ACCOUNT_E_FULL ? 507 : 500, "%s", err);
  if (save(c, next, !before, credit_given, err, sizeof err) != 0) {
    /* Not on disk, so not done: the running account goes back too. */
    if (before)
      accounts_put(c->accounts, before, &slot, err, sizeof err);
    else
      accounts_remove(c->accounts, next->name);
    LOGE(c->log, "account %s not changed: %s", next->name, err);
    return answer_error(answer, 500, "not changed: %s", err);
  }
  if (!before)
    account_change_drop_slot(c, slot, "dropped: its account was removed");
  account_change_unbind_shut_out(c);
  LOGI(c->log, "account %s %s", next->name, before ? "changed" : "added");
  struct account_view v;
  accounts_view(c->accounts, (unsigned)slot, &v);
  *answer = account_json_view(&v);
  return ok_status;
}

static unsigned create(struct core *c, json_t *body, json_t **answer)
{
  unsigned status;
  if (!changeable(c, NULL, answer, &status))
    return status;
  struct config_account a = { .credit = CONFIG_CREDIT_UNLIMITED, .enabled = true, .managed = true };
  struct account_json_problem p = { 0 };
  if (!account_json_apply(&a, body, true, &p))
    return answer_error(answer, 400, "%s: %s", p.key, p.why);
  if (accounts_find(c->accounts, a.name) >= 0)
    return answer_error(answer, 409, "account %s exists: change it with PATCH", a.name);
  return put_account(c, &a, NULL, true, 201, answer);
}

static unsigned patch(struct core *c, const struct account_view *v, json_t *body, json_t **answer)
{
  struct config_account a = v->cfg;
  struct account_json_problem p = { 0 };
  if (!account_json_apply(&a, body, false, &p))
    return answer_error(answer, 400, "%s: %s", p.key, p.why);
  return put_account(c, &a, &v->cfg, json_object_get(body, "credit") != NULL, 200, answer);
}

static unsigned delete(struct core *c, const struct account_view *v, json_t **answer)
{
  char err[512];
  int slot = accounts_remove(c->accounts, v->cfg.name);
  if ((c->cfg->has_database ? account_db_delete(c, v->cfg.name, err, sizeof err) : store(c, err, sizeof err)) != 0) {
    accounts_put(c->accounts, &v->cfg, &slot, err, sizeof err);
    return answer_error(answer, 500, "not deleted: %s", err);
  }
  account_change_drop_slot(c, slot, "dropped: its account was deleted");
  account_change_unbind_shut_out(c);
  LOGI(c->log, "account %s deleted", v->cfg.name);
  *answer = json_pack("{s:s, s:b}", "name", v->cfg.name, "deleted", 1);
  return 200;
}

static void journal_emit(void *ctx, const struct spool_record *rec)
{
  core_journal(ctx, rec);
}

/* Persist on: the credit that changed (all of it, unless dirty_only)
 * journaled and, when the operator changed it, made durable before the
 * answer. */
static void journal_credit(struct core *c, bool dirty_only)
{
  if (!c->spool || !accounts_credit_snapshot(c->accounts, dirty_only, journal_emit, c) || dirty_only)
    return;
  if (core_journal_settle(c, 5000) != 0)
    LOGW(c->log, "credit journaled, but not yet durable after 5 s");
}

void account_admin_snapshot(void *ctx, void (*emit)(void *emit_ctx, const struct spool_record *rec),
                            void *emit_ctx)
{
  struct core *c = ctx;
  /* The first call may come at the end of replay, before spool_open
   * returns: what the journal says of credit is worked out first. */
  accounts_credit_replay_done(c->accounts);
  accounts_credit_snapshot(c->accounts, false, emit, emit_ctx);
}

void account_admin_tick(struct core *c)
{
  static unsigned seconds;
  static uint64_t written;
  if (c->spool) {
    journal_credit(c, true);   /* only the accounts whose credit was given back or changed */
    return;
  }
  if (!c->cfg->accounts_file[0] || ++seconds % 10)
    return;
  /* Without a journal the file is all a restart has: rewritten when any
   * account's credit moved. */
  uint64_t moves = accounts_credit_moves(c->accounts);
  if (moves == written)
    return;
  char err[512];
  account_change_lock();
  if (store(c, err, sizeof err) == 0)
    written = moves;
  else
    LOGW(c->log, "credit not saved: %s", err);
  account_change_unlock();
}

/* {"add": N} or {"set": N}. */
static unsigned credit(struct core *c, int slot, const struct account_view *v, json_t *body, json_t **answer)
{
  json_t *add = json_object_get(body, "add"), *set = json_object_get(body, "set");
  if (!add == !set || json_object_size(body) != 1 || !json_is_integer(add ? add : set))
    return answer_error(answer, 400, "give {\"add\": N} or {\"set\": N}, N a whole number");
  json_int_t n = json_integer_value(add ? add : set);
  if (n < (add ? -1000000000000000LL : 0) || n > 1000000000000000LL)
    return answer_error(answer, 400, "credit out of range");
  int64_t left;
  char err[512];
  if (c->cfg->has_database) {
    /* The figure over all nodes, in the database; this node takes it at once. */
    if (account_db_credit(c, slot, v->cfg.name, add != NULL, (int64_t)n, &left, err, sizeof err) != 0)
      return answer_error(answer, 500, "credit not changed: %s", err);
  } else {
    accounts_credit_change(c->accounts, slot, add != NULL, (int64_t)n, &left);
    if (store(c, err, sizeof err) != 0) {
      accounts_credit_change(c->accounts, slot, false, v->credit_left < 0 ? 0 : v->credit_left, &left);
      if (v->cfg.credit == CONFIG_CREDIT_UNLIMITED)
        accounts_credit_unlimit(c->accounts, slot);
      return answer_error(answer, 500, "credit not changed: %s", err);
    }
    journal_credit(c, false);
  }
  LOGI(c->log, "account %s: credit %s %lld, %" PRId64 " left%s", v->cfg.name, add ? "added" : "set",
       (long long)n, left, c->cfg->has_database ? " over all nodes" : "");
  *answer = json_pack("{s:s, s:I}", "name", v->cfg.name, "credit_left", (json_int_t)left);
  return 200;
}

unsigned account_admin_request(struct core *c, const char *method, const char *rest, const char *body,
                               size_t body_len, json_t **answer)
{
  bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0,
       patch_ = strcmp(method, "PATCH") == 0, del = strcmp(method, "DELETE") == 0;
  if (!*rest || strcmp(rest, "/") == 0) {
    if (get) {
      *answer = account_admin_list(c);
      return 200;
    }
    if (!post)
      return answer_error(answer, 405, "GET or POST here");
  }
  json_t *json = NULL;
  if (post || patch_) {
    json_error_t jerr;
    json = json_loadb(body ? body : "", body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(json)) {
      json_decref(json);
      return answer_error(answer, 400, "the body must be a JSON object (%s)", json ? "not an object" : jerr.text);
    }
  }
  unsigned status;
  account_change_lock();
  if (!*rest || strcmp(rest, "/") == 0) {
    status = create(c, json, answer);
    goto out;
  }
  /* /NAME or /NAME/credit */
  char name[MSG_USER_LEN];
  const char *end = strchr(rest + 1, '/');
  size_t len = end ? (size_t)(end - rest - 1) : strlen(rest + 1);
  bool credit_url = end && strcmp(end, "/credit") == 0;
  int slot = -1;
  struct account_view v;
  if (len && len < sizeof name) {
    memcpy(name, rest + 1, len);
    name[len] = 0;
    slot = accounts_find(c->accounts, name);
  }
  if ((end && !credit_url) || slot < 0 || !accounts_view(c->accounts, (unsigned)slot, &v)) {
    status = answer_error(answer, 404, "no such account");
    goto out;
  }
  if (get && !credit_url) {
    *answer = account_json_view(&v);
    status = 200;
  } else if (!(credit_url ? post : patch_ || del)) {
    status = answer_error(answer, 405, credit_url ? "POST here" : "GET, PATCH or DELETE here");
  } else if (!changeable(c, &v, answer, &status)) {
  } else if (credit_url) {
    status = credit(c, slot, &v, json, answer);
  } else {
    status = patch_ ? patch(c, &v, json, answer) : delete(c, &v, answer);
  }
out:
  account_change_unlock();
  json_decref(json);
  return status;
}

void account_admin_reload(struct core *c, const struct config *next, struct reload_report *report)
{
  account_change_lock();
  unsigned added = 0, changed_n = 0, removed = 0, refused = 0;
  /* Gone from both files: removed. */
  unsigned used = accounts_used(c->accounts);
  for (unsigned s = 0; s < used; s++) {
    struct account_view v;
    if (accounts_view(c->accounts, s, &v) && !v.shared && config_account_index(next, v.cfg.name) < 0) {
      accounts_remove(c->accounts, v.cfg.name);
      account_change_drop_slot(c, (int)s, "dropped: its account was removed");
      removed++;
    }
  }
  /* Each account on its own: one that cannot be put in place stays as it
   * was (or absent), named in the report, and the others still go in. */
  for (unsigned i = 0; i < next->n_accounts; i++) {
    const struct config_account *a = &next->accounts[i];
    struct account_view v;
    int slot = accounts_find(c->accounts, a->name);
    bool known = slot >= 0 && accounts_view(c->accounts, (unsigned)slot, &v);
    if (known && memcmp(&v.cfg, a, sizeof *a) == 0)
      continue;
    char err[256], item[RELOAD_ITEM_LEN];
    if (accounts_put(c->accounts, a, &slot, err, sizeof err) != ACCOUNT_CHANGED) {
      snprintf(item, sizeof item, "account %.80s", a->name);
      reload_refused(report, item, "%s", err);
      refused++;
      continue;
    }
    known ? changed_n++ : added++;
  }
  account_change_unbind_shut_out(c);
  if (added || changed_n || removed)
    LOGI(c->log, "reload: accounts: %u added, %u changed, %u removed", added, changed_n, removed);
  reload_applied(report, "accounts: %u (%u added, %u changed, %u removed)", next->n_accounts - refused, added,
                 changed_n, removed);
  account_change_unlock();
}
