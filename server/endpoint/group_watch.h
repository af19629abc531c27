/* group_watch.h - failover and weighted groups switching members, told in
 * the log.
 *
 * The router picks a group's member per message without keeping state. So
 * that an operator reads when and why a group's traffic moved, the groups'
 * members are looked at once a second: a member that cannot take messages
 * any more (paused, no session bound, its queue full) is logged with the
 * reason and where its messages go now, and again when it can. What the
 * groups looked like when watching began (or after a reload put new routes
 * in place) is taken as it is, without a line.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_GROUP_WATCH_H
#define EMG_GROUP_WATCH_H

#include "config.h"
#include "core.h"

struct group_watch;

/* Watches cfg's groups (copied: cfg may go); NULL when out of memory. */
struct group_watch *group_watch_create(const struct config *cfg);
void group_watch_destroy(struct group_watch *w);

/* The groups of a reload's routes, from the next look on. -1 when out of
 * memory (the groups watched stay). Any thread. */
int group_watch_routes(struct group_watch *w, const struct config *cfg);

/* Looks at the groups' members and logs each change since the last look.
 * Any thread; meant for once a second. */
void group_watch_look(struct group_watch *w, struct core *core);

#endif
