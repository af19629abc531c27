/* account_change.h - what every change of the running accounts does
 * (account_change.c), from the admin API, a reload or the database.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ACCOUNT_CHANGE_H
#define EMG_ACCOUNT_CHANGE_H

#include "core.h"

/* Changes come one at a time: the caller holds this around them. */
void account_change_lock(void);
void account_change_unlock(void);
/* What waits in slot's queues is dropped, with a receipt to each origin. */
void account_change_drop_slot(struct core *c, int slot, const char *why);
/* Every connector unbinds the sessions the accounts no longer allow. */
void account_change_unbind_shut_out(struct core *c);

#endif
