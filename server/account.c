/* account.c - the accounts at run time: logins checked against the
 * configuration's accounts (password or its hash, allow_ip, enabled,
 * expires, max_binds), with the refusals counted by reason.
 *
 * The configuration is fixed for the process's life here; what changes is
 * each account's count of sessions, kept in an atomic so that listeners and
 * instances of every connector share it without a lock. */
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "cidr.h"
#include "password.h"

/* max_rate as a generic cell rate algorithm: one atomic "theoretical
 * arrival time" per account, shared by every instance thread without a
 * lock. A submit is let through when it would not put that time more than
 * the tolerance ahead of now, and moves it one interval on. */
struct account_rt {
  const struct config_account *cfg;
  struct cidr *allow;              /* n_allow_ip parsed */
  _Atomic unsigned binds;
  _Atomic uint64_t tat_ns;         /* max_rate: when the budget is next free */
  uint64_t interval_ns, tolerance_ns;
  _Atomic uint64_t submitted, refused_rate, refused_sender;
  /* The password last proven against the hash, as a keyed digest: a client
   * that reconnects (all its binds at once, after a restart) costs one
   * hashing, not one each. */
  pthread_mutex_t proven_lock;
  uint8_t proven[crypto_generichash_BYTES];
  int64_t proven_until;             /* seconds (CLOCK_MONOTONIC); 0 = none */
};

/* How long a proven password spares the hashing. */
#define PROVEN_S 600

struct accounts {
  const struct config *cfg;
  struct account_rt *list;         /* cfg->n_accounts */
  int *by_name;                    /* open addressing: account index + 1, 0 = empty */
  size_t by_name_mask;
  uint8_t digest_key[crypto_generichash_KEYBYTES];   /* random: the digests mean nothing elsewhere */
  int **user_of;                   /* per connector (server only): account -> its users index, or -1 */
  _Atomic uint64_t refused[ACCOUNT_REFUSALS];
};

static const struct {
  const char *text, *key;
  enum proto_status status;
} refusals[ACCOUNT_REFUSALS] = {
  [ACCOUNT_OK] = { "accepted", "ok", PROTO_OK },
  [ACCOUNT_UNKNOWN] = { "unknown account", "unknown", PROTO_E_AUTH_ACCOUNT },
  [ACCOUNT_PASSWORD] = { "wrong password", "password", PROTO_E_AUTH_PASSWORD },
  [ACCOUNT_DISABLED] = { "account disabled", "disabled", PROTO_E_AUTH },
  [ACCOUNT_EXPIRED] = { "account expired", "expired", PROTO_E_AUTH },
  [ACCOUNT_ADDRESS] = { "address not allowed (allow_ip)", "address", PROTO_E_AUTH },
  [ACCOUNT_MAX_BINDS] = { "max_binds reached", "max_binds", PROTO_E_AUTH },
  [ACCOUNT_NO_INSTANCE] = { "all instances are in use", "no_instance", PROTO_E_AUTH },
};

const char *account_refusal_text(enum account_refusal why)
{
  return (unsigned)why < ACCOUNT_REFUSALS ? refusals[why].text : "?";
}

const char *account_refusal_key(enum account_refusal why)
{
  return (unsigned)why < ACCOUNT_REFUSALS ? refusals[why].key : "?";
}

enum proto_status account_refusal_status(enum account_refusal why)
{
  return (unsigned)why < ACCOUNT_REFUSALS ? refusals[why].status : PROTO_E_AUTH;
}

void accounts_destroy(struct accounts *a)
{
  if (!a)
    return;
  for (unsigned i = 0; a->list && i < a->cfg->n_accounts; i++) {
    free(a->list[i].allow);
    pthread_mutex_destroy(&a->list[i].proven_lock);
  }
  sodium_memzero(a->digest_key, sizeof a->digest_key);
  for (unsigned c = 0; a->user_of && c < a->cfg->n_connectors; c++)
    free(a->user_of[c]);
  free(a->by_name);
  free(a->user_of);
  free(a->list);
  free(a);
}

/* FNV-1a: names are short, and this runs once per message. */
static size_t name_hash(const char *name)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *name; name++)
    h = (h ^ (uint8_t)*name) * 0x100000001b3ull;
  return (size_t)h;
}

int accounts_find(const struct accounts *a, const char *name)
{
  for (size_t i = name_hash(name) & a->by_name_mask;; i = (i + 1) & a->by_name_mask) {
    int v = a->by_name[i];
    if (!v)
      return -1;
    if (strcmp(a->cfg->accounts[v - 1].name, name) == 0)
      return v - 1;
  }
}

