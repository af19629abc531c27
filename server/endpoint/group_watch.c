/* group_watch.c - groups switching members, in the log. See group_watch.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "connector.h"
#include "group_watch.h"
#include "log.h"

_Static_assert(CONFIG_ROUTE_TARGETS_MAX <= 32, "members fit an unsigned mask");

/* A route's group: its members as connector indexes, with their names. */
struct group {
  struct config_route route;       /* a copy: to[] names the members, line the route */
  int members[CONFIG_ROUTE_TARGETS_MAX];   /* connector index, -1 when unknown */
  unsigned usable;                 /* a bit per member that could take messages at the last look */
};

struct group_watch {
  pthread_mutex_t lock;
  struct group *groups;
  unsigned n;
  bool fresh;                      /* no look since the groups were set: take them as they are */
  struct log_category *log;
};

int group_watch_routes(struct group_watch *w, const struct config *cfg)
{
  unsigned n = 0;
  for (unsigned k = 0; k < cfg->n_routes; k++)
    n += cfg->routes[k].n_to > 1;
  struct group *groups = calloc(n ? n : 1, sizeof *groups);
  if (!groups)
    return -1;
  n = 0;
  for (unsigned k = 0; k < cfg->n_routes; k++) {
    const struct config_route *r = &cfg->routes[k];
    if (r->n_to < 2)
      continue;
    struct group *g = &groups[n++];
    g->route = *r;
    for (unsigned i = 0; i < r->n_to; i++) {
      const struct config_connector *cc = config_connector(cfg, r->to[i]);
      g->members[i] = cc ? (int)(cc - cfg->connectors) : -1;
    }
  }
  pthread_mutex_lock(&w->lock);
  free(w->groups);
  w->groups = groups;
  w->n = n;
  w->fresh = true;
  pthread_mutex_unlock(&w->lock);
  return 0;
}

struct group_watch *group_watch_create(const struct config *cfg)
{
  struct group_watch *w = calloc(1, sizeof *w);
  if (!w)
    return NULL;
  pthread_mutex_init(&w->lock, NULL);
  w->log = log_category("emg.route");
  if (group_watch_routes(w, cfg) == -1) {
    group_watch_destroy(w);
    return NULL;
  }
  return w;
}

void group_watch_destroy(struct group_watch *w)
{
  if (!w)
    return;
  free(w->groups);
  pthread_mutex_destroy(&w->lock);
  free(w);
}

/* A bit per member of g that can take messages now; why[i] says why
 * member i cannot. */
static unsigned usable_members(struct core *core, const struct group *g, const char *why[])
{
  unsigned mask = 0;
  for (unsigned i = 0; i < g->route.n_to; i++) {
    int index = g->members[i];
    why[i] = index >= 0 && (unsigned)index < core->n_connectors
               ? connector_unusable(core_connector(core, (unsigned)index)) : "not a connector";
    if (!why[i])
      mask |= 1u << i;
  }
  return mask;
}

/* Where route r's messages go while the members of mask are usable. */
static void destination(const struct config_route *r, unsigned mask, char *out, size_t len)
{
  if (!mask) {
    snprintf(out, len, "no member can take messages: they wait in %s's queue", r->to[0]);
    return;
  }
  size_t at = (size_t)snprintf(out, len, r->mode == CONFIG_ROUTE_FAILOVER ? "messages go to " : "messages are shared by ");
  bool first = true;
  for (unsigned i = 0; i < r->n_to && at < len; i++) {
    if (!(mask & 1u << i))
      continue;
    at += (size_t)snprintf(out + at, len - at, "%s%s", first ? "" : ", ", r->to[i]);
    first = false;
    if (r->mode == CONFIG_ROUTE_FAILOVER)
      break;
  }
}

void group_watch_look(struct group_watch *w, struct core *core)
{
  pthread_mutex_lock(&w->lock);
  for (unsigned k = 0; k < w->n; k++) {
    struct group *g = &w->groups[k];
    const struct config_route *r = &g->route;
    const char *why[CONFIG_ROUTE_TARGETS_MAX];
    unsigned now = usable_members(core, g, why), was = g->usable;
    g->usable = now;
    if (w->fresh || now == was)
      continue;
    char where[CONFIG_ROUTE_TARGETS_MAX * (CONFIG_NAME_LEN + 2) + 64];
    destination(r, now, where, sizeof where);
    const char *kind = r->mode == CONFIG_ROUTE_FAILOVER ? "failover" : "weighted";
    for (unsigned i = 0; i < r->n_to; i++) {
      unsigned bit = 1u << i;
      if ((was & bit) && !(now & bit))
        LOGW(w->log, "route of line %d (%s group): %s cannot take messages (%s): %s", r->line, kind, r->to[i],
             why[i], where);
      else if (!(was & bit) && (now & bit))
        LOGI(w->log, "route of line %d (%s group): %s can take messages again: %s", r->line, kind, r->to[i],
             where);
    }
  }
  w->fresh = false;
  pthread_mutex_unlock(&w->lock);
}
