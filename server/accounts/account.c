/* account.c - the accounts at run time: logins checked against each
 * account's settings (password or its hash, allow_ip, enabled, expires,
 * max_binds), max_rate, senders and credit on every submit, the refusals
 * counted by reason, and accounts changed while emgd runs.
 *
 * An account's settings are one immutable version (struct account_def),
 * published through an atomic pointer in its slot: a change builds a new
 * version and swaps it in, so that listeners and instances of every
 * connector read without a lock. Every function that loads a version or
 * the name index does so inside a section of the accounts' grace domain
 * (grace.h) and lets no pointer into it out: what it returns is copied. A
 * change hands the version or index it replaced to the domain, and
 * accounts_tick (or the next change) frees it once no reader that could
 * have loaded it is still inside. What changes with traffic (sessions, the rate
 * budget, counters) lives in the slot, in atomics; credit under a small
 * per-account lock, because a snapshot must see it and its epoch at once.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "account_internal.h"
#include "cidr.h"
#include "clock.h"
#include "logins.h"

/* How long a proven password spares the hashing. */
#define PROVEN_S 600
/* How long a removed account's slot stays empty. This is not about
 * memory (the grace domain frees the version): callers keep slot numbers
 * between calls, outside any section (an HTTP request from its login to its
 * submit, a queue by slot), and a number given to another account at once
 * would let such a caller act as that one. */
#define SLOT_REUSE_S 60

static const struct {
  const char *text, *key;
  enum proto_status status;
} refusals[ACCOUNT_REFUSALS] = {
  [ACCOUNT_OK] = { "accepted", "ok", PROTO_OK },
  [ACCOUNT_UNKNOWN] = { "unknown account", "unknown", PROTO_E_AUTH_ACCOUNT },
  [ACCOUNT_PASSWORD] = { "wrong password", "password", PROTO_E_AUTH_PASSWORD },
  [ACCOUNT_CERTIFICATE] = { "no client certificate of the account's tls_subject", "certificate", PROTO_E_AUTH },
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

static int64_t monotonic_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec;
}

/* ---- versions, retired and freed once no reader holds them ---- */

static void def_free(struct account_def *d)
{
  if (!d)
    return;
  free(d->allow);
  free(d->uses);
  free(d);
}

/* Hands p, swapped away already, to the grace domain: free_fn(p) runs in
 * a reclaim once no reader that could have loaded it is inside. */
static void retire(struct accounts *a, void *p, void (*free_fn)(void *))
{
  char err[64];
  /* Out of memory to note it: kept for the process's life rather than freed too soon. */
  (void)grace_retire(a->grace, p, free_fn, err, sizeof err);
}

static void free_def(void *p)
{
  def_free(p);
}

/* Only inside a section (grace_enter(a->grace)), and nothing it points to
 * is used after the section's grace_leave. */
static struct account_def *def_of(const struct account_rt *rt)
{
  return atomic_load_explicit(&rt->def, memory_order_acquire);
}

/* A version of ac for this process: allow_ip parsed, connectors resolved;
 * NULL with the kind of failure in *why and what it was in err. */
static struct account_def *def_build(const struct accounts *a, const struct config_account *ac,
                                     enum account_change *why, char *err, size_t err_len)
{
  struct account_def *d = calloc(1, sizeof *d);
  if (!d || !(d->uses = calloc(a->n_connectors ? a->n_connectors : 1, sizeof *d->uses)) ||
      (ac->n_allow_ip && !(d->allow = calloc(ac->n_allow_ip, sizeof *d->allow)))) {
    def_free(d);
    snprintf(err, err_len, "out of memory");
    *why = ACCOUNT_E_NO_MEMORY;
    return NULL;
  }
  d->cfg = *ac;
  for (unsigned k = 0; k < ac->n_allow_ip; k++) {
    char reason[CIDR_ERR_LEN];
    if (cidr_parse(ac->allow_ip[k], &d->allow[k], reason, sizeof reason) < 0) {
      snprintf(err, err_len, "allow_ip %s: %s", ac->allow_ip[k], reason);
      def_free(d);
      *why = ACCOUNT_E_INVALID;
      return NULL;
    }
  }
  for (unsigned c = 0; c < a->n_connectors; c++) {
    const struct config_connector *cc = &a->cfg->connectors[c];
    bool named = !ac->n_connectors;
    for (unsigned k = 0; k < ac->n_connectors && !named; k++)
      named = strcmp(ac->connectors[k], cc->name) == 0;
    d->uses[c] = named && cc->mode == CONFIG_CONN_SERVER;
  }
  for (unsigned k = 0; k < ac->n_connectors; k++) {
    const struct config_connector *cc = config_connector(a->cfg, ac->connectors[k]);
    if (!cc || cc->mode != CONFIG_CONN_SERVER) {
      snprintf(err, err_len, "connectors: no server connector is named '%s'", ac->connectors[k]);
      def_free(d);
      *why = ACCOUNT_E_INVALID;
      return NULL;
    }
  }
  if (ac->max_rate > 0) {
    d->interval_ns = (uint64_t)(1e9 / ac->max_rate);
    /* A second's messages may come at once (a token bucket of one
     * second): a budget left unused while the instances wait for a core
     * (a client pushing flat out on two cores) is caught up, so the rate
     * holds per second, and an idle account may send a second's worth. */
    d->tolerance_ns = ac->max_rate >= 1 ? (uint64_t)1000000000 : d->interval_ns;
  }
  return d;
}

