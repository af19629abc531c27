/* router.c - longest-prefix routes to a connector or a group. The table is
 * small (tens to a few thousand routes) and scanned linearly per message;
 * each route keeps its prefixes' lengths so a miss costs a couple of
 * compares. Only the winning route's target is looked at.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "router.h"
#include "sms_text.h"

/* The usable members of a group are a bit mask. */
_Static_assert(CONFIG_ROUTE_TARGETS_MAX <= 32, "members fit an unsigned mask");
/* Sequence entries are member positions. */
_Static_assert(CONFIG_ROUTE_TARGETS_MAX <= UINT8_MAX + 1, "positions fit uint8_t");

/* A weighted group's order: one cycle of the smooth weighted round robin,
 * and a counter of the messages routed through it. The counter is the only
 * thing a router changes after router_create; it sits behind a pointer so
 * that the table itself stays const and is read without a lock. */
struct rotation {
  _Atomic uint64_t next;          /* 64 bits never wrap: the cycle is never cut short */
  unsigned weights[CONFIG_ROUTE_TARGETS_MAX]; /* divided by their gcd */
  unsigned cycle;                 /* their sum: the length of sequence */
  uint8_t sequence[];             /* positions in the route's members */
};

struct route {
  /* What a message is matched against comes first: the scan reads little else. */
  int from;                       /* connector index, -1 = any */
  size_t dst_len, src_len;
  char dst_prefix[MSG_ADDR_LEN];
  char src_prefix[MSG_ADDR_LEN];
  char account[MSG_USER_LEN];     /* the submitting account; "" = any */
  unsigned n_members;
  int members[CONFIG_ROUTE_TARGETS_MAX];  /* connector indexes, in the order of the file */
  struct rotation *rotation;      /* weighted groups of two or more; NULL: failover */
  char user[MSG_USER_LEN];        /* account at a server connector target; "" = none named */
};

struct router {
  struct route *routes;
  unsigned count;
};

static int connector_index(const struct config *cfg, const char *name)
{
  const struct config_connector *c = config_connector(cfg, name);
  return c ? (int)(c - cfg->connectors) : -1;
}

