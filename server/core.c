/* core.c - the gateway's shared state. */
#include <stdlib.h>
#include <string.h>
#include "core.h"

int core_init(struct core *c, const struct config *cfg)
{
  memset(c, 0, sizeof *c);
  c->cfg = cfg;
  c->log = log_category("emg.core");
  atomic_init(&c->router, router_create(cfg));
  c->dlr = dlrtab_create(cfg->dlr_table_size, cfg->dlr_ttl_s);
  c->connectors = calloc(cfg->n_connectors ? cfg->n_connectors : 1, sizeof *c->connectors);
  if (!atomic_load(&c->router) || !c->dlr || !c->connectors) {
    core_destroy(c);
    return -1;
  }
  ids_init(&c->ids, cfg->node_id, cfg->id_window, 1);
  return 0;
}

void core_destroy(struct core *c)
{
  router_destroy(atomic_exchange(&c->router, NULL));
  for (unsigned i = 0; i < c->n_retired; i++)
    router_destroy(c->retired_routers[i]);
  c->n_retired = 0;
  if (c->dlr)
    dlrtab_destroy(c->dlr);
  c->dlr = NULL;
  free(c->connectors);
  c->connectors = NULL;
}

void core_swap_router(struct core *c, struct router *r)
{
  struct router *old = atomic_exchange(&c->router, r);
  /* Kept, not freed: an instance thread may be in router_route with it.
   * Routers are small and reloads rare; past the array, the oldest goes,
   * long after any route call on it has returned. */
  if (c->n_retired == sizeof c->retired_routers / sizeof c->retired_routers[0]) {
    router_destroy(c->retired_routers[0]);
    memmove(c->retired_routers, c->retired_routers + 1,
            (c->n_retired - 1) * sizeof c->retired_routers[0]);
    c->n_retired--;
  }
  c->retired_routers[c->n_retired++] = old;
}

enum core_admit core_admit(struct core *c)
{
  uint64_t n = atomic_load_explicit(&c->in_flight, memory_order_relaxed);
  if (n >= c->cfg->max_total_queue)
    return CORE_ADMIT_FULL;
  if (n >= c->cfg->max_total_queue_soft)
    return CORE_ADMIT_SLOW;
  return CORE_ADMIT_OK;
}
