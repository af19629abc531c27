/* router.h - which connector a message goes to.
 *
 * Routes come from the configuration: each may name a source connector, a
 * destination prefix and a source address prefix, and names a target.
 * The most specific route wins: the longest destination prefix first, then
 * a route for this source connector over one for any, then the longest
 * source prefix, then the earliest in the file. A route with no condition is
 * the default. A router is immutable: a reload builds a new one. */
#ifndef EMG_ROUTER_H
#define EMG_ROUTER_H

#include "config.h"
#include "msg.h"

struct router;

/* Builds the routes of cfg; connector indexes are positions in
 * cfg->connectors. NULL when out of memory (the config was checked). */
struct router *router_create(const struct config *cfg);
void router_destroy(struct router *r);

/* The target connector index for m arriving on connector from, or -1 when
 * no route matches. */
int router_route(const struct router *r, int from, const struct msg *m);

#endif
