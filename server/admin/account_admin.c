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
 * two. Changes come one at a time (change_lock): from the API's thread,
 * from a reload, and from the database's.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "account_admin.h"
#include "account_db.h"
#include "account_store.h"
#include "endpoint.h"
#include "log.h"
#include "logins.h"
#include "strutil.h"

static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- what the API shows ---- */

static json_t *text_or_null(const char *s)
{
  return s && *s ? json_string(s) : json_null();
}

static json_t *strings(const char *items, size_t item_size, unsigned n)
{
  json_t *list = json_array();
  for (unsigned i = 0; list && i < n; i++)
    json_array_append_new(list, json_string(items + i * item_size));
  return list;
}

json_t *account_admin_json(const struct account_view *v)
{
  const struct config_account *ac = &v->cfg;
  bool limited = ac->credit != CONFIG_CREDIT_UNLIMITED;
  const char *state = !ac->enabled ? "disabled"
                      : ac->expires_at && (int64_t)time(NULL) >= ac->expires_at ? "expired" : "enabled";
  return json_pack(
    "{s:s, s:s, s:s, s:b, s:o, s:o, s:o, s:I, s:I, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:b, s:I, "
    "s:{s:I, s:I, s:I}, s:{s:I, s:I}}",
    "name", ac->name, "state", state, "defined_in",
    v->shared ? "database" : ac->managed ? "accounts_file" : "config", "enabled", ac->enabled,
    "expires", text_or_null(ac->expires), "connectors",
    strings(ac->connectors[0], sizeof ac->connectors[0], ac->n_connectors), "allow_ip",
    strings(ac->allow_ip[0], sizeof ac->allow_ip[0], ac->n_allow_ip), "binds", (json_int_t)v->binds,
    "max_binds", (json_int_t)ac->max_binds, "max_rate", ac->max_rate, "rate_now", v->rate_now, "credit",
    limited ? json_integer((json_int_t)ac->credit) : json_null(), "credit_left",
    limited ? json_integer((json_int_t)v->credit_left) : json_null(), "senders",
    strings(ac->senders[0], sizeof ac->senders[0], ac->n_senders), "default_sender",
    text_or_null(ac->default_sender), "tls_subject", text_or_null(ac->tls_subject), "password",
    ac->password[0] || ac->password_hash[0], "submitted", (json_int_t)v->submitted, "refused", "rate",
    (json_int_t)v->refused_rate, "sender", (json_int_t)v->refused_sender, "credit",
    (json_int_t)v->refused_credit, "receipts", "delivered", (json_int_t)v->delivered, "undelivered",
    (json_int_t)v->undelivered);
}

json_t *account_admin_list(struct core *c)
{
  json_t *list = json_array();
  unsigned used = accounts_used(c->accounts);
  for (unsigned s = 0; list && s < used; s++) {
    struct account_view v;
    if (accounts_view(c->accounts, s, &v))
      json_array_append_new(list, account_admin_json(&v));
  }
  return json_pack("{s:o}", "accounts", list);
}

/* ---- a request's account ---- */

struct problem {
  char key[64];
  char why[256];
};

static void first_problem(void *ctx, const char *key, const char *why)
{
  struct problem *p = ctx;
  if (p->key[0])
    return;
  snprintf(p->key, sizeof p->key, "%s", key);
  snprintf(p->why, sizeof p->why, "%s", why);
}

static bool fail(struct problem *p, const char *key, const char *why)
{
  first_problem(p, key, why);
  return false;
}

static bool take_string(json_t *v, char *out, size_t cap, bool may_be_empty, struct problem *p, const char *key)
{
  if (json_is_null(v) && may_be_empty) {
    out[0] = 0;
    return true;
  }
  if (!json_is_string(v))
    return fail(p, key, "must be a string");
  size_t len = json_string_length(v);
  if (len >= cap || strlen(json_string_value(v)) != len) {
    char why[64];
    snprintf(why, sizeof why, "must be at most %zu characters, without NUL", cap - 1);
    return fail(p, key, why);
  }
  if (!len && !may_be_empty)
    return fail(p, key, "must not be empty");
  memcpy(out, json_string_value(v), len + 1);
  return true;
}

