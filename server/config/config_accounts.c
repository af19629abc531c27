/* config_accounts.c - the accounts of emgd.conf: the top-level
 * `accounts` list and the connectors' `users` lists, its shorthand.
 *
 * Once the file is read, every `users` entry has become an account that
 * may use that connector (an entry of the same name and password in two
 * connectors is one account of both), and every server connector's users
 * are rebuilt as the accounts that may use it, each with its index in
 * config.accounts: the connectors' code keeps indexing its own users.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include "cidr.h"
#include "config_internal.h"
#include "logins.h"

#define TARGET struct config_account
static const struct key account_keys[] = {
  { STRING_KEY("name", name, 1), .required = ALWAYS },
  { STRING_KEY("password", password, 1) },
  { STRING_KEY("password_hash", password_hash, 1) },
  { STRINGS_KEY("connectors", connectors, n_connectors, 1) },
  { STRINGS_KEY("allow_ip", allow_ip, n_allow_ip, 1) },
  { UINT_KEY("max_binds", max_binds, 0, 100000, 0) },
  { DOUBLE_KEY("max_rate", max_rate, 0, 1000000, 0) },
  { SIZE_KEY("credit", credit, 0, INT64_MAX, INT64_MAX) },
  { STRINGS_KEY("senders", senders, n_senders, 1) },
  { STRING_KEY("default_sender", default_sender, 0) },
  { BOOL_KEY("enabled", enabled, true) },
  { STRING_KEY("expires", expires, 0) },
  { STRING_KEY("tls_subject", tls_subject, 1) },
};
#undef TARGET

/* "YYYY-MM-DD" (its start, UTC) or "YYYY-MM-DDTHH:MM:SSZ": seconds since
 * 1970, or -1. */
static int64_t utc_time(const char *text)
{
  struct tm tm = { 0 };
  const char *end = strptime(text, "%Y-%m-%d", &tm);
  if (end && *end == 'T')
    end = strptime(end, "T%H:%M:%SZ", &tm);
  if (!end || *end)
    return -1;
  return (int64_t)timegm(&tm);
}

void config_account_check(struct config_account *a, void (*problem)(void *ctx, const char *key, const char *why),
                          void *ctx)
{
  char why[PASSWORD_ERR_LEN > CIDR_ERR_LEN ? PASSWORD_ERR_LEN : CIDR_ERR_LEN];
  if (a->password[0] && a->password_hash[0])
    problem(ctx, "password", "give either password or password_hash, not both");
  else if (!a->password[0] && !a->password_hash[0] && !a->tls_subject[0])
    problem(ctx, "password", "give password or password_hash (or tls_subject, for a client certificate "
            "to stand for it)");
  if (a->password_hash[0] && !password_hash_valid(a->password_hash, why, sizeof why))
    problem(ctx, "password_hash", why);
  for (unsigned i = 0; i < a->n_allow_ip; i++) {
    struct cidr range;
    if (cidr_parse(a->allow_ip[i], &range, why, sizeof why) < 0)
      problem(ctx, "allow_ip", why);
  }
  if (a->expires[0] && (a->expires_at = utc_time(a->expires)) < 0)
    problem(ctx, "expires", "must be a date, \"YYYY-MM-DD\" or \"YYYY-MM-DDTHH:MM:SSZ\" (UTC)");
}

struct report_ctx {
  struct load *ld;
  const config_setting_t *grp;
  const char *path;
};

static void report_problem(void *ctx, const char *key, const char *why)
{
  struct report_ctx *r = ctx;
  char p[KEY_PATH_LEN];
  join_path(p, r->path, key);
  report(r->ld, r->grp, p, "%s", why);
}

static void check_account(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  struct report_ctx r = { ld, grp, path };
  if (grp)
    config_account_check(base, report_problem, &r);
}

const struct section account_section = {
  SECTION(account_keys), .check = check_account,
  .has_line = true, .line_offset = offsetof(struct config_account, line),
};

static bool accounts_grow(struct load *ld, struct config *c);

/* The accounts file holds a list of accounts and nothing else. */
#define TARGET struct config
static const struct key file_keys[] = {
  { LIST_KEY("accounts", accounts, n_accounts, account_section, 0, 1000000), .unique = "name" },
};
#undef TARGET
static const struct section file_section = { SECTION(file_keys) };