static bool index_names(struct accounts *a)
{
  size_t cap = 16;
  while (cap < 2 * (size_t)a->cfg->n_accounts)
    cap *= 2;
  if (!(a->by_name = calloc(cap, sizeof *a->by_name)))
    return false;
  a->by_name_mask = cap - 1;
  for (unsigned k = 0; k < a->cfg->n_accounts; k++) {
    size_t i = name_hash(a->cfg->accounts[k].name) & a->by_name_mask;
    while (a->by_name[i])
      i = (i + 1) & a->by_name_mask;
    a->by_name[i] = (int)k + 1;
  }
  return true;
}

struct accounts *accounts_create(const struct config *cfg, char *err, size_t err_len)
{
  struct accounts *a = calloc(1, sizeof *a);
  if (!a)
    goto no_memory;
  a->cfg = cfg;
  a->list = calloc(cfg->n_accounts ? cfg->n_accounts : 1, sizeof *a->list);
  a->user_of = calloc(cfg->n_connectors ? cfg->n_connectors : 1, sizeof *a->user_of);
  if (!a->list || !a->user_of || !index_names(a) || sodium_init() < 0)
    goto no_memory;
  randombytes_buf(a->digest_key, sizeof a->digest_key);
  for (unsigned i = 0; i < cfg->n_accounts; i++) {
    const struct config_account *ac = &cfg->accounts[i];
    struct account_rt *rt = &a->list[i];
    rt->cfg = ac;
    pthread_mutex_init(&rt->proven_lock, NULL);
    if (ac->max_rate > 0) {
      rt->interval_ns = (uint64_t)(1e9 / ac->max_rate);
      /* A second's messages may come at once (a token bucket of one
       * second): a budget left unused while the instances wait for a core
       * (a client pushing flat out on two cores) is caught up, so the rate
       * holds per second, and an idle account may send a second's worth. */
      rt->tolerance_ns = ac->max_rate >= 1 ? (uint64_t)1000000000 : rt->interval_ns;
    }
    if (ac->n_allow_ip && !(rt->allow = calloc(ac->n_allow_ip, sizeof *rt->allow)))
      goto no_memory;
    for (unsigned k = 0; k < ac->n_allow_ip; k++) {
      char why[CIDR_ERR_LEN];
      if (cidr_parse(ac->allow_ip[k], &rt->allow[k], why, sizeof why) < 0) {
        snprintf(err, err_len, "account %s: allow_ip %s: %s", ac->name, ac->allow_ip[k], why);
        accounts_destroy(a);
        return NULL;
      }
    }
  }
  for (unsigned c = 0; c < cfg->n_connectors; c++) {
    const struct config_connector *cc = &cfg->connectors[c];
    if (cc->mode != CONFIG_CONN_SERVER)
      continue;
    if (!(a->user_of[c] = malloc((cfg->n_accounts ? cfg->n_accounts : 1) * sizeof *a->user_of[c])))
      goto no_memory;
    for (unsigned i = 0; i < cfg->n_accounts; i++)
      a->user_of[c][i] = -1;
    for (unsigned u = 0; u < cc->n_users; u++)
      a->user_of[c][cc->users[u].account] = (int)u;
  }
  return a;
no_memory:
  snprintf(err, err_len, "out of memory for %u accounts", cfg->n_accounts);
  accounts_destroy(a);
  return NULL;
}

void accounts_count(struct accounts *a, enum account_refusal why)
{
  if ((unsigned)why < ACCOUNT_REFUSALS)
    atomic_fetch_add(&a->refused[why], 1);
}

uint64_t accounts_refused(const struct accounts *a, enum account_refusal why)
{
  return (unsigned)why < ACCOUNT_REFUSALS ? atomic_load(&a->refused[why]) : 0;
}

/* One of rt's max_binds, when one is left. */
static bool bind_take(struct account_rt *rt)
{
  unsigned max = rt->cfg->max_binds, now = atomic_load(&rt->binds);
  do {
    if (max && now >= max)
      return false;
  } while (!atomic_compare_exchange_weak(&rt->binds, &now, now + 1));
  return true;
}

static int64_t monotonic_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec;
}

/* Whether given is rt's password: a cleartext one compared at once, a
 * hashed one hashed unless it is the one last proven (PROVEN_S). */
static bool password_proven(struct accounts *a, struct account_rt *rt, const char *given)
{
  const struct config_account *ac = rt->cfg;
  if (!ac->password_hash[0])
    return password_verify(ac->password, false, given);
  uint8_t digest[crypto_generichash_BYTES];
  crypto_generichash(digest, sizeof digest, (const unsigned char *)given, strlen(given), a->digest_key,
                     sizeof a->digest_key);
  int64_t now = monotonic_s();
  pthread_mutex_lock(&rt->proven_lock);
  bool known = rt->proven_until > now && sodium_memcmp(rt->proven, digest, sizeof digest) == 0;
  pthread_mutex_unlock(&rt->proven_lock);
  if (!known && !password_verify(ac->password_hash, true, given))
    return false;
  pthread_mutex_lock(&rt->proven_lock);
  memcpy(rt->proven, digest, sizeof digest);
  rt->proven_until = now + PROVEN_S;
  pthread_mutex_unlock(&rt->proven_lock);
  return true;
}

