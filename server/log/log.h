/* log.h - logging through log4c, with a category per module and connector.
 *
 * Categories are dotted places: "emg.core", "emg.router", "emg.conn.ucp-in".
 * The level test is an inline compare against a cached threshold, so a
 * disabled debug line costs a branch, not a call; enabled lines are
 * formatted in the calling thread and written in batches by one writer
 * thread, so debug levels do not stall the message path.
 *
 * Lines read "2026-11-30 06:50:01.123 INFO  emg.conn.ucp-in: text". One call
 * is one line: line breaks in the text become spaces, and text longer than
 * LOG_LINE_MAX is cut at a character boundary and ends in "...".
 *
 * Nothing here prints more than the caller passes: callers never pass
 * passwords (or tokens) to a log call.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_LOG_H
#define EMG_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "access_log.h"   /* the room's other part: the per-message access log */

enum log_level {
  LOG_OFF = -1,            /* a threshold only: nothing is written */
  LOG_ERROR = 0,
  LOG_WARN,
  LOG_INFO,
  LOG_DEBUG,
  LOG_DEBUG2               /* every PDU and message */
};

/* Longest line written, time stamp and '\n' included. */
#define LOG_LINE_MAX 2048

struct log_category {
  const char *name;
  _Atomic(enum log_level) threshold;  /* lines above it are dropped; LOG_OFF when not running */
  void *impl;                          /* log4c's category */
};

/* Starts logging at level, to file (NULL or "" = stderr). A log4crc found
 * by log4c's usual rules ($LOG4C_RCPATH/log4crc, $HOME/.log4crc, ./log4crc)
 * may refine categories and appenders; it is read at the first log_init of
 * the process (see etc/log4crc). Not while running: call again only after
 * log_shutdown. Returns 0, or -1 when the file cannot be opened, the
 * log4crc cannot be loaded or the writer cannot start (errno says why).
 * The writer is a thread, which a fork() does not copy: daemonise first. */
int log_init(enum log_level level, const char *file);

/* file for log_init: the systemd journal, each line with its priority. */
#define LOG_JOURNAL "journal"
/* A stream into the journal whose lines begin "<priority>" (log_journal.c,
 * apart: sd-journal.h brings syslog.h, whose LOG_INFO and the like clash
 * with the levels here); -errno on failure. */
int log_journal_fd(void);

/* Opens the log file again by its name (after logrotate moved it): lines
 * from now on go to the new file. Returns 0, or -1 with errno when it
 * cannot be opened (the old one is kept). */
int log_reopen(void);

/* Writes everything buffered and stops the writer; categories stay valid
 * but write nothing until the next log_init. No thread may be inside a log
 * call meanwhile. */
void log_shutdown(void);

/* A line that a flood would repeat (one per refused connection): written at
 * most once per period, saying how many were left out since. One thread
 * uses one of these (no lock). */
struct log_every {
  uint64_t next_ms;                /* the end of the period */
  uint64_t skipped;
  unsigned lines;                  /* written in this period */
};
/* True when the line is due now (monotonic ms); *skipped is then the number
 * left out since the last one. False: left out, and counted. */
bool log_every_due(struct log_every *e, uint64_t now_ms, uint64_t period_ms, uint64_t *skipped);
/* The same with up to burst lines in each period. */
bool log_burst_due(struct log_every *e, uint64_t now_ms, uint64_t period_ms, unsigned burst, uint64_t *skipped);

/* The category for name, created on first use (before or after log_init);
 * the same pointer for the same name for the rest of the process, so it is
 * fetched once and kept. Thread-safe. NULL only when out of memory. */
struct log_category *log_category(const char *name);

/* Sets the level of the root category, i.e. of every category a log4crc
 * gives no priority of its own (e.g. after a reload); while running. */
void log_set_level(enum log_level level);

static inline bool log_enabled(const struct log_category *c, enum log_level level)
{
  return c && level <= atomic_load_explicit(&c->threshold, memory_order_relaxed);
}

/* Writes one line (printf format, no trailing newline needed). */
void log_write(struct log_category *c, enum log_level level, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

#define LOG(cat, level, ...)                                                                         \
  do {                                                                                               \
    if (log_enabled((cat), (level)))                                                                 \
      log_write((cat), (level), __VA_ARGS__);                                                        \
  } while (0)

#define LOGE(cat, ...) LOG((cat), LOG_ERROR, __VA_ARGS__)
#define LOGW(cat, ...) LOG((cat), LOG_WARN, __VA_ARGS__)
#define LOGI(cat, ...) LOG((cat), LOG_INFO, __VA_ARGS__)
#define LOGD(cat, ...) LOG((cat), LOG_DEBUG, __VA_ARGS__)
#define LOGD2(cat, ...) LOG((cat), LOG_DEBUG2, __VA_ARGS__)

#endif
