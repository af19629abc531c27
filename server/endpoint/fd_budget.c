/* fd_budget.c - the process's descriptors shared out among its listeners.
 *
 * Each listener holds at most its share: an SMPP/UCP server connector its
 * instances and unbound_max, an HTTP server connector max_connections, the
 * admin API FD_BUDGET_ADMIN. When the shares and what emgd keeps open
 * itself do not fit the open files limit, the HTTP connectors' shares
 * (the only large ones) are lowered in proportion until they do; the
 * admin API's is never lowered, so an operator can always get in.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <sys/resource.h>
#include "fd_budget.h"

static bool is_listener(const struct config_connector *c)
{
  return c->mode == CONFIG_CONN_SERVER;
}

static unsigned listener_share(const struct config_connector *c)
{
  return c->http ? c->max_connections : c->instances + c->unbound_max;
}

/* About what emgd keeps open besides its listeners' connections: stdio,
 * logs, the journal, its lock and spares, the database, and per thread
 * its loop (epoll and wake-up), its session, and HTTP clients' pools. */
static unsigned own_descriptors(const struct config *cfg)
{
  unsigned n = 48;
  for (unsigned i = 0; i < cfg->n_connectors; i++) {
    const struct config_connector *c = &cfg->connectors[i];
    n += 4 + 3 * c->instances;
    if (c->http)
      n += (c->mode == CONFIG_CONN_CLIENT ? c->connections : c->callback_connections) * c->instances;   /* callbacks */
  }
  return n;
}

static uint64_t open_files_limit(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == RLIM_INFINITY)
    return UINT64_MAX;
  return rl.rlim_cur;
}

/* The room left for HTTP connectors after everything else, and what they
 * would take uncut. */
static void http_room(const struct config *cfg, uint64_t limit, uint64_t *room, uint64_t *wanted)
{
  uint64_t fixed = own_descriptors(cfg) + (cfg->has_admin ? FD_BUDGET_ADMIN : 0);
  *wanted = 0;
  for (unsigned i = 0; i < cfg->n_connectors; i++) {
    const struct config_connector *c = &cfg->connectors[i];
    if (!is_listener(c))
      continue;
    if (c->http)
      *wanted += listener_share(c);
    else
      fixed += listener_share(c);
  }
  *room = limit > fixed ? limit - fixed : 0;
}

static unsigned http_share(const struct config_connector *c, uint64_t room, uint64_t wanted)
{
  if (wanted <= room)
    return c->max_connections;
  unsigned share = (unsigned)(room * c->max_connections / wanted);
  return share ? share : 1;
}

unsigned fd_budget_http_limit(const struct config *cfg, unsigned index)
{
  uint64_t room, wanted;
  http_room(cfg, open_files_limit(), &room, &wanted);
  return http_share(&cfg->connectors[index], room, wanted);
}

void fd_budget_plan(const struct config *cfg, struct fd_budget *b)
{
  b->limit = open_files_limit();
  b->own = own_descriptors(cfg);
  http_room(cfg, b->limit, &b->http_room, &b->http_wanted);
  b->cut = b->http_wanted > b->http_room;
  b->listeners = cfg->has_admin ? FD_BUDGET_ADMIN : 0;
  for (unsigned i = 0; i < cfg->n_connectors; i++) {
    const struct config_connector *c = &cfg->connectors[i];
    if (is_listener(c))
      b->listeners += c->http ? http_share(c, b->http_room, b->http_wanted) : listener_share(c);
  }
  b->fits = (uint64_t)b->own + b->listeners <= b->limit;
}

void fd_budget_describe(const struct config *cfg, const struct fd_budget *b, char *out, size_t cap)
{
  size_t n = (size_t)snprintf(out, cap, "descriptors: listeners may hold %u (", b->listeners);
  const char *sep = "";
  for (unsigned i = 0; i < cfg->n_connectors && n < cap; i++) {
    const struct config_connector *c = &cfg->connectors[i];
    if (!is_listener(c))
      continue;
    unsigned share = c->http ? http_share(c, b->http_room, b->http_wanted) : listener_share(c);
    n += (size_t)snprintf(out + n, cap - n, "%s%s %u%s", sep, c->name, share,
                          c->http && share < c->max_connections ? " (max_connections lowered to fit)" : "");
    sep = ", ";
  }
  if (n < cap && cfg->has_admin)
    n += (size_t)snprintf(out + n, cap - n, "%sadmin %u", sep, FD_BUDGET_ADMIN);
  if (n < cap)
    snprintf(out + n, cap - n, "), emgd itself about %u; open files limit %llu", b->own,
             (unsigned long long)b->limit);
}
