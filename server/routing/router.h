/* router.h - which connector a message goes to.
 *
 * Routes come from the configuration: each may name a source connector, a
 * destination prefix and a source address prefix, and names a target.
 * Routes may also name the submitting account (m->origin.user).
 * The most specific route wins: the longest destination prefix first, then
 * a route for this source connector over one for any, then one for this
 * account over one for any, then the longest source prefix, then the
 * earliest in the file. A route with no condition is the default.
 *
 * A target is one connector or a group. A failover group takes its first
 * usable connector, in the order of the file. A weighted group spreads
 * messages over its usable connectors by weight, in the smooth weighted
 * round robin order (nginx's: with weights 3,1,1 the order a b a c a, so no
 * connector gets a burst); while a connector is unusable, the messages it
 * would have had go to the usable ones in proportion to their weights.
 *
 * The parts of a concatenated message (a concatenation IE in its UDH) take
 * one connector of a weighted group: the pick is a function of the message's
 * source, destination and reference, not of the rotation, so parts routed
 * at different times or by different threads agree, while different
 * messages still spread by weight. A failover group keeps them together by
 * its nature. Either splits them only when a connector goes down or comes
 * back between two parts. That is accepted: a part that lands elsewhere
 * reaches the handset through another SMSC, and the handset joins parts by
 * sender and reference, so they still meet unless the SMSCs present the
 * sender differently.
 *
 * A router is immutable but for the weighted groups' counters, and holds no
 * pointer into the config it was built from: a reload (SIGHUP) builds a new
 * one from the new config alone, and the caller swaps them. router_route
 * takes no lock and allocates nothing; any number of threads may call it at
 * once.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ROUTER_H
#define EMG_ROUTER_H

#include <stdbool.h>
#include "config.h"
#include "msg.h"

struct router;

/* Builds the routes of cfg; connector indexes are positions in
 * cfg->connectors. NULL when out of memory (the config was checked). */
struct router *router_create(const struct config *cfg);
void router_destroy(struct router *r);

/* Whether a connector can take a message now: for emgd, it is not paused,
 * has a bound session and its queue is not full. Called from router_route's thread,
 * for members of the winning route's group only, with ctx as given. */
typedef bool (*router_usable_fn)(void *ctx, int connector);

/* The target connector index for m arriving on connector from, or -1 when
 * no route matches. usable NULL counts every connector as usable. When no
 * member of the group is usable, the message is not refused: failover
 * returns the first member and weighted its regular pick, so that it waits
 * in that connector's queue until the connector is back. */
int router_route(const struct router *r, int from, const struct msg *m, router_usable_fn usable,
                 void *ctx);

/* The same, also giving the route's account (*user, "" when the route names
 * none) for a target that is a server connector: MO messages and messages
 * between clients go to that account's sessions. */
int router_route_user(const struct router *r, int from, const struct msg *m,
                      router_usable_fn usable, void *ctx, const char **user);

#endif