/* ---- the name index, rebuilt whole on every change ---- */

/* FNV-1a: names are short, and this runs once per HTTP message. */
static size_t name_hash(const char *name)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *name; name++)
    h = (h ^ (uint8_t)*name) * 0x100000001b3ull;
  return (size_t)h;
}

static void free_index(void *p)
{
  free(p);
}

/* Publishes a new index of the slots in use; false when out of memory. */
static bool index_rebuild(struct accounts *a)
{
  struct name_index *x = calloc(1, sizeof *x + a->index_cap * sizeof x->slots[0]);
  if (!x)
    return false;
  x->mask = a->index_cap - 1;
  for (unsigned s = 0; s < a->used; s++) {
    const struct account_def *d = def_of(&a->slots[s]);
    if (!d)
      continue;
    size_t i = name_hash(d->cfg.name) & x->mask;
    while (x->slots[i])
      i = (i + 1) & x->mask;
    x->slots[i] = (int)s + 1;
  }
  retire(a, atomic_exchange_explicit(&a->index, x, memory_order_acq_rel), free_index);
  return true;
}

/* accounts_find inside a section. */
static int find(const struct accounts *a, const char *name)
{
  const struct name_index *x = atomic_load_explicit(&a->index, memory_order_acquire);
  for (size_t i = name_hash(name) & x->mask;; i = (i + 1) & x->mask) {
    int v = x->slots[i];
    if (!v)
      return -1;
    const struct account_def *d = def_of(&a->slots[v - 1]);
    if (d && strcmp(d->cfg.name, name) == 0)
      return v - 1;
  }
}

int accounts_find(const struct accounts *a, const char *name)
{
  grace_enter(a->grace);
  int s = find(a, name);
  grace_leave(a->grace);
  return s;
}

bool accounts_name(const struct accounts *a, unsigned slot, char name[MSG_USER_LEN])
{
  grace_enter(a->grace);
  const struct account_def *d = slot < accounts_used(a) ? def_of(&a->slots[slot]) : NULL;
  bool found = d != NULL;
  if (found)
    memcpy(name, d->cfg.name, MSG_USER_LEN);
  grace_leave(a->grace);
  return found;
}

/* Each server connector's only account, or -1: where a route to the
 * connector that names no account delivers. */
static void sole_rebuild(struct accounts *a)
{
  for (unsigned c = 0; c < a->n_connectors; c++) {
    int sole = -1;
    unsigned n = 0;
    for (unsigned s = 0; s < a->used; s++) {
      const struct account_def *d = def_of(&a->slots[s]);
      if (d && d->uses[c]) {
        sole = (int)s;
        n++;
      }
    }
    atomic_store(&a->sole[c], n == 1 ? sole : -1);
  }
}

/* ---- create, destroy ---- */

void accounts_destroy(struct accounts *a)
{
  if (!a)
    return;
  /* No thread reads any more: what was retired goes with the domain, and
   * the current versions and index are freed here. */
  grace_destroy(a->grace);
  for (unsigned s = 0; a->slots && s < a->capacity; s++) {
    def_free(atomic_load(&a->slots[s].def));
    pthread_mutex_destroy(&a->slots[s].proven_lock);
    pthread_mutex_destroy(&a->slots[s].credit_lock);
  }
  free(atomic_load(&a->index));
  sodium_memzero(a->digest_key, sizeof a->digest_key);
  free(a->sole);
  free(a->slots);
  free(a);
}

