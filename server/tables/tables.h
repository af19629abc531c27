/* tables.h - the tables room: what emgd holds in memory about messages,
 * each safe for the threads that share it. Queues (queue.h) and the
 * messages scheduled for later (schedule.h), the DLR table (dlr.h), ids
 * (ids.h), each message's history (history.h), the joins of long
 * messages' parts and receipts (mo_join.h, receipt_join.h) and the
 * per-second series behind rates and graphs (series.h). None logs or
 * touches a socket.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_TABLES_H
#define EMG_TABLES_H

#include "queue.h"
#include "schedule.h"
#include "dlr.h"
#include "ids.h"
#include "history.h"
#include "mo_join.h"
#include "receipt_join.h"
#include "series.h"

#endif
