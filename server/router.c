/* router.c - longest-prefix routes. The table is small (tens to a few
 * thousand routes) and scanned linearly per message; each route keeps its
 * prefixes' lengths so a miss costs a couple of compares. */
#include <stdlib.h>
#include <string.h>
#include "router.h"

struct route {
  int from;                       /* connector index, -1 = any */
  int to;
  size_t dst_len, src_len;
  char dst_prefix[MSG_ADDR_LEN];
  char src_prefix[MSG_ADDR_LEN];
};

struct router {
  struct route *routes;
  unsigned count;
};

static int connector_index(const struct config *cfg, const char *name)
{
  for (unsigned i = 0; i < cfg->n_connectors; i++)
    if (strcmp(cfg->connectors[i].name, name) == 0)
      return (int)i;
  return -1;
}

struct router *router_create(const struct config *cfg)
{
  struct router *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->routes = calloc(cfg->n_routes ? cfg->n_routes : 1, sizeof *r->routes);
  if (!r->routes) {
    free(r);
    return NULL;
  }
  for (unsigned i = 0; i < cfg->n_routes; i++) {
    const struct config_route *c = &cfg->routes[i];
    struct route *rt = &r->routes[r->count];
    rt->to = connector_index(cfg, c->to);
    if (rt->to < 0)
      continue;   /* config_load refuses this; a router never routes to nowhere */
    rt->from = c->from[0] ? connector_index(cfg, c->from) : -1;
    if (c->from[0] && rt->from < 0)
      continue;
    memcpy(rt->dst_prefix, c->dst_prefix, sizeof rt->dst_prefix);
    memcpy(rt->src_prefix, c->src_prefix, sizeof rt->src_prefix);
    rt->dst_len = strlen(rt->dst_prefix);
    rt->src_len = strlen(rt->src_prefix);
    r->count++;
  }
  return r;
}

void router_destroy(struct router *r)
{
  if (!r)
    return;
  free(r->routes);
  free(r);
}

/* Orders two matching routes: longer destination prefix, then a specific
 * source connector, then a longer source prefix. */
static int more_specific(const struct route *a, const struct route *b)
{
  if (a->dst_len != b->dst_len)
    return a->dst_len > b->dst_len;
  if ((a->from >= 0) != (b->from >= 0))
    return a->from >= 0;
  return a->src_len > b->src_len;
}

int router_route(const struct router *r, int from, const struct msg *m)
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
    if (!best || more_specific(rt, best))
      best = rt;
  }
  return best ? best->to : -1;
}
