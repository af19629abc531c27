/* admin_totals.c - the gateway's totals, one table that both /api/status
 * (admin_status.c) and /metrics (admin_metrics.c) read: each counter's
 * JSON key, Prometheus family, label and help, and its value. Apart from
 * both so that the calls between them go one way.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "admin_internal.h"

const struct total admin_totals[] = {
#define TOTAL(key, metric, label, field, help) { key, metric, label, help, offsetof(struct core_stats, field) }
  TOTAL("received", "emg_messages_received_total", NULL, received, "Messages accepted from clients."),
  TOTAL("sent", "emg_messages_sent_total", NULL, sent, "Messages accepted by their destination."),
  TOTAL("failed", "emg_messages_failed_total", NULL, failed,
        "Messages refused for good by their destination or dropped by the operator."),
  TOTAL("expired", "emg_messages_expired_total", NULL, expired,
        "Messages whose validity passed before they could be sent."),
  TOTAL("retried", "emg_messages_retried_total", NULL, retried,
        "Sends repeated after a temporary error or a lost connection."),
  TOTAL("rerouted", "emg_messages_rerouted_total", NULL, rerouted,
        "Messages moved from one connector's queue to another's (drain, reroute)."),
  /* Every reason of enum core_refusal, keyed "refused_" and its name. */
  TOTAL("refused_rate", "emg_messages_refused_total", "reason=\"rate\"", refused[CORE_REFUSED_RATE],
        "Messages refused on their way in, by reason."),
  TOTAL("refused_account_limit", "emg_messages_refused_total", "reason=\"account_limit\"",
        refused[CORE_REFUSED_ACCOUNT_LIMIT], NULL),
  TOTAL("refused_credit", "emg_messages_refused_total", "reason=\"credit\"", refused[CORE_REFUSED_CREDIT], NULL),
  TOTAL("refused_queue_full", "emg_messages_refused_total", "reason=\"queue_full\"",
        refused[CORE_REFUSED_QUEUE_FULL], NULL),
  TOTAL("refused_connector_queue_full", "emg_messages_refused_total", "reason=\"connector_queue_full\"",
        refused[CORE_REFUSED_CONNECTOR_QUEUE_FULL], NULL),
  TOTAL("refused_no_route", "emg_messages_refused_total", "reason=\"no_route\"", refused[CORE_REFUSED_NO_ROUTE], NULL),
  TOTAL("refused_plugin", "emg_messages_refused_total", "reason=\"plugin\"", refused[CORE_REFUSED_PLUGIN], NULL),
  TOTAL("refused_too_long", "emg_messages_refused_total", "reason=\"too_long\"", refused[CORE_REFUSED_TOO_LONG], NULL),
  TOTAL("refused_journal", "emg_messages_refused_total", "reason=\"journal\"", refused[CORE_REFUSED_JOURNAL], NULL),
  TOTAL("refused_other", "emg_messages_refused_total", "reason=\"other\"", refused[CORE_REFUSED_OTHER], NULL),
  TOTAL("slowed", "emg_acks_slowed_total", NULL, slowed,
        "Acks held back because max_total_queue_soft was passed."),
  TOTAL("receipts_in", "emg_receipts_in_total", NULL, receipts_in, "Delivery receipts received from SMSCs."),
  TOTAL("delivered", "emg_messages_delivered_total", NULL, delivered,
        "Messages whose receipt from the SMSC says DELIVERED."),
  TOTAL("receipts_out", "emg_receipts_out_total", NULL, receipts_out, "Delivery receipts delivered to clients."),
  TOTAL("receipts_unmatched", "emg_receipts_unmatched_total", NULL, receipts_unmatched,
        "Receipts from SMSCs that matched no message."),
  TOTAL("mo_in", "emg_mo_received_total", NULL, mo_in, "MO messages received from SMSCs."),
  TOTAL("binds_refused", "emg_binds_refused_total", NULL, binds_refused,
        "Binds refused for an unknown account or a wrong password."),
  TOTAL("logins_blocked", "emg_logins_blocked_total", NULL, logins_blocked,
        "Logins refused unread: their address had failed auth_max_failures times."),
  TOTAL("admin_logins_blocked", "emg_admin_logins_blocked_total", NULL, admin_logins_blocked,
        "Admin API requests refused unread: their address had sent auth_max_failures wrong tokens."),
  TOTAL("sessions_refused", "emg_sessions_refused_total", NULL, sessions_refused,
        "Connections beyond a server connector's instances."),
  TOTAL("reloads", "emg_reloads_total", NULL, reloads, "Configuration reloads done."),
  TOTAL("reloads_refused", "emg_reloads_refused_total", NULL, reloads_refused,
        "Configuration reloads refused (errors in the file)."),
#undef TOTAL
};
const size_t admin_totals_count = sizeof admin_totals / sizeof admin_totals[0];

uint64_t admin_total_value(const struct core *c, const struct total *t)
{
  return atomic_load((const _Atomic uint64_t *)((const char *)&c->stats + t->offset));
}
