/* plugin.h - the C ABI between emgd and its plugins, version 1.
 *
 * A plugin is a shared object exporting one symbol, a struct emg_plugin
 * named emg_plugin:
 *
 *   #include "plugin.h"
 *   EMG_PLUGIN_EXPORT const struct emg_plugin emg_plugin = {
 *     .abi_version = EMG_PLUGIN_ABI_VERSION,
 *     .init = my_init, .destroy = my_destroy, .before_receive = my_check,
 *   };
 *
 * emgd reads abi_version before anything else and loads the plugin only
 * when it equals its own EMG_PLUGIN_ABI_VERSION. Any change to a struct or a
 * hook below raises the version, so a plugin built against another
 * plugin.h is refused with a clear message instead of misread. The symbol
 * keeps its name across versions for that reason.
 *
 * This header stands alone: a plugin needs nothing else of emg (only libc),
 * and nothing of emgd's own structs leaks into the ABI. Messages and
 * receipts are seen through the views below, valid for one call only.
 *
 * Threading contract:
 * - Hooks are called concurrently, from the threads of every connector
 *   instance at once. A plugin's state must be read-only after init, or
 *   thread-safe (atomics, or locks held for a few instructions).
 * - Hooks must not block: no network, no disk, no waiting on other
 *   threads. Each call is timed; one that takes longer than the plugin's
 *   timeout_ms counts as failed and its result (a refusal, a target, a
 *   changed address) is thrown away. emgd cannot interrupt a hook, so a
 *   slow one still holds up the connector thread it runs on.
 * - init and destroy are called from one thread, never concurrently with a
 *   hook of the same state. A reload (SIGHUP) calls init for a new state
 *   (re-reading files and settings) before the old state is destroyed;
 *   both may be alive at once, and hooks on the old one may still be
 *   running while the new one is initialised.
 *
 * Every hook may be NULL: emgd then goes on as if the plugin had answered
 * EMG_PLUGIN_CONTINUE.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_PLUGIN_H
#define EMG_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define EMG_PLUGIN_ABI_VERSION 1u

/* The name of the one exported symbol. */
#define EMG_PLUGIN_SYMBOL "emg_plugin"

#define EMG_PLUGIN_EXPORT __attribute__((visibility("default")))

/* What a hook returns. Any negative value is a failure, handled by the
 * plugin's on_error setting ("pass": as if the plugin were absent;
 * "refuse": the message is refused). */
enum emg_plugin_result {
  EMG_PLUGIN_ERROR = -1,
  EMG_PLUGIN_CONTINUE = 0, /* accepted; route: no target chosen; after_*: done */
  EMG_PLUGIN_REFUSE = 1,   /* before_*: refuse the message; reason says why */
  EMG_PLUGIN_FLAG = 2,     /* before_*: accept, but count it and log reason */
  EMG_PLUGIN_ROUTE = 3     /* route: target holds the connector to send to */
};

/* Type of number, as SMPP and UCP carry it. */
enum emg_plugin_ton {
  EMG_PLUGIN_TON_UNKNOWN = 0,
  EMG_PLUGIN_TON_INTERNATIONAL = 1,
  EMG_PLUGIN_TON_NATIONAL = 2,
  EMG_PLUGIN_TON_ALPHANUMERIC = 5,
  EMG_PLUGIN_TON_ABBREVIATED = 6
};

/* Numbering plan: the one a plugin sets when it writes an E.164 number. */
#define EMG_PLUGIN_NPI_E164 1

/* Payload codings (the TP-DCS alphabets). */
enum emg_plugin_coding {
  EMG_PLUGIN_CODING_GSM7 = 0x00,
  EMG_PLUGIN_CODING_8BIT = 0x04,
  EMG_PLUGIN_CODING_UCS2 = 0x08
};

/* States of a receipt, with the values of SMPP's message_state. */
enum emg_plugin_state {
  EMG_PLUGIN_STATE_ENROUTE = 1,
  EMG_PLUGIN_STATE_DELIVERED = 2,
  EMG_PLUGIN_STATE_EXPIRED = 3,
  EMG_PLUGIN_STATE_DELETED = 4,
  EMG_PLUGIN_STATE_UNDELIVERABLE = 5,
  EMG_PLUGIN_STATE_ACCEPTED = 6,
  EMG_PLUGIN_STATE_UNKNOWN = 7,
  EMG_PLUGIN_STATE_REJECTED = 8
};