void config_accounts_file(struct load *ld, config_t *lc, struct config *c)
{
  if (!c->accounts_file[0])
    return;
  if (access(c->accounts_file, F_OK) != 0 && errno == ENOENT)
    return;    /* none changed live yet: the first change writes it */
  errno = 0;
  if (config_read_file(lc, c->accounts_file) != CONFIG_TRUE) {
    if (config_error_type(lc) == CONFIG_ERR_FILE_IO)
      report_at(ld, c->accounts_file, 0, "cannot read: %s", strerror(errno ? errno : EIO));
    else
      report_at(ld, c->accounts_file, (unsigned)config_error_line(lc), "%s", config_error_text(lc));
    return;
  }
  struct config file = { 0 };
  read_group(ld, config_root_setting(lc), &file_section, &file, "");
  const config_setting_t *list = config_setting_get_member(config_root_setting(lc), "accounts");
  char path[KEY_PATH_LEN], p[KEY_PATH_LEN];
  for (unsigned i = 0; i < file.n_accounts; i++) {
    struct config_account *a = &file.accounts[i];
    const config_setting_t *grp = list ? config_setting_get_elem(list, i) : config_root_setting(lc);
    elem_path(path, "accounts", i);
    int known = config_account_index(c, a->name);
    if (known >= 0) {
      join_path(p, path, "name");
      report(ld, grp, p, "account '%s' is also in %s (line %d): keep one of the two", a->name, c->path,
             c->accounts[known].line);
      continue;
    }
    for (unsigned k = 0; k < a->n_connectors; k++) {
      const struct config_connector *cc = config_connector(c, a->connectors[k]);
      join_path(p, path, "connectors");
      if (!cc || cc->mode != CONFIG_CONN_SERVER)
        report(ld, grp, p, "no server connector is named '%s'", a->connectors[k]);
    }
    if (!accounts_grow(ld, c))
      break;
    a->managed = true;
    c->accounts[c->n_accounts++] = *a;
  }
  free_lists(&file_section, &file);
}

int config_account_index(const struct config *c, const char *name)
{
  for (unsigned i = 0; i < c->n_accounts; i++)
    if (strcmp(c->accounts[i].name, name) == 0)
      return (int)i;
  return -1;
}

static bool account_names(const struct config_account *a, const char *connector)
{
  for (unsigned i = 0; i < a->n_connectors; i++)
    if (strcmp(a->connectors[i], connector) == 0)
      return true;
  return false;
}

/* Whether a may use server connector c. */
static bool account_uses(const struct config_account *a, const struct config_connector *c)
{
  return !a->n_connectors || account_names(a, c->name);
}

static bool accounts_grow(struct load *ld, struct config *c)
{
  struct config_account *more = realloc(c->accounts, (c->n_accounts + 1) * sizeof *more);
  if (!more) {
    ld->out_of_memory = true;
    return false;
  }
  c->accounts = more;
  memset(&c->accounts[c->n_accounts], 0, sizeof *more);
  return true;
}

/* The users entry u of connector cc (at path) as an account. */
static void account_from_user(struct load *ld, const config_setting_t *where, struct config *c,
                              const struct config_connector *cc, const struct config_user *u, const char *path)
{
  int i = config_account_index(c, u->name);
  if (i >= 0) {
    struct config_account *a = &c->accounts[i];
    if (!a->from_users)
      report(ld, where, path, "account '%s' is also in accounts (line %d): keep one of the two", u->name, a->line);
    else if (account_names(a, cc->name))
      return;   /* twice in one list: its unique check said so */
    else if (strcmp(a->password, u->password) != 0)
      report(ld, where, path, "account '%s' is also a user of another connector, with another password: "
             "one account has one password", u->name);
    else if (a->n_connectors < CONFIG_ACCOUNT_LIST_MAX && !account_names(a, cc->name))
      snprintf(a->connectors[a->n_connectors++], CONFIG_NAME_LEN, "%s", cc->name);
    return;
  }
  if (!accounts_grow(ld, c))
    return;
  struct config_account *a = &c->accounts[c->n_accounts++];
  snprintf(a->name, sizeof a->name, "%s", u->name);
  snprintf(a->password, sizeof a->password, "%s", u->password);
  snprintf(a->connectors[0], CONFIG_NAME_LEN, "%s", cc->name);
  a->n_connectors = 1;
  a->credit = CONFIG_CREDIT_UNLIMITED;
  a->enabled = true;
  a->from_users = true;
  a->line = cc->line;
}