struct accounts *accounts_create(const struct config *cfg, char *err, size_t err_len)
{
  struct accounts *a = calloc(1, sizeof *a);
  unsigned capacity = cfg->max_accounts ? cfg->max_accounts : 4096;
  if (cfg->n_accounts > capacity) {
    snprintf(err, err_len, "%u accounts, above general.max_accounts (%u)", cfg->n_accounts, capacity);
    free(a);
    return NULL;
  }
  if (!a)
    goto no_memory;
  a->cfg = cfg;
  a->n_connectors = cfg->n_connectors;
  a->capacity = capacity;
  a->shared_mode = cfg->has_database;
  a->credit_batch = cfg->db_credit_batch ? cfg->db_credit_batch : 1000;
  a->index_cap = 16;
  while (a->index_cap < 2 * (size_t)capacity)
    a->index_cap *= 2;
  a->slots = calloc(capacity, sizeof *a->slots);
  a->sole = calloc(cfg->n_connectors ? cfg->n_connectors : 1, sizeof *a->sole);
  a->grace = grace_create();
  if (!a->slots || !a->sole || !a->grace || sodium_init() < 0)
    goto no_memory;
  for (unsigned s = 0; s < capacity; s++) {
    pthread_mutex_init(&a->slots[s].proven_lock, NULL);
    pthread_mutex_init(&a->slots[s].credit_lock, NULL);
  }
  randombytes_buf(a->digest_key, sizeof a->digest_key);
  grace_enter(a->grace);
  bool indexed = index_rebuild(a);
  grace_leave(a->grace);
  if (!indexed)
    goto no_memory;
  for (unsigned i = 0; i < cfg->n_accounts; i++) {
    int slot;
    char why[256];
    enum account_change r = accounts_put(a, &cfg->accounts[i], &slot, why, sizeof why);
    if (r != ACCOUNT_CHANGED) {
      snprintf(err, err_len, "account %s: %s", cfg->accounts[i].name, why);
      accounts_destroy(a);
      return NULL;
    }
  }
  return a;
no_memory:
  snprintf(err, err_len, "out of memory for %u accounts", capacity);
  accounts_destroy(a);
  return NULL;
}

unsigned accounts_capacity(const struct accounts *a)
{
  return a->capacity;
}

unsigned accounts_used(const struct accounts *a)
{
  return atomic_load_explicit(&a->used_published, memory_order_acquire);
}

size_t accounts_pending(const struct accounts *a)
{
  return grace_pending(a->grace);
}

/* ---- changes ---- */

/* A free slot: one never used, or one whose account went SLOT_REUSE_S
 * ago or more and whose sessions are all gone. -1 when none. */
static int slot_free(struct accounts *a)
{
  int64_t now = monotonic_s();
  for (unsigned s = 0; s < a->used; s++) {
    struct account_rt *rt = &a->slots[s];
    if (!def_of(rt) && rt->removed_at + SLOT_REUSE_S <= now && !atomic_load(&rt->binds))
      return (int)s;
  }
  return a->used < a->capacity ? (int)a->used : -1;
}

static void credit_reset(struct account_rt *rt, size_t credit)
{
  pthread_mutex_lock(&rt->credit_lock);
  rt->limited = credit != CONFIG_CREDIT_UNLIMITED;
  rt->credit_set = rt->limited ? (int64_t)credit : 0;
  /* Shared: parts taken here and not yet pushed are not in the figure. */
  rt->credit_left = rt->credit_set - (rt->shared ? rt->unpushed : 0);
  if (!rt->credit_epoch)
    rt->credit_epoch = 1;     /* 0 tags a part that took no credit */
  rt->credit_dirty = true;
  pthread_mutex_unlock(&rt->credit_lock);
  atomic_store(&rt->limited_flag, credit != CONFIG_CREDIT_UNLIMITED);
}

/* Whether credit is another value than the one last set (by the
 * configuration or the API): only then is what is left set anew. */
