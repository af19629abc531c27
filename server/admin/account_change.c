/* account_change.c - what every change of the running accounts does,
 * whether it comes from the admin API, a reload (account_admin.c) or the
 * database (account_db.c): one at a time, under one lock; what a removed
 * account left in the queues dropped; the sessions it shuts out unbound.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include "account_change.h"
#include "endpoint.h"

static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;

void account_change_lock(void)
{
  pthread_mutex_lock(&change_lock);
}

void account_change_unlock(void)
{
  pthread_mutex_unlock(&change_lock);
}

/* What waits in slot's queues on every connector (a removed account's,
 * or what it left to a slot now given to a new one) is dropped, each
 * message with a receipt to its origin. */
void account_change_drop_slot(struct core *c, int slot, const char *why)
{
  for (unsigned i = 0; i < c->n_connectors; i++)
    connector_drop_account_queue(core_connector(c, i), slot, why);
}

/* After a change: every connector unbinds the sessions it shuts out. */
void account_change_unbind_shut_out(struct core *c)
{
  for (unsigned i = 0; i < c->n_connectors; i++)
    connector_accounts_changed(core_connector(c, i));
}