/* What came of sending a message (after_send). */
enum emg_plugin_send_status {
  EMG_PLUGIN_SENT = 0,           /* the SMSC (or the client, for MO) accepted it */
  EMG_PLUGIN_SEND_TEMPORARY = 1, /* refused for now: it will be sent again */
  EMG_PLUGIN_SEND_FAILED = 2     /* refused for good, or expired: it fails */
};

/* An address. In before_receive and before_send, addr is a buffer of cap
 * bytes the hook may rewrite (NUL-terminated, within cap), together with
 * ton and npi; elsewhere it is read-only. Numbers are digits without '+'
 * as most connectors give them, but a '+' may come from a client as is. */
struct emg_plugin_addr {
  char *addr;
  size_t cap;                 /* bytes addr holds, NUL included */
  uint8_t ton;                /* enum emg_plugin_ton */
  uint8_t npi;
};

/* One message (or one part of a concatenated message, in before_send and
 * after_send), as a hook sees it. Only src and dst may be changed, and only
 * in the before_* hooks; emgd ignores changes to anything else. */
struct emg_plugin_msg {
  uint64_t id;                /* the gateway's id; 0 in before_receive and route (not given yet) */
  struct emg_plugin_addr src;
  struct emg_plugin_addr dst;
  const char *text;           /* the text as UTF-8, NUL-terminated; NULL for binary data, when
                                 the payload is not valid in its coding, or memory is short */
  size_t text_len;            /* bytes of text, NUL not counted */
  int binary;                 /* 1: 8-bit data, no text */
  uint8_t coding;             /* enum emg_plugin_coding */
  const uint8_t *data;        /* the payload as coded (septets, octets or UTF-16BE), UDH not included */
  size_t data_len;
  const char *origin_connector; /* the connector it came in on */
  const char *origin_user;    /* the account that submitted it ("" when none) */
  const char *target_connector; /* where it goes; "" before routing */
};

/* A delivery receipt from an SMSC, matched to its message (after_dlr). */
struct emg_plugin_receipt {
  const char *id;             /* the SMSC's message id */
  uint8_t state;              /* enum emg_plugin_state */
  uint16_t err;               /* the network or SMSC error code; 0 = none */
  const char *src;            /* the original message's sender */
  const char *dst;            /* and recipient */
};

/* One of the plugin's settings from the configuration: every key of its
 * group but path, name, on_error and timeout_ms, its value as text. */
struct emg_plugin_setting {
  const char *key;
  const char *value;
};

struct emg_plugin {
  unsigned abi_version;       /* EMG_PLUGIN_ABI_VERSION */

  /* Sets up a state from the settings (valid during the call only: copy
   * what you keep) and stores it in *state (NULL is fine). Returns 0, or
   * -1 with a message in err (errlen bytes), having freed what it took:
   * destroy is not called then. emgd refuses to start, or refuses the
   * reload and keeps the running plugins. A plugin should refuse settings
   * it does not know, so that a typo is not ignored. */
  int (*init)(const struct emg_plugin_setting *settings, size_t n, void **state, char *err,
              size_t errlen);
  void (*destroy)(void *state);

  /* A message from a client (or an MO from an SMSC), before it is routed
   * and stored. May rewrite msg->src and msg->dst (number normalisation).
   * CONTINUE accepts, REFUSE refuses with a reason (reason_len bytes), FLAG
   * accepts and has emgd count and log the reason. */
  int (*before_receive)(void *state, struct emg_plugin_msg *msg, char *reason, size_t reason_len);

  /* Routing, after before_receive: ROUTE with a connector's name in target
   * (target_len bytes) sends the message there instead of where the routes
   * would; CONTINUE leaves it to the next plugin, then to the routes. */
  int (*route)(void *state, const struct emg_plugin_msg *msg, char *target, size_t target_len);

  /* A message (part) about to leave on its target connector. As
   * before_receive; a refusal fails it with a REJECTED receipt to its
   * origin. */
  int (*before_send)(void *state, struct emg_plugin_msg *msg, char *reason, size_t reason_len);

  /* What came of sending it: status is an enum emg_plugin_send_status.
   * Returns CONTINUE, or a negative value when the hook failed. */
  int (*after_send)(void *state, const struct emg_plugin_msg *msg, int status);

  /* A receipt for the message of gateway id msg_id. As after_send. */
  int (*after_dlr)(void *state, uint64_t msg_id, const struct emg_plugin_receipt *receipt);
};

#endif
