/* access_log.h - one line per message in its final state, in a file of
 * its own (general.access_log), as Kannel's access-log: for an operator
 * who greps what became of a message, and for billing.
 *
 *   2026-12-02T08:00:00.123Z id=2533274790402059 account=load in=ucp-in
 *   out=smpp-out from=4917000573381 to=4917100314582 part=1/1
 *   state=delivered smsc_id=1796197585006000 error=0
 *
 * (one line). A value with a blank, a quote, a backslash or a control
 * character is quoted, those escaped. Writes are buffered and flushed once
 * a second (access_log_flush), and reopened for logrotate on SIGUSR1 (and SIGHUP).
 * Thread-safe: one lock.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ACCESS_LOG_H
#define EMG_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>

struct access_log;

/* Opens path for appending (created 0640). NULL with err filled when it
 * cannot be. */
struct access_log *access_log_open(const char *path, char *err, size_t err_len);
void access_log_close(struct access_log *a);
/* Closes and opens the file again (a rotated file is let go). 0, or -1
 * with errno (the old one stays in use). */
int access_log_reopen(struct access_log *a);
void access_log_flush(struct access_log *a);

struct access_line {
  uint64_t id;
  const char *account, *in, *out;  /* NULL or "" = "-" */
  const char *from, *to;
  unsigned part, parts;            /* 0 parts: a whole message */
  const char *state;               /* "delivered", "undeliverable", "sent" (no receipt asked), ... */
  const char *smsc_id;
  unsigned error;
};

void access_log_write(struct access_log *a, const struct access_line *l);

#endif
