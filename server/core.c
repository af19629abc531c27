/* core.c - the gateway's shared state. */
#include <stdlib.h>
#include <string.h>
#include "core.h"

int core_init(struct core *c, const struct config *cfg)
{
  memset(c, 0, sizeof *c);
  c->cfg = cfg;
  c->log = log_category("emg.core");
  c->router = router_create(cfg);
  c->dlr = dlrtab_create(cfg->dlr_table_size, cfg->dlr_ttl_s);
  c->connectors = calloc(cfg->n_connectors ? cfg->n_connectors : 1, sizeof *c->connectors);
  if (!c->router || !c->dlr || !c->connectors) {
    core_destroy(c);
    return -1;
  }
  ids_init(&c->ids, cfg->node_id, cfg->id_window, 1);
  return 0;
}

void core_destroy(struct core *c)
{
  router_destroy(c->router);
  c->router = NULL;
  if (c->dlr)
    dlrtab_destroy(c->dlr);
  c->dlr = NULL;
  free(c->connectors);
  c->connectors = NULL;
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
