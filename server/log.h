/* log.h - logging through log4c, with a category per module and connector.
 *
 * Categories are dotted places: "emg.core", "emg.router", "emg.conn.ucp-in".
 * The level test is an inline compare against a cached threshold, so a
 * disabled debug line costs a branch, not a call; enabled lines are
 * formatted in the calling thread and written in batches, so debug levels
 * do not stall the message path. Passwords are never passed to a log call. */
#ifndef EMG_LOG_H
#define EMG_LOG_H

#include <stdbool.h>

enum log_level {
  LOG_ERROR = 0,
  LOG_WARN,
  LOG_INFO,
  LOG_DEBUG,
  LOG_DEBUG2               /* every PDU and message */
};

struct log_category {
  const char *name;
  enum log_level threshold;  /* lines above it are dropped */
  void *impl;                /* log4c's category */
};

/* Starts logging at level, to file (NULL or "" = stderr). A log4crc found
 * by log4c's usual rules may refine categories and appenders. Returns 0 or -1. */
int log_init(enum log_level level, const char *file);

/* Flushes what is buffered and stops the writer. */
void log_shutdown(void);

/* The category for name, created on first use; lives until log_shutdown.
 * Thread-safe. NULL only when out of memory. */
struct log_category *log_category(const char *name);

/* Changes the level of every category (e.g. after a reload). */
void log_set_level(enum log_level level);

static inline bool log_enabled(const struct log_category *c, enum log_level level)
{
  return c && level <= c->threshold;
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