static bool credit_differs(struct account_rt *rt, size_t credit)
{
  pthread_mutex_lock(&rt->credit_lock);
  bool limited = credit != CONFIG_CREDIT_UNLIMITED;
  bool differs = limited != rt->limited || (limited && rt->credit_set != (int64_t)credit);
  pthread_mutex_unlock(&rt->credit_lock);
  return differs;
}

/* accounts_put inside a section. */
static enum account_change put(struct accounts *a, const struct config_account *ac, int *slot, char *err,
                               size_t err_len)
{
  enum account_change why;
  struct account_def *d = def_build(a, ac, &why, err, err_len);
  if (!d)
    return why;
  int s = find(a, ac->name);
  bool fresh = s < 0;
  if (fresh && (s = slot_free(a)) < 0) {
    def_free(d);
    snprintf(err, err_len, "general.max_accounts (%u) accounts exist already", a->capacity);
    return ACCOUNT_E_FULL;
  }
  struct account_rt *rt = &a->slots[s];
  struct account_def *old = def_of(rt);
  if (fresh) {
    atomic_store(&rt->tat_ns, 0);
    atomic_store(&rt->submitted, 0);
    atomic_store(&rt->refused_rate, 0);
    atomic_store(&rt->refused_sender, 0);
    atomic_store(&rt->refused_credit, 0);
    atomic_store(&rt->delivered, 0);
    atomic_store(&rt->undelivered, 0);
    atomic_store(&rt->rate_now, 0);
    pthread_mutex_lock(&rt->proven_lock);
    rt->proven_until = 0;
    pthread_mutex_unlock(&rt->proven_lock);
  }
  pthread_mutex_lock(&rt->credit_lock);
  if (fresh)
    rt->unpushed = 0;
  rt->shared = a->shared_mode && ac->managed;
  pthread_mutex_unlock(&rt->credit_lock);
  if (fresh || credit_differs(rt, ac->credit))
    credit_reset(rt, ac->credit);
  if (!fresh && (strcmp(old->cfg.password, ac->password) != 0 ||
                 strcmp(old->cfg.password_hash, ac->password_hash) != 0)) {
    pthread_mutex_lock(&rt->proven_lock);
    rt->proven_until = 0;     /* the old password proves nothing now */
    pthread_mutex_unlock(&rt->proven_lock);
  }
  atomic_store_explicit(&rt->def, d, memory_order_release);
  retire(a, old, free_def);
  if ((unsigned)s >= a->used) {
    a->used = (unsigned)s + 1;
    atomic_store_explicit(&a->used_published, a->used, memory_order_release);
  }
  if (fresh && !index_rebuild(a)) {
    atomic_store(&rt->def, NULL);
    retire(a, d, free_def);
    snprintf(err, err_len, "out of memory");
    return ACCOUNT_E_NO_MEMORY;
  }
  sole_rebuild(a);
  *slot = s;
  return ACCOUNT_CHANGED;
}

/* The changes' thread is the only one that swaps versions, so it could
 * read them bare; it takes a section all the same, so that no read of a
 * version is outside one. What earlier changes retired is freed first. */
enum account_change accounts_put(struct accounts *a, const struct config_account *ac, int *slot, char *err,
                                 size_t err_len)
{
  grace_reclaim(a->grace);
  grace_enter(a->grace);
  enum account_change r = put(a, ac, slot, err, err_len);
  grace_leave(a->grace);
  return r;
}

int accounts_remove(struct accounts *a, const char *name)
{
  grace_reclaim(a->grace);
  grace_enter(a->grace);
  int s = find(a, name);
  if (s >= 0) {
    struct account_rt *rt = &a->slots[s];
    struct account_def *old = atomic_exchange(&rt->def, NULL);
    rt->removed_at = monotonic_s();
    retire(a, old, free_def);
    credit_reset(rt, CONFIG_CREDIT_UNLIMITED);
    index_rebuild(a);   /* out of memory: the old index still finds it, and its slot says it is gone */
    sole_rebuild(a);
  }
  grace_leave(a->grace);
  return s;
}

/* ---- logins ---- */

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
static bool bind_take(struct account_rt *rt, unsigned max)
{
  unsigned now = atomic_load(&rt->binds);
  do {
    if (max && now >= max)
      return false;
  } while (!atomic_compare_exchange_weak(&rt->binds, &now, now + 1));
  return true;
}

/* Whether given is d's password: a cleartext one compared at once, a
 * hashed one hashed unless it is the one last proven (PROVEN_S). */