static bool take_strings(json_t *v, char *items, size_t item_size, unsigned *n, struct problem *p,
                         const char *key)
{
  if (!json_is_array(v) || json_array_size(v) > CONFIG_ACCOUNT_LIST_MAX) {
    char why[64];
    snprintf(why, sizeof why, "must be a list of at most %d strings", CONFIG_ACCOUNT_LIST_MAX);
    return fail(p, key, why);
  }
  *n = 0;
  for (size_t i = 0; i < json_array_size(v); i++) {
    if (!take_string(json_array_get(v, i), items + i * item_size, item_size, false, p, key))
      return false;
    (*n)++;
  }
  return true;
}

static bool take_number(json_t *v, double min, double max, double *out, struct problem *p, const char *key)
{
  if (!json_is_number(v) || json_number_value(v) < min || json_number_value(v) > max ||
      isnan(json_number_value(v))) {
    char why[96];
    snprintf(why, sizeof why, "must be a number from %.0f to %.0f", min, max);
    return fail(p, key, why);
  }
  *out = json_number_value(v);
  return true;
}

/* The fields of body applied to a; its password, when given, hashed. */
static bool apply_fields(struct config_account *a, json_t *body, bool creating, struct problem *p)
{
  const char *key;
  json_t *v;
  double num;
  json_object_foreach(body, key, v) {
    bool ok = true;
    if (strcmp(key, "name") == 0) {
      if (!creating)
        return fail(p, key, "an account is renamed by adding the new one and deleting the old");
      ok = take_string(v, a->name, sizeof a->name, false, p, key);
    } else if (strcmp(key, "password") == 0) {
      char given[MSG_USER_LEN];
      if ((ok = take_string(v, given, sizeof given, false, p, key))) {
        if (password_hash_new(given, a->password_hash, sizeof a->password_hash) != 0)
          return fail(p, key, "cannot be hashed (no entropy, or out of memory)");
        a->password[0] = 0;
      }
      memset(given, 0, sizeof given);
    } else if (strcmp(key, "password_hash") == 0) {
      if ((ok = take_string(v, a->password_hash, sizeof a->password_hash, false, p, key)))
        a->password[0] = 0;
    } else if (strcmp(key, "connectors") == 0) {
      ok = take_strings(v, a->connectors[0], sizeof a->connectors[0], &a->n_connectors, p, key);
    } else if (strcmp(key, "allow_ip") == 0) {
      ok = take_strings(v, a->allow_ip[0], sizeof a->allow_ip[0], &a->n_allow_ip, p, key);
    } else if (strcmp(key, "senders") == 0) {
      ok = take_strings(v, a->senders[0], sizeof a->senders[0], &a->n_senders, p, key);
    } else if (strcmp(key, "default_sender") == 0) {
      ok = take_string(v, a->default_sender, sizeof a->default_sender, true, p, key);
    } else if (strcmp(key, "tls_subject") == 0) {
      ok = take_string(v, a->tls_subject, sizeof a->tls_subject, true, p, key);
    } else if (strcmp(key, "expires") == 0) {
      ok = take_string(v, a->expires, sizeof a->expires, true, p, key);
      a->expires_at = 0;
    } else if (strcmp(key, "max_binds") == 0) {
      if ((ok = take_number(v, 0, 100000, &num, p, key)))
        a->max_binds = (unsigned)num;
    } else if (strcmp(key, "max_rate") == 0) {
      ok = take_number(v, 0, 1000000, &a->max_rate, p, key);
    } else if (strcmp(key, "credit") == 0) {
      if (json_is_null(v))
        a->credit = CONFIG_CREDIT_UNLIMITED;
      else if ((ok = take_number(v, 0, 1e15, &num, p, key)))
        a->credit = (size_t)num;
    } else if (strcmp(key, "enabled") == 0) {
      if (!json_is_boolean(v))
        return fail(p, key, "must be true or false");
      a->enabled = json_is_true(v);
    } else {
      return fail(p, key, "no such field");
    }
    if (!ok)
      return false;
  }
  if (!a->name[0])
    return fail(p, "name", "is required");
  config_account_check(a, first_problem, p);
  return !p->key[0];
}

bool account_admin_parse(json_t *body, struct config_account *a, char *why, size_t why_len)
{
  struct problem p = { 0 };
  *a = (struct config_account){ .credit = CONFIG_CREDIT_UNLIMITED, .enabled = true, .managed = true };
  if (apply_fields(a, body, true, &p))
    return true;
  snprintf(why, why_len, "%s: %s", p.key, p.why);
  return false;
}

