/* account_json.c - an account in JSON, both ways: as /api/accounts shows
 * it, the fields of a request (or of the database's settings) applied to
 * one, and the settings the database keeps. Apart from account_admin.c
 * because account_db.c reads and writes the same settings.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "account_json.h"
#include "logins.h"

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

json_t *account_json_view(const struct account_view *v)
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

/* ---- an account from JSON ---- */

static void first_problem(void *ctx, const char *key, const char *why)
{
  struct account_json_problem *p = ctx;
  if (p->key[0])
    return;
  snprintf(p->key, sizeof p->key, "%s", key);
  snprintf(p->why, sizeof p->why, "%s", why);
}

static bool fail(struct account_json_problem *p, const char *key, const char *why)
{
  first_problem(p, key, why);
  return false;
}

static bool take_string(json_t *v, char *out, size_t cap, bool may_be_empty, struct account_json_problem *p,
                        const char *key)
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

static bool take_strings(json_t *v, char *items, size_t item_size, unsigned *n,
                         struct account_json_problem *p, const char *key)
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

static bool take_number(json_t *v, double min, double max, double *out, struct account_json_problem *p,
                        const char *key)
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

bool account_json_apply(struct config_account *a, json_t *body, bool creating, struct account_json_problem *p)
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

bool account_json_parse(json_t *body, struct config_account *a, char *why, size_t why_len)
{
  struct account_json_problem p = { 0 };
  *a = (struct config_account){ .credit = CONFIG_CREDIT_UNLIMITED, .enabled = true, .managed = true };
  if (account_json_apply(a, body, true, &p))
    return true;
  snprintf(why, why_len, "%s: %s", p.key, p.why);
  return false;
}

/* ---- the settings the database keeps ---- */

json_t *account_json_settings(const struct config_account *a)
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