static bool password_proven(struct accounts *a, struct account_rt *rt, const struct account_def *d,
                            const char *given)
{
  const struct config_account *ac = &d->cfg;
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
  /* Proven against the version read: a change meanwhile clears it again. */
  if (def_of(rt) == d) {
    memcpy(rt->proven, digest, sizeof digest);
    rt->proven_until = now + PROVEN_S;
  }
  pthread_mutex_unlock(&rt->proven_lock);
  return true;
}

/* What keeps d's account out from peer now, or ACCOUNT_OK. */
static enum account_refusal standing(const struct account_def *d, const char *peer)
{
  const struct config_account *ac = &d->cfg;
  if (!ac->enabled)
    return ACCOUNT_DISABLED;
  if (ac->expires_at && (int64_t)time(NULL) >= ac->expires_at)
    return ACCOUNT_EXPIRED;
  if (ac->n_allow_ip && !cidr_match_any(d->allow, ac->n_allow_ip, peer))
    return ACCOUNT_ADDRESS;
  return ACCOUNT_OK;
}

/* A login inside a section: the version read stays the one checked
 * throughout, password hashing included (which holds back the freeing of
 * what changes retire meanwhile, for that long only). */
static enum account_refusal check(struct accounts *a, unsigned connector, const char *peer, const char *user,
                                  const char *password, const char *tls_subject, bool bind, int *slot)
{
  int s = connector < a->n_connectors ? find(a, user) : -1;
  struct account_rt *rt = s >= 0 ? &a->slots[s] : NULL;
  const struct account_def *d = rt ? def_of(rt) : NULL;
  if (!d || !d->uses[connector])
    return ACCOUNT_UNKNOWN;
  /* A certificate tied to the account comes first, and alone admits an
   * account without a password; with one, both are needed. */
  const struct config_account *ac = &d->cfg;
  if (ac->tls_subject[0] && (!tls_subject || strcmp(tls_subject, ac->tls_subject) != 0))
    return ACCOUNT_CERTIFICATE;
  if ((ac->password[0] || ac->password_hash[0]) && !password_proven(a, rt, d, password))
    return ACCOUNT_PASSWORD;
  enum account_refusal why = standing(d, peer);
  if (why != ACCOUNT_OK)
    return why;
  if (bind && !bind_take(rt, d->cfg.max_binds))
    return ACCOUNT_MAX_BINDS;
  *slot = s;
  return ACCOUNT_OK;
}

enum account_refusal accounts_login(struct accounts *a, unsigned connector, const char *peer, const char *user,
                                    const char *password, const char *tls_subject, bool bind, int *slot)
{
  grace_enter(a->grace);
  enum account_refusal why = check(a, connector, peer, user, password, tls_subject, bind, slot);
  grace_leave(a->grace);
  if (why != ACCOUNT_OK)
    accounts_count(a, why);
  return why;
}

void accounts_unbind(struct accounts *a, int slot)
{
  if (slot >= 0 && (unsigned)slot < a->capacity)
    atomic_fetch_sub(&a->slots[slot].binds, 1);
}

bool accounts_session_allowed(struct accounts *a, int slot, unsigned connector, const char *peer,
                              enum account_refusal *why)
{
  grace_enter(a->grace);
  const struct account_def *d = slot >= 0 && (unsigned)slot < a->capacity ? def_of(&a->slots[slot]) : NULL;
  *why = !d || connector >= a->n_connectors || !d->uses[connector] ? ACCOUNT_UNKNOWN : standing(d, peer);
  grace_leave(a->grace);
  return *why == ACCOUNT_OK;
}

bool accounts_uses(const struct accounts *a, int slot, unsigned connector)
{
  grace_enter(a->grace);
  const struct account_def *d = slot >= 0 && (unsigned)slot < a->capacity ? def_of(&a->slots[slot]) : NULL;
  bool uses = d && connector < a->n_connectors && d->uses[connector];
  grace_leave(a->grace);
  return uses;
}

int accounts_sole(const struct accounts *a, unsigned connector)
{
  return connector < a->n_connectors ? atomic_load(&a->sole[connector]) : -1;
}

/* ---- submits ---- */

