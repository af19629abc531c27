/* plugin_host.h - loads the plugins of the configuration (plugins/plugin.h)
 * and calls their hooks for the gateway, keeping what a plugin does wrong
 * from reaching the message path.
 *
 * Plugins are called in the order of the file; each sees what the ones
 * before it changed. Each call is timed. A hook that fails (a negative
 * result, an answer its hook may not give, an address left without its NUL,
 * an unknown target connector) or that takes longer than the plugin's
 * timeout_ms has its result thrown away and is handled by the plugin's
 * on_error: "pass" goes on as if the plugin were absent, "refuse" refuses
 * the message (PLUGIN_HOST_FAILED). Either way the message is never lost:
 * it goes on, or its origin hears of the refusal. Every call, refusal,
 * flag, failure and time-out is counted per plugin (plugin_host_stats).
 *
 * A host is immutable after plugin_host_load but for its atomic counters,
 * and holds no pointer into the config it was built from. Any number of
 * threads may call the hooks at once (the plugins keep the threading
 * contract of plugin.h). A reload builds a whole new host from the new
 * config with plugin_host_load (the plugins' init runs again, so files they
 * read are read again) and the caller swaps it in atomically:
 *
 *   struct plugin_host *fresh = plugin_host_load(cfg, err, sizeof err);
 *   if (!fresh) -> refuse the reload with err, keep the running host
 *   old = atomic_exchange(&core->plugins, fresh);
 *   ... plugin_host_destroy(old) once no thread can still be inside a call
 *   on it: core_swap_plugins hands it to a grace period (lib/grace.h).
 *
 * Every function takes a NULL host as a host without plugins.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_PLUGIN_HOST_H
#define EMG_PLUGIN_HOST_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "msg.h"
#include "plugin.h"

struct plugin_host;

enum plugin_host_verdict {
  PLUGIN_HOST_ACCEPT = 0,  /* go on */
  PLUGIN_HOST_REFUSE = 1,  /* a plugin refused the message: a permanent refusal */
  PLUGIN_HOST_FAILED = 2   /* a plugin failed and its on_error is "refuse": the message is
                              refused for now (a temporary error: the client may retry) */
};

/* Room for a refusal's reason; it reads "PLUGIN: why". */
#define PLUGIN_HOST_REASON_LEN 256

/* Loads and initialises every plugin of cfg, in order (cfg may be freed
 * afterwards). Returns the host (plugin_host_destroy frees it; a config
 * without plugins gives a host without plugins), or NULL with every
 * problem in err, one per line as "FILE:LINE: plugins.[i].KEY: what": a
 * file that cannot be loaded (its path and dlerror()), one that is no
 * plugin or was built for another ABI version, a plugin whose init
 * refused its settings. Plugins loaded before a failure are destroyed. */
struct plugin_host *plugin_host_load(const struct config *cfg, char *err, size_t errlen);

/* Destroys every plugin's state and unloads them; h may be NULL. No thread
 * may be in a call on h. */
void plugin_host_destroy(struct plugin_host *h);

/* A message arriving on origin_connector from account user, before it is
 * routed, given its id and stored (the gateway calls it first, right after
 * admission). Plugins may rewrite m->src and m->dst (addr, ton, npi),
 * which is written back to m only when the message is accepted. Returns
 * ACCEPT, REFUSE or FAILED; on the latter two, reason (reason_len bytes,
 * PLUGIN_HOST_REASON_LEN is enough) says which plugin and why. */
enum plugin_host_verdict plugin_host_before_receive(struct plugin_host *h, struct msg *m,
                                                    const char *origin_connector, const char *user,
                                                    char *reason, size_t reason_len);

/* Routing by plugins, after before_receive and before the routes. *target
 * is the index in cfg->connectors of the connector the first plugin chose
 * (its only account, for a server connector), or -1 when none chose: the
 * routes decide. Returns ACCEPT, or FAILED with a reason when a plugin
 * with on_error "refuse" failed. */
enum plugin_host_verdict plugin_host_route(struct plugin_host *h, const struct msg *m,
                                           const char *origin_connector, const char *user,
                                           int *target, char *reason, size_t reason_len);

/* A message (part) about to be sent on target_connector; its origin is
 * taken from m->origin. Plugins may rewrite m->src and m->dst as in
 * before_receive. On REFUSE or FAILED the gateway fails the message with a
 * REJECTED receipt to its origin. */
enum plugin_host_verdict plugin_host_before_send(struct plugin_host *h, struct msg *m,
                                                 const char *target_connector, char *reason,
                                                 size_t reason_len);

/* What came of sending m on target_connector: on the submit response (or
 * when the message fails for good without one). Failures are only counted:
 * there is nothing left to refuse. */
void plugin_host_after_send(struct plugin_host *h, const struct msg *m, const char *target_connector,
                            enum emg_plugin_send_status status);

/* A receipt from an SMSC, matched in the DLR table to the message of id
 * msg_id. Failures are only counted. */
void plugin_host_after_dlr(struct plugin_host *h, uint64_t msg_id, const struct msg_receipt *r);

/* One plugin's name and counters, as the admin API shows them. */
struct plugin_host_stats {
  char name[CONFIG_NAME_LEN];
  char path[CONFIG_PATH_LEN];
  uint64_t calls;          /* hook calls */
  uint64_t refusals;       /* messages a hook refused (REFUSE) */
  uint64_t flagged;        /* messages a hook accepted but flagged (FLAG) */
  uint64_t errors;         /* hooks that failed */
  uint64_t timeouts;       /* hooks that took longer than timeout_ms */
};

/* How many plugins h holds. */
unsigned plugin_host_count(const struct plugin_host *h);

/* Fills *out with plugin i's (in the order of the file) name and counters,
 * read without a lock. Returns 0, or -1 when there is no plugin i. */
int plugin_host_stats(const struct plugin_host *h, unsigned i, struct plugin_host_stats *out);

#endif