static unsigned gcd(unsigned a, unsigned b)
{
  while (b) {
    unsigned t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* nginx's smooth weighted round robin, run for one cycle: each step every
 * member gains its weight, the richest (the first of equals) is picked and
 * pays the total. Each member comes weight times, as evenly spaced as the
 * weights allow. Dividing by the gcd first keeps the cycle short: 300,100,100
 * is the order of 3,1,1 repeated. NULL when out of memory. */
static struct rotation *rotation_create(const unsigned *weights, unsigned n)
{
  unsigned divisor = 0, cycle = 0;
  for (unsigned i = 0; i < n; i++)
    divisor = gcd(weights[i], divisor);
  for (unsigned i = 0; i < n; i++)
    cycle += weights[i] / divisor;
  struct rotation *rot = calloc(1, sizeof *rot + cycle);
  if (!rot)
    return NULL;
  atomic_init(&rot->next, 0);
  rot->cycle = cycle;
  for (unsigned i = 0; i < n; i++)
    rot->weights[i] = weights[i] / divisor;
  long current[CONFIG_ROUTE_TARGETS_MAX] = { 0 };
  for (unsigned step = 0; step < cycle; step++) {
    unsigned best = 0;
    for (unsigned i = 0; i < n; i++) {
      current[i] += rot->weights[i];
      if (current[i] > current[best])
        best = i;
    }
    current[best] -= cycle;
    rot->sequence[step] = (uint8_t)best;
  }
  return rot;
}

/* Fills rt from c. Returns 1 when it is a route, 0 when a name does not
 * resolve (config_load refuses that; a router never routes to nowhere), -1
 * when out of memory. */
static int route_init(struct route *rt, const struct config *cfg, const struct config_route *c)
{
  if (c->n_to == 0)
    return 0;
  rt->from = c->from[0] ? connector_index(cfg, c->from) : -1;
  if (c->from[0] && rt->from < 0)
    return 0;
  memcpy(rt->user, c->user, sizeof rt->user);
  for (unsigned i = 0; i < c->n_to; i++) {
    rt->members[i] = connector_index(cfg, c->to[i]);
    if (rt->members[i] < 0)
      return 0;
  }
  rt->n_members = c->n_to;
  memcpy(rt->dst_prefix, c->dst_prefix, sizeof rt->dst_prefix);
  memcpy(rt->src_prefix, c->src_prefix, sizeof rt->src_prefix);
  memcpy(rt->account, c->account, sizeof rt->account);
  rt->dst_len = strlen(rt->dst_prefix);
  rt->src_len = strlen(rt->src_prefix);
  if (c->mode == CONFIG_ROUTE_WEIGHTED && rt->n_members > 1 &&
      !(rt->rotation = rotation_create(c->weights, rt->n_members)))
    return -1;
  return 1;
}

struct router *router_create(const struct config *cfg)
{
  struct router *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->routes = calloc(cfg->n_routes ? cfg->n_routes : 1, sizeof *r->routes);
  if (!r->routes)
    goto fail;
  for (unsigned i = 0; i < cfg->n_routes; i++) {
    /* A route that is not made leaves its slot to the next: it set no
     * rotation, and a route made there sets every other field. */
    int made = route_init(&r->routes[r->count], cfg, &cfg->routes[i]);
    if (made < 0)
      goto fail;
    if (made)
      r->count++;
  }
  return r;
fail:
  router_destroy(r);
  return NULL;
}

void router_destroy(struct router *r)
{
  if (!r)
    return;
  for (unsigned i = 0; i < r->count; i++)
    free(r->routes[i].rotation);
  free(r->routes);
  free(r);
}

/* Orders two matching routes: longer destination prefix, then a specific
 * source connector, then a specific account, then a longer source prefix. */
static int more_specific(const struct route *a, const struct route *b)
{
  if (a->dst_len != b->dst_len)
    return a->dst_len > b->dst_len;
  if ((a->from >= 0) != (b->from >= 0))
    return a->from >= 0;
  if (!a->account[0] != !b->account[0])
    return a->account[0] != '\0';
  return a->src_len > b->src_len;
}

/* splitmix64's finaliser: every input bit moves every output bit, so that
 * a counter or a string hash can be cut with % into fair shares. */
static uint64_t mix64(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9u;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3u;
  return h;
}

/* What every part of one concatenated message shares. The destination is in
 * too: a sender that gives all its messages one reference would otherwise
 * have all its long messages on one connector. */
static uint64_t concat_key(const struct msg *m, const struct sms_text_concat *concat)
{
  uint64_t h = 0xcbf29ce484222325u;
  h = fnv1a(h, m->src.addr, strlen(m->src.addr) + 1);   /* the NUL separates the addresses */
  h = fnv1a(h, m->dst.addr, strlen(m->dst.addr) + 1);
  h = fnv1a(h, &concat->ref, sizeof concat->ref);
  return mix64(h);
}

/* The first usable member; the first one when none is. */
static int failover(const struct route *rt, router_usable_fn usable, void *ctx)
{
  /* One member is taken whatever its state: nothing to ask. */
  if (usable && rt->n_members > 1)
    for (unsigned i = 0; i < rt->n_members; i++)
      if (usable(ctx, rt->members[i]))
        return rt->members[i];
  return rt->members[0];
}

/* The member at position picked is not usable: one of the usable others,
 * each in proportion to its weight, chosen by seed; picked when there is
 * none. Following the sequence to the next usable member instead would cost
 * up to a whole cycle per message while a heavy member is down. */
static int spill(const struct route *rt, unsigned picked, uint64_t seed, router_usable_fn usable,
                 void *ctx)
{
  const struct rotation *rot = rt->rotation;
  unsigned mask = 0, total = 0;
  for (unsigned i = 0; i < rt->n_members; i++)
    if (i != picked && usable(ctx, rt->members[i])) {
      mask |= 1u << i;
      total += rot->weights[i];
    }
  if (!total)
    return rt->members[picked];
  unsigned share = (unsigned)(seed % total);
  for (unsigned i = 0;; i++) {
    if (!(mask & 1u << i))
      continue;
    if (share < rot->weights[i])
      return rt->members[i];
    share -= rot->weights[i];
  }
}

static int weighted(const struct route *rt, const struct msg *m, router_usable_fn usable, void *ctx)
{
  struct rotation *rot = rt->rotation;
  struct sms_text_concat concat;
  /* A malformed UDH is the out connector's business; here it is only no concatenation. */
  bool part = msg_concat(m, &concat);
  uint64_t ticket = part ? concat_key(m, &concat)
                         : atomic_fetch_add_explicit(&rot->next, 1, memory_order_relaxed);
  unsigned picked = rot->sequence[ticket % rot->cycle];
  if (!usable || usable(ctx, rt->members[picked]))
    return rt->members[picked];
  /* Mixed again: the seed must not repeat what ticket % cycle already chose. */
  return spill(rt, picked, mix64(ticket), usable, ctx);
}

int router_route_user(const struct router *r, int from, const struct msg *m,
                      router_usable_fn usable, void *ctx, const char **user)
{
  const struct route *best = NULL;
  for (unsigned i = 0; i < r->count; i++) {
    const struct route *rt = &r->routes[i];
    if (rt->from >= 0 && rt->from != from)
      continue;
    if (rt->dst_len && strncmp(m->dst.addr, rt->dst_prefix, rt->dst_len) != 0)
      continue;
    if (rt->src_len && strncmp(m->src.addr, rt->src_prefix, rt->src_len) != 0)
      continue;
    if (rt->account[0] && strcmp(m->origin.user, rt->account) != 0)
      continue;
    if (!best || more_specific(rt, best))
      best = rt;
  }
  if (!best)
    return -1;
  if (user)
    *user = best->user;
  return best->rotation ? weighted(best, m, usable, ctx) : failover(best, usable, ctx);
}

int router_route(const struct router *r, int from, const struct msg *m, router_usable_fn usable,
                 void *ctx)
{
  return router_route_user(r, from, m, usable, ctx, NULL);
}