/* max_rate: whether one more submit fits the account's budget at now. */
static bool rate_take(struct account_rt *rt, const struct account_def *d, uint64_t now)
{
  uint64_t tat = atomic_load_explicit(&rt->tat_ns, memory_order_relaxed), next;
  do {
    next = (tat > now ? tat : now) + d->interval_ns;
    if (next - now > d->interval_ns + d->tolerance_ns)
      return false;
  } while (!atomic_compare_exchange_weak_explicit(&rt->tat_ns, &tat, next, memory_order_relaxed,
                                                  memory_order_relaxed));
  return true;
}

uint64_t accounts_rate_wait_ns(struct accounts *a, int slot, uint64_t now_ns)
{
  if (slot < 0 || (unsigned)slot >= a->capacity)
    return 0;
  struct account_rt *rt = &a->slots[slot];
  grace_enter(a->grace);
  const struct account_def *d = def_of(rt);
  uint64_t tolerance_ns = d ? d->tolerance_ns : 0;
  bool limited = d && d->interval_ns;
  grace_leave(a->grace);
  if (!limited)
    return 0;
  /* One fits once the theoretical arrival time is within the tolerance. */
  uint64_t tat = atomic_load_explicit(&rt->tat_ns, memory_order_relaxed);
  return tat > now_ns + tolerance_ns ? tat - now_ns - tolerance_ns : 0;
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

/* accounts_admit inside a section. */
static enum proto_status admit(struct account_rt *rt, struct msg *m, uint64_t now_ns)
{
  const struct account_def *d = def_of(rt);
  if (!d)
    return PROTO_E_AUTH;      /* removed while its session was being unbound */
  const struct config_account *ac = &d->cfg;
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
  if (d->interval_ns && !rate_take(rt, d, now_ns)) {
    atomic_fetch_add_explicit(&rt->refused_rate, 1, memory_order_relaxed);
    return PROTO_E_THROTTLED;
  }
  atomic_fetch_add_explicit(&rt->submitted, 1, memory_order_relaxed);
  return PROTO_OK;
}

enum proto_status accounts_admit(struct accounts *a, int slot, struct msg *m, uint64_t now_ns)
{
  if (slot < 0 || (unsigned)slot >= a->capacity)
    return PROTO_OK;
  grace_enter(a->grace);
  enum proto_status r = admit(&a->slots[slot], m, now_ns);
  grace_leave(a->grace);
  return r;
}

enum proto_status accounts_credit_take(struct accounts *a, int slot, unsigned parts, uint32_t *epoch)
{
  *epoch = 0;
  if (slot < 0 || (unsigned)slot >= a->capacity)
    return PROTO_OK;
  struct account_rt *rt = &a->slots[slot];
  /* Unlocked first look: most accounts have no limit. */
  if (!atomic_load_explicit(&rt->limited_flag, memory_order_relaxed))
    return PROTO_OK;
  enum proto_status r = PROTO_OK;
  pthread_mutex_lock(&rt->credit_lock);
  if (!rt->limited) {
  } else if (rt->credit_left < (int64_t)parts) {
    r = PROTO_E_CREDIT;
  } else if (rt->shared && rt->unpushed > 0 && rt->unpushed + parts > a->credit_batch) {
    /* What the other nodes may take meanwhile is bounded by their
     * batches: this one waits for its push (a fifth of a second). */
    r = PROTO_E_THROTTLED;
  } else {
    rt->credit_left -= parts;
    if (rt->shared) {
      bool half = 2 * rt->unpushed < a->credit_batch;
      rt->unpushed += parts;
      if (half && 2 * rt->unpushed >= a->credit_batch && a->push_due)
        a->push_due(a->push_due_ctx);
    }
    *epoch = rt->credit_epoch;
    atomic_fetch_add_explicit(&a->credit_moves, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&rt->credit_lock);
  if (r != PROTO_OK)
    atomic_fetch_add_explicit(r == PROTO_E_CREDIT ? &rt->refused_credit : &rt->refused_rate, 1,
                              memory_order_relaxed);
  return r;
}

void accounts_credit_give_back(struct accounts *a, const char *name, unsigned parts)
{
  int s = accounts_find(a, name);
  if (s < 0)
    return;
  struct account_rt *rt = &a->slots[s];
  pthread_mutex_lock(&rt->credit_lock);
  if (rt->limited) {
    rt->credit_left += parts;
    if (rt->shared)
      rt->unpushed -= parts;
    rt->credit_dirty = true;
    atomic_fetch_add_explicit(&a->credit_moves, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&rt->credit_lock);
}

/* Whether slot holds an account now. */
static bool holds_account(const struct accounts *a, unsigned slot)
{
  grace_enter(a->grace);
  bool held = def_of(&a->slots[slot]) != NULL;
  grace_leave(a->grace);
  return held;
}

bool accounts_credit_change(struct accounts *a, int slot, bool add, int64_t value, int64_t *left)
{
  if (slot < 0 || (unsigned)slot >= a->capacity || !holds_account(a, (unsigned)slot))
    return false;
  struct account_rt *rt = &a->slots[slot];
  pthread_mutex_lock(&rt->credit_lock);
  int64_t now = rt->limited ? rt->credit_left : 0;
  int64_t next = add ? now + value : value;
  rt->credit_left = rt->credit_set = next < 0 ? 0 : next;
  rt->limited = true;
  if (!rt->credit_epoch)
    rt->credit_epoch = 1;
  rt->credit_dirty = true;
  atomic_fetch_add_explicit(&a->credit_moves, 1, memory_order_relaxed);
  *left = rt->credit_left;
  pthread_mutex_unlock(&rt->credit_lock);
  atomic_store(&rt->limited_flag, true);
  return true;
}

void accounts_credit_unlimit(struct accounts *a, int slot)
{
  if (slot >= 0 && (unsigned)slot < a->capacity)
    credit_reset(&a->slots[slot], CONFIG_CREDIT_UNLIMITED);
}

void accounts_count_receipt(struct accounts *a, const char *name, bool delivered)
{
  int s = a && name[0] ? accounts_find(a, name) : -1;
  if (s >= 0)
    atomic_fetch_add_explicit(delivered ? &a->slots[s].delivered : &a->slots[s].undelivered, 1,
                              memory_order_relaxed);
}

/* ---- what the API shows ---- */

void accounts_tick(struct accounts *a, uint64_t now_ns)
{
  unsigned used = accounts_used(a);
  for (unsigned s = 0; s < used; s++) {
    struct account_rt *rt = &a->slots[s];
    uint64_t n = atomic_load_explicit(&rt->submitted, memory_order_relaxed);
    uint64_t dt = now_ns - rt->rate_sampled_ns;
    if (rt->rate_sampled_ns && dt)
      atomic_store(&rt->rate_now, (double)(n - rt->rate_sample) * 1e9 / (double)dt);
    rt->rate_sample = n;
    rt->rate_sampled_ns = now_ns;
  }
  grace_reclaim(a->grace);   /* versions and indexes replaced that no reader holds now */
}

bool accounts_view(const struct accounts *a, unsigned slot, struct account_view *out)
{
  memset(out, 0, sizeof *out);
  if (slot >= a->capacity)
    return false;
  struct account_rt *rt = &a->slots[slot];
  grace_enter(a->grace);
  const struct account_def *d = def_of(rt);
  bool found = d != NULL;
  if (found)
    out->cfg = d->cfg;   /* arrays only: nothing in it points into the version */
  grace_leave(a->grace);
  if (!found)
    return false;
  out->exists = true;
  out->binds = atomic_load(&rt->binds);
  out->submitted = atomic_load_explicit(&rt->submitted, memory_order_relaxed);
  out->refused_rate = atomic_load_explicit(&rt->refused_rate, memory_order_relaxed);
  out->refused_sender = atomic_load_explicit(&rt->refused_sender, memory_order_relaxed);
  out->refused_credit = atomic_load_explicit(&rt->refused_credit, memory_order_relaxed);
  out->delivered = atomic_load_explicit(&rt->delivered, memory_order_relaxed);
  out->undelivered = atomic_load_explicit(&rt->undelivered, memory_order_relaxed);
  out->rate_now = atomic_load(&rt->rate_now);
  pthread_mutex_lock(&rt->credit_lock);
  out->credit_left = rt->limited ? rt->credit_left : (int64_t)CONFIG_CREDIT_UNLIMITED;
  out->shared = rt->shared;
  out->cfg.credit = !rt->limited ? CONFIG_CREDIT_UNLIMITED : rt->credit_set < 0 ? 0 : (size_t)rt->credit_set;
  pthread_mutex_unlock(&rt->credit_lock);
  return true;
}