json_t *account_admin_settings(const struct config_account *a)
{
  /* A certificate may stand for the password: then there is no hash. */
  json_t *settings = json_pack("{s:s, s:o, s:o, s:I, s:f, s:o, s:o, s:b, s:o, s:o}", "name", a->name,
                   "connectors", strings(a->connectors[0], sizeof a->connectors[0], a->n_connectors),
                   "allow_ip", strings(a->allow_ip[0], sizeof a->allow_ip[0], a->n_allow_ip), "max_binds",
                   (json_int_t)a->max_binds, "max_rate", a->max_rate, "senders",
                   strings(a->senders[0], sizeof a->senders[0], a->n_senders), "default_sender",
                   text_or_null(a->default_sender), "enabled", a->enabled, "expires", text_or_null(a->expires),
                   "tls_subject", text_or_null(a->tls_subject));
  if (settings && a->password_hash[0])
    json_object_set_new(settings, "password_hash", json_string(a->password_hash));
  return settings;
}

/* ---- changes ---- */

void account_admin_lock(void)
{
  pthread_mutex_lock(&change_lock);
}

void account_admin_unlock(void)
{
  pthread_mutex_unlock(&change_lock);
}

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

/* What waits in slot's queues on every connector (a removed account's,
 * or what it left to a slot now given to a new one) is dropped, each
 * message with a receipt to its origin. */
void account_admin_drop_slot(struct core *c, int slot, const char *why)
{
  for (unsigned i = 0; i < c->n_connectors; i++)
    connector_drop_account_queue(core_connector(c, i), slot, why);
}

/* After a change: every connector unbinds the sessions it shuts out. */
void account_admin_unbind_shut_out(struct core *c)
{
  for (unsigned i = 0; i < c->n_connectors; i++)
    connector_accounts_changed(core_connector(c, i));
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
    account_admin_drop_slot(c, slot, "dropped: its account was removed");
  account_admin_unbind_shut_out(c);
  LOGI(c->log, "account %s %s", next->name, before ? "changed" : "added");
  struct account_view v;
  accounts_view(c->accounts, (unsigned)slot, &v);
  *answer = account_admin_json(&v);
  return ok_status;
}

static unsigned create(struct core *c, json_t *body, json_t **answer)
{
  unsigned status;
  if (!changeable(c, NULL, answer, &status))
    return status;
  struct config_account a = { .credit = CONFIG_CREDIT_UNLIMITED, .enabled = true, .managed = true };
  struct problem p = { 0 };
  if (!apply_fields(&a, body, true, &p))
    return answer_error(answer, 400, "%s: %s", p.key, p.why);
  if (accounts_find(c->accounts, a.name) >= 0)
    return answer_error(answer, 409, "account %s exists: change it with PATCH", a.name);
  return put_account(c, &a, NULL, true, 201, answer);
}

static unsigned patch(struct core *c, const struct account_view *v, json_t *body, json_t **answer)
{
  struct config_account a = v->cfg;
  struct problem p = { 0 };
  if (!apply_fields(&a, body, false, &p))
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
  account_admin_drop_slot(c, slot, "dropped: its account was deleted");
  account_admin_unbind_shut_out(c);
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
  pthread_mutex_lock(&change_lock);
  if (store(c, err, sizeof err) == 0)
    written = moves;
  else
    LOGW(c->log, "credit not saved: %s", err);
  pthread_mutex_unlock(&change_lock);
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
  pthread_mutex_lock(&change_lock);
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
    *answer = account_admin_json(&v);
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
  pthread_mutex_unlock(&change_lock);
  json_decref(json);
  return status;
}

void account_admin_reload(struct core *c, const struct config *next, struct reload_report *report)
{
  pthread_mutex_lock(&change_lock);
  unsigned added = 0, changed_n = 0, removed = 0, refused = 0;
  /* Gone from both files: removed. */
  unsigned used = accounts_used(c->accounts);
  for (unsigned s = 0; s < used; s++) {
    struct account_view v;
    if (accounts_view(c->accounts, s, &v) && !v.shared && config_account_index(next, v.cfg.name) < 0) {
      accounts_remove(c->accounts, v.cfg.name);
      account_admin_drop_slot(c, (int)s, "dropped: its account was removed");
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
  account_admin_unbind_shut_out(c);
  if (added || changed_n || removed)
    LOGI(c->log, "reload: accounts: %u added, %u changed, %u removed", added, changed_n, removed);
  reload_applied(report, "accounts: %u (%u added, %u changed, %u removed)", next->n_accounts - refused, added,
                 changed_n, removed);
  pthread_mutex_unlock(&change_lock);
}
