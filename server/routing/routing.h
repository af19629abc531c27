/* routing.h - the routing room: where a message goes. The routes of the
 * configuration (router.h) and the operator's plugins that may filter,
 * rewrite or route a message (plugin_host.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ROUTING_H
#define EMG_ROUTING_H

#include "router.h"
#include "plugin_host.h"

#endif
