/* endpoint.h - the endpoint room: the gateway's edge. Connectors and
 * their instances, each a thread that serves or keeps sessions (SMPP, UCP,
 * CIMD2) or HTTP (connector.h); the file-descriptor budget of listeners
 * (fd_budget.h); pauses kept across restarts (pause_state.h); and the
 * watch that logs when a route group's traffic moves between its members
 * (group_watch.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ENDPOINT_H
#define EMG_ENDPOINT_H

#include "connector.h"
#include "fd_budget.h"
#include "pause_state.h"
#include "group_watch.h"

#endif