/* A server connector's users: the accounts that may use it. */
static void users_rebuild(struct load *ld, const config_setting_t *where, struct config *c,
                          struct config_connector *cc, const char *path)
{
  unsigned n = 0;
  for (unsigned i = 0; i < c->n_accounts; i++)
    n += account_uses(&c->accounts[i], cc);
  struct config_user *users = calloc(n ? n : 1, sizeof *users);
  if (!users) {
    ld->out_of_memory = true;
    return;
  }
  n = 0;
  for (unsigned i = 0; i < c->n_accounts; i++)
    if (account_uses(&c->accounts[i], cc)) {
      snprintf(users[n].name, sizeof users[n].name, "%s", c->accounts[i].name);
      snprintf(users[n].password, sizeof users[n].password, "%s", c->accounts[i].password);
      users[n++].account = i;
    }
  free(cc->users);
  cc->users = users;
  cc->n_users = n;
  /* Said only of a group that is plainly a server connector without users
   * (an empty list, or a wrong mode, has its own error). */
  const config_setting_t *mode = config_setting_is_group(where) ? config_setting_get_member(where, "mode") : NULL;
  const char *mode_text = mode ? config_setting_get_string(mode) : NULL;
  /* With an accounts file or a database, accounts may come later, live. */
  if (!n && !c->accounts_file[0] && !c->has_database && mode_text && strcmp(mode_text, "server") == 0 &&
      !config_setting_get_member(where, "users"))
    report(ld, where, path, "no account may use this server connector: give it users, or name it in an "
           "account's connectors (an account without connectors may use every server connector), or "
           "give general.accounts_file (or a database section) to add accounts while emgd runs");
}

void config_accounts_merge(struct load *ld, const config_setting_t *root, struct config *c)
{
  const config_setting_t *list = config_setting_get_member(root, "connectors");
  char path[KEY_PATH_LEN], p[KEY_PATH_LEN];
  for (unsigned i = 0; i < c->n_connectors; i++) {
    const struct config_connector *cc = &c->connectors[i];
    const config_setting_t *grp = list ? config_setting_get_elem(list, i) : root;
    elem_path(path, "connectors", i);
    const config_setting_t *users = grp ? config_setting_get_member(grp, "users") : NULL;
    char users_path[KEY_PATH_LEN];
    join_path(users_path, path, "users");
    for (unsigned u = 0; cc->mode == CONFIG_CONN_SERVER && u < cc->n_users; u++) {
      const config_setting_t *where = users ? config_setting_get_elem(users, u) : NULL;
      elem_path(p, users_path, u);
      account_from_user(ld, where ? where : grp ? grp : root, c, cc, &cc->users[u], p);
    }
  }
  /* Every connector an account names is a server connector. */
  const config_setting_t *accounts = config_setting_get_member(root, "accounts");
  for (unsigned i = 0; i < c->n_accounts; i++) {
    const struct config_account *a = &c->accounts[i];
    const config_setting_t *grp = accounts && !a->from_users ? config_setting_get_elem(accounts, i) : NULL;
    for (unsigned k = 0; grp && k < a->n_connectors; k++) {
      const struct config_connector *cc = config_connector(c, a->connectors[k]);
      elem_path(path, "accounts", i);
      join_path(p, path, "connectors");
      if (!cc)
        report(ld, grp, p, "no connector is named '%s'", a->connectors[k]);
      else if (cc->mode != CONFIG_CONN_SERVER)
        report(ld, grp, p, "'%s' is a client connector: accounts bind or submit through server connectors",
               a->connectors[k]);
    }
  }
  for (unsigned i = 0; i < c->n_connectors; i++) {
    const config_setting_t *grp = list ? config_setting_get_elem(list, i) : NULL;
    elem_path(path, "connectors", i);
    if (c->connectors[i].mode == CONFIG_CONN_SERVER)
      users_rebuild(ld, grp ? grp : root, c, &c->connectors[i], path);
  }
  /* A route's account condition names an account, from either list. */
  const config_setting_t *routes = config_setting_get_member(root, "routes");
  for (unsigned i = 0; routes && i < c->n_routes; i++) {
    const config_setting_t *grp = config_setting_get_elem(routes, i);
    if (!grp || !c->routes[i].account[0] || config_account_index(c, c->routes[i].account) >= 0)
      continue;
    elem_path(path, "routes", i);
    join_path(p, path, "account");
    report(ld, grp, p, "no account is named '%s'", c->routes[i].account);
  }
}