static enum account_refusal check(struct accounts *a, unsigned connector, const char *peer, const char *user,
                                  const char *password, bool bind, int *user_index)
{
  const struct config *cfg = a->cfg;
  int i = connector < cfg->n_connectors && a->user_of[connector] ? accounts_find(a, user) : -1;
  if (i < 0 || a->user_of[connector][i] < 0)
    return ACCOUNT_UNKNOWN;
  struct account_rt *rt = &a->list[i];
  const struct config_account *ac = rt->cfg;
  if (!password_proven(a, rt, password))
    return ACCOUNT_PASSWORD;
  if (!ac->enabled)
    return ACCOUNT_DISABLED;
  if (ac->expires_at && (int64_t)time(NULL) >= ac->expires_at)
    return ACCOUNT_EXPIRED;
  if (ac->n_allow_ip && !cidr_match_any(rt->allow, ac->n_allow_ip, peer))
    return ACCOUNT_ADDRESS;
  if (bind && !bind_take(rt))
    return ACCOUNT_MAX_BINDS;
  *user_index = a->user_of[connector][i];
  return ACCOUNT_OK;
}

enum account_refusal accounts_login(struct accounts *a, unsigned connector, const char *peer, const char *user,
                                    const char *password, bool bind, int *user_index)
{
  enum account_refusal why = check(a, connector, peer, user, password, bind, user_index);
  if (why != ACCOUNT_OK)
    accounts_count(a, why);
  return why;
}

void accounts_unbind(struct accounts *a, unsigned connector, int user_index)
{
  if (connector >= a->cfg->n_connectors || user_index < 0 ||
      (unsigned)user_index >= a->cfg->connectors[connector].n_users)
    return;
  struct account_rt *rt = &a->list[a->cfg->connectors[connector].users[user_index].account];
  atomic_fetch_sub(&rt->binds, 1);
}

/* max_rate: whether one more submit fits the account's budget at now. */
static bool rate_take(struct account_rt *rt, uint64_t now)
{
  uint64_t tat = atomic_load_explicit(&rt->tat_ns, memory_order_relaxed), next;
  do {
    next = (tat > now ? tat : now) + rt->interval_ns;
    if (next - now > rt->interval_ns + rt->tolerance_ns)
      return false;
  } while (!atomic_compare_exchange_weak_explicit(&rt->tat_ns, &tat, next, memory_order_relaxed,
                                                  memory_order_relaxed));
  return true;
}

/* A source the account may use: one of its senders, or one starting with
 * a sender that is all digits (a number range). */
static bool sender_allowed(const struct config_account *ac, const char *src)
{
  for (unsigned i = 0; i < ac->n_senders; i++) {
    const char *s = ac->senders[i];
    size_t len = strlen(s);
    if (strcmp(s, src) == 0 || (strspn(s, "0123456789") == len && strncmp(s, src, len) == 0))
      return true;
  }
  return false;
}

enum proto_status accounts_admit(struct accounts *a, int index, struct msg *m, uint64_t now_ns)
{
  if (index < 0 || (unsigned)index >= a->cfg->n_accounts)
    return PROTO_OK;
  struct account_rt *rt = &a->list[index];
  const struct config_account *ac = rt->cfg;
  if (!m->src.addr[0] && ac->default_sender[0]) {
    size_t len = strlen(ac->default_sender);
    bool number = msg_addr_is_number(ac->default_sender, len);
    msg_addr_set(&m->src, ac->default_sender, len, number ? MSG_TON_INTERNATIONAL : MSG_TON_ALPHANUMERIC,
                 number ? 1 : 0);
  }
  if (ac->n_senders && !sender_allowed(ac, m->src.addr)) {
    atomic_fetch_add_explicit(&rt->refused_sender, 1, memory_order_relaxed);
    return PROTO_E_SOURCE;
  }
  if (rt->interval_ns && !rate_take(rt, now_ns)) {
    atomic_fetch_add_explicit(&rt->refused_rate, 1, memory_order_relaxed);
    return PROTO_E_THROTTLED;
  }
  atomic_fetch_add_explicit(&rt->submitted, 1, memory_order_relaxed);
  return PROTO_OK;
}

unsigned accounts_count_all(const struct accounts *a)
{
  return a->cfg->n_accounts;
}

void accounts_view(const struct accounts *a, unsigned index, struct account_view *out)
{
  struct account_rt *rt = &a->list[index];
  *out = (struct account_view){
    .cfg = rt->cfg,
    .binds = atomic_load(&rt->binds),
    .submitted = atomic_load_explicit(&rt->submitted, memory_order_relaxed),
    .refused_rate = atomic_load_explicit(&rt->refused_rate, memory_order_relaxed),
    .refused_sender = atomic_load_explicit(&rt->refused_sender, memory_order_relaxed),
  };
}
