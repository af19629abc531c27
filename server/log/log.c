/* log.c - emgd's logging: log4c categories, one line format, and one writer
 * thread that turns the lines of every thread into large writes.
 *
 * The path of an enabled line: LOG() compares against the category's cached
 * threshold; log_write hands the text to log4c, which formats it once into a
 * stack buffer and walks the category hierarchy; for each appender on the
 * way the "emg" layout renders the line (time stamp, level, category, text)
 * in the calling thread, and the "emg" appender copies it into its sink's
 * ring under a lock held only for that memcpy. The writer thread empties the
 * rings with writev(2): it gathers lines for up to LOG_FLUSH_MS, or until
 * LOG_BATCH_BYTES are pending, so a busy gateway makes few large writes.
 *
 * When the writer falls behind (slow or full disk), memory stays bounded at
 * LOG_RING_SIZE per sink: a caller waits at most LOG_FULL_WAIT_MS for room,
 * then its line is dropped and counted. Once a sink drops, every line for it
 * is dropped at once until the writer has written what the ring held and,
 * after it, "N lines dropped": a stalled disk costs the message path one
 * short wait, not one per line, and the file says where lines are missing.
 *
 * log4c 1.2.4 cannot be initialised twice in a process (log4c_fini frees its
 * type tables but keeps pointers to them), so it is initialised at the first
 * log_init and never finalised; log_shutdown stops the writer and closes the
 * sinks, and a later log_init opens new ones. Categories live as long.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <log4c.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum {
  LOG_RING_SIZE = 4 << 20,     /* per sink: what a slow disk may cost in memory */
  LOG_BATCH_BYTES = 64 << 10,  /* pending bytes that wake the writer at once */
  LOG_FLUSH_MS = 10,           /* otherwise the writer gathers lines this long */
  LOG_FULL_WAIT_MS = 50,       /* longest a caller waits for room before dropping */
  LOG_RETRY_MS = 100,          /* pause after a failed write before trying again */
  LOG_REPORT_MAX = 160,        /* the "N lines dropped" line */
};

/* The type of appender and of layout a log4crc names to reach this code. */
#define LOG_TYPE_NAME "emg"
#define LOG_JOURNAL_LAYOUT "emg-journal"

/* Our levels in log4c's terms, and as printed (padded to five columns). */
static const struct {
  int priority;
  const char *name;
} levels[] = {
  [LOG_ERROR] = { LOG4C_PRIORITY_ERROR, "ERROR" },
  [LOG_WARN] = { LOG4C_PRIORITY_WARN, "WARN " },
  [LOG_INFO] = { LOG4C_PRIORITY_INFO, "INFO " },
  [LOG_DEBUG] = { LOG4C_PRIORITY_DEBUG, "DEBUG" },
  [LOG_DEBUG2] = { LOG4C_PRIORITY_TRACE, "DEBUG2" },
};

static int priority_of(enum log_level level)
{
  return level == LOG_OFF ? LOG4C_PRIORITY_FATAL : levels[level].priority;
}

/* The most verbose of our levels that a log4c priority lets through. */
static enum log_level level_of_priority(int priority)
{
  for (int l = LOG_DEBUG2; l >= LOG_ERROR; l--)
    if (levels[l].priority <= priority)
      return (enum log_level)l;
  return LOG_OFF;
}

/* ---- the line ---------------------------------------------------------- */

/* "YYYY-MM-DD HH:MM:SS" of the last second this thread logged in, so that
 * localtime_r (which takes glibc's time zone lock) runs once a second per
 * thread rather than once a line. */
static _Thread_local struct {
  time_t second;
  char text[20];
} stamp = { .second = -1 };

static const char *stamp_of(time_t second)
{
  if (second != stamp.second) {
    struct tm tm;
    localtime_r(&second, &tm);
    strftime(stamp.text, sizeof stamp.text, "%Y-%m-%d %H:%M:%S", &tm);
    stamp.second = second;
  }
  return stamp.text;
}

/* A line being built; `end` keeps room for '\n' and the NUL. */
struct line {
  char *p, *end;
  bool cut;
};

static void line_put(struct line *l, const char *s, size_t n)
{
  size_t room = (size_t)(l->end - l->p);
  if (n > room) {
    n = room;
    l->cut = true;
  }
  memcpy(l->p, s, n);
  l->p += n;
}

static void blank_out(char *s, size_t n, char c)
{
  char *end = s + n;
  while ((s = memchr(s, c, (size_t)(end - s))) != NULL)
    *s = ' ';
}

/* Renders "2026-11-30 06:50:01.123 INFO  emg.conn.ucp-in: text\n" into buf
 * (size >= 8) with a NUL after it, and returns its length. Line breaks in
 * text become spaces so that one call stays one line (and text from the
 * network cannot forge lines); text that does not fit is cut before a
 * UTF-8 sequence, never inside one, and ends in "...". */
static size_t line_format(char *buf, size_t size, const struct timeval *tv, int priority,
                          const char *category, const char *text)
{
  struct line l = { buf, buf + size - 2, false };
  enum log_level level = level_of_priority(priority);
  if (level == LOG_OFF)
    level = LOG_ERROR;   /* fatal, alert, crit: as error */
  if (tv) {
    char millis[5] = { '.', (char)('0' + tv->tv_usec / 100000), (char)('0' + tv->tv_usec / 10000 % 10),
                       (char)('0' + tv->tv_usec / 1000 % 10), ' ' };
    const char *name = levels[level].name;
    line_put(&l, stamp_of(tv->tv_sec), 19);
    line_put(&l, millis, sizeof millis);
    line_put(&l, name, strlen(name));
    line_put(&l, " ", 1);
  } else {
    /* For the journal, which stamps each line itself: the syslog priority
     * (err, warning, info, debug; syslog.h's names clash with ours). */
    static const char syslog_of[] = { '3', '4', '6', '7', '7' };
    line_put(&l, (char[]){ '<', syslog_of[level], '>' }, 3);
  }
  line_put(&l, category, strlen(category));
  line_put(&l, ": ", 2);
  size_t text_len = strlen(text);
  while (text_len > 0 && (text[text_len - 1] == '\n' || text[text_len - 1] == '\r'))
    text_len--;
  char *text_start = l.p;
  line_put(&l, text, text_len);
  blank_out(text_start, (size_t)(l.p - text_start), '\n');
  blank_out(text_start, (size_t)(l.p - text_start), '\r');
  if (l.cut) {
    /* A UTF-8 character is at most four bytes: at most three to step back. */
    char *q = l.end - 3;
    for (int i = 0; i < 3 && ((unsigned char)*q & 0xC0) == 0x80; i++)
      q--;
    memcpy(q, "...", 3);
    l.p = q + 3;
  }
  *l.p++ = '\n';
  *l.p = '\0';
  return (size_t)(l.p - buf);
}

/* The "emg" layout: runs in the calling thread, into the buffer log4c gives
 * each event (log_init makes it LOG_LINE_MAX + 1 bytes). */
static const char *layout_format(const log4c_layout_t *layout, const log4c_logging_event_t *evt)
{
  line_format(evt->evt_buffer.buf_data, evt->evt_buffer.buf_size, &evt->evt_timestamp,
              evt->evt_priority, evt->evt_category, evt->evt_msg);
  return evt->evt_buffer.buf_data;
}

/* The journal's: "<priority>category: text", without the time and level. */
static const char *journal_layout_format(const log4c_layout_t *layout, const log4c_logging_event_t *evt)
{
  line_format(evt->evt_buffer.buf_data, evt->evt_buffer.buf_size, NULL, evt->evt_priority, evt->evt_category,
              evt->evt_msg);
  return evt->evt_buffer.buf_data;
}

static const log4c_layout_type_t layout_type = { LOG_TYPE_NAME, layout_format };
static const log4c_layout_type_t journal_layout_type = { LOG_JOURNAL_LAYOUT, journal_layout_format };

/* ---- sinks and the writer ---------------------------------------------- */

/* One file of an "emg" appender: a byte ring that callers fill with whole
 * lines and the writer empties. Bytes [tail, head) are pending; callers
 * only add at head and the writer only reads below head, so the writer
 * writes without the lock. */
struct log_sink {
  struct log_sink *next;
  log4c_appender_t *appender;
  int fd;
  bool owns_fd;            /* false for stderr and stdout */
  bool journal;            /* the systemd journal's stream: lines begin "<priority>" */
  char *ring;              /* LOG_RING_SIZE bytes */
  uint64_t head, tail;     /* bytes ever added / written */
  uint64_t dropped;        /* lines dropped since the last report; > 0: dropping */
};

enum writer_wait {
  WRITER_BUSY,             /* writing: nobody needs to wake it */
  WRITER_WAITS_DATA,       /* nothing pending: the next line wakes it */
  WRITER_WAITS_BATCH,      /* gathering: a full batch wakes it */
};

static struct {
  pthread_mutex_t lock;    /* sinks, rings and the fields below; held for memcpys */
  pthread_cond_t wake;     /* to the writer */
  pthread_cond_t room;     /* to callers waiting for room in a ring */
  struct log_sink *sinks;
  enum writer_wait wait;
  bool stopping;
  pthread_t thread;
} writer = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct timespec deadline_in(int ms)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (long)(ms % 1000) * 1000000;
  if (t.tv_nsec >= 1000000000) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000;
  }
  return t;
}

static size_t sink_pending(const struct log_sink *s)
{
  return (size_t)(s->head - s->tail);
}

/* Whether need bytes fit in s, after waiting up to LOG_FULL_WAIT_MS for the
 * writer; a sink that is dropping does not wait. Lock held. */
static bool sink_room(struct log_sink *s, size_t need)
{
  if (s->dropped == 0 && LOG_RING_SIZE - sink_pending(s) >= need)
    return true;
  struct timespec deadline = deadline_in(LOG_FULL_WAIT_MS);
  int rc = 0;
  while (rc != ETIMEDOUT && s->dropped == 0 && LOG_RING_SIZE - sink_pending(s) < need)
    rc = pthread_cond_timedwait(&writer.room, &writer.lock, &deadline);
  return s->dropped == 0 && LOG_RING_SIZE - sink_pending(s) >= need;
}

static void ring_put(struct log_sink *s, const char *src, size_t n)
{
  size_t off = (size_t)(s->head % LOG_RING_SIZE);
  size_t first = n < LOG_RING_SIZE - off ? n : LOG_RING_SIZE - off;
  memcpy(s->ring + off, src, first);
  memcpy(s->ring, src + first, n - first);
  s->head += n;
}

/* Adds one line to s; a line from another layout that lacks its '\n' gets one. */
static void sink_push(struct log_sink *s, const char *line)
{
  size_t len = strlen(line);
  bool add_newline = len == 0 || line[len - 1] != '\n';
  pthread_mutex_lock(&writer.lock);
  if (!sink_room(s, len + add_newline)) {
    s->dropped++;
  } else {
    ring_put(s, line, len);
    if (add_newline)
      ring_put(s, "\n", 1);
    if (writer.wait == WRITER_WAITS_DATA ||
        (writer.wait == WRITER_WAITS_BATCH && sink_pending(s) >= LOG_BATCH_BYTES)) {
      writer.wait = WRITER_BUSY;
      pthread_cond_signal(&writer.wake);
    }
  }
  pthread_mutex_unlock(&writer.lock);
}

/* Writes all of iov, resuming after short writes; returns the bytes written,
 * fewer than asked only on an error. */
static size_t write_all(int fd, struct iovec *iov, int n)
{
  size_t done = 0;
  while (n > 0) {
    ssize_t w = writev(fd, iov, n);
    if (w == -1) {
      if (errno == EINTR)
        continue;
      break;
    }
    done += (size_t)w;
    size_t left = (size_t)w;
    for (; n > 0 && left >= iov->iov_len; iov++, n--)
      left -= iov->iov_len;
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + left;
      iov->iov_len -= left;
    }
  }
  return done;
}

static size_t drop_report(char *buf, size_t size, uint64_t dropped)
{
  char text[96];
  struct timeval now;
  gettimeofday(&now, NULL);
  snprintf(text, sizeof text, "%llu lines dropped: the log writer fell behind",
           (unsigned long long)dropped);
  return line_format(buf, size, &now, LOG4C_PRIORITY_WARN, "emg.log", text);
}

/* Writes what s holds and then, if lines were dropped, the report of how
 * many; the lock is released meanwhile so that callers keep adding. On a
 * failed write what was not written stays for the next try, except when
 * stopping, where it is given up. Returns the bytes taken from the ring,
 * or -1 after a failed write. */
static ssize_t sink_drain(struct log_sink *s, bool stopping)
{
  uint64_t tail = s->tail, head = s->head, dropped = s->dropped;
  if (head == tail && dropped == 0)
    return 0;
  s->dropped = 0;
  pthread_mutex_unlock(&writer.lock);

  size_t len = (size_t)(head - tail), off = (size_t)(tail % LOG_RING_SIZE);
  size_t first = len < LOG_RING_SIZE - off ? len : LOG_RING_SIZE - off;
  struct iovec iov[3] = { { s->ring + off, first }, { s->ring, len - first } };
  char report[LOG_REPORT_MAX];
  size_t report_len = dropped ? drop_report(report, sizeof report, dropped) : 0;
  iov[2] = (struct iovec){ report, report_len };
  size_t done = write_all(s->fd, iov, 3);

  pthread_mutex_lock(&writer.lock);
  bool ok = done == len + report_len;
  if (ok || stopping) {
    s->tail = head;
  } else {
    s->tail += done < len ? done : len;
    if (done < len + report_len)
      s->dropped += dropped;
  }
  return ok ? (ssize_t)len : -1;
}

/* The most any one sink has to write; an unreported drop counts too. */
static size_t writer_backlog(void)
{
  size_t most = 0;
  for (const struct log_sink *s = writer.sinks; s; s = s->next) {
    size_t backlog = sink_pending(s) + (s->dropped > 0);
    if (backlog > most)
      most = backlog;
  }
  return most;
}

/* Returns, lock held, when there is something to write or a stop to act on:
 * sleeps while nothing is pending, then gathers lines for up to
 * LOG_FLUSH_MS unless a sink fills a batch first. When busy (the last
 * round wrote a batch) lines come faster than that: waiting would only let
 * the rings fill while the writer waits its turn for a CPU. */
static void writer_gather(bool busy)
{
  size_t backlog;
  while ((backlog = writer_backlog()) == 0 && !writer.stopping) {
    writer.wait = WRITER_WAITS_DATA;
    pthread_cond_wait(&writer.wake, &writer.lock);
  }
  if (!busy && backlog < LOG_BATCH_BYTES && !writer.stopping) {
    struct timespec deadline = deadline_in(LOG_FLUSH_MS);
    writer.wait = WRITER_WAITS_BATCH;
    while (writer.wait == WRITER_WAITS_BATCH && !writer.stopping &&
           pthread_cond_timedwait(&writer.wake, &writer.lock, &deadline) != ETIMEDOUT)
      ;
  }
  writer.wait = WRITER_BUSY;
}

/* Lines written before a stop are all written: the loop ends only once a
 * stop has been seen before a drain that leaves nothing behind. */
static void *writer_main(void *unused)
{
  bool busy = false;
  pthread_mutex_lock(&writer.lock);
  for (;;) {
    writer_gather(busy);
    bool stopping = writer.stopping, failed = false;
    size_t written = 0;
    for (struct log_sink *s = writer.sinks; s; s = s->next) {
      ssize_t n = sink_drain(s, stopping);
      failed |= n == -1;
      written += n == -1 ? 0 : (size_t)n;
    }
    busy = written >= LOG_BATCH_BYTES;
    pthread_cond_broadcast(&writer.room);
    if (stopping && writer_backlog() == 0)
      break;
    if (failed) {
      struct timespec deadline = deadline_in(LOG_RETRY_MS);
      while (!writer.stopping &&
             pthread_cond_timedwait(&writer.wake, &writer.lock, &deadline) != ETIMEDOUT)
        ;
    }
  }
  pthread_mutex_unlock(&writer.lock);
  return unused;
}

/* ---- the "emg" appender -------------------------------------------------- */

static void sink_destroy(struct log_sink *s)
{
  if (s->owns_fd && s->fd != -1)
    close(s->fd);
  free(s->ring);
  free(s);
}

/* An "emg" appender writes to the file it is named after; "stderr" and
 * "stdout" are the process's own. */
static int appender_open(log4c_appender_t *app)
{
  const char *name = log4c_appender_get_name(app);
  struct log_sink *s = calloc(1, sizeof *s);
  if (!s)
    return -1;
  s->appender = app;
  if (strcmp(name, "stderr") == 0) {
    s->fd = STDERR_FILENO;
  } else if (strcmp(name, "stdout") == 0) {
    s->fd = STDOUT_FILENO;
  } else if (strcmp(name, LOG_JOURNAL) == 0) {
    /* journald stamps each line itself and takes its priority from a
     * "<N>" in front of it. */
    int fd = log_journal_fd();
    if (fd < 0)
      errno = -fd;
    s->fd = fd < 0 ? -1 : fd;
    s->owns_fd = s->journal = true;
  } else {
    s->fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    s->owns_fd = true;
  }
  s->ring = malloc(LOG_RING_SIZE);
  if (s->fd == -1 || !s->ring) {
    sink_destroy(s);
    return -1;
  }
  pthread_mutex_lock(&writer.lock);
  s->next = writer.sinks;
  writer.sinks = s;
  pthread_mutex_unlock(&writer.lock);
  log4c_appender_set_udata(app, s);
  return 0;
}

static int appender_append(log4c_appender_t *app, const log4c_logging_event_t *evt)
{
  sink_push(log4c_appender_get_udata(app), evt->evt_rendered_msg);
  return 0;
}

/* Called with the writer stopped, so the ring is empty. */
static int appender_close(log4c_appender_t *app)
{
  struct log_sink *s = log4c_appender_get_udata(app);
  pthread_mutex_lock(&writer.lock);
  struct log_sink **link = &writer.sinks;
  while (*link != s)
    link = &(*link)->next;
  *link = s->next;
  pthread_mutex_unlock(&writer.lock);
  log4c_appender_set_udata(app, NULL);
  sink_destroy(s);
  return 0;
}

static const log4c_appender_type_t appender_type = {
  LOG_TYPE_NAME, appender_open, appender_append, appender_close,
};

static int writer_start(void)
{
  sigset_t all, old;
  sigfillset(&all);
  writer.stopping = false;
  /* The writer takes no signals: they are for the threads that handle them,
   * and a log on a closed pipe must see EPIPE, not end the daemon. */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&writer.thread, NULL, writer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  pthread_setname_np(writer.thread, "emg-log");
  return 0;
}

static void writer_stop(void)
{
  pthread_mutex_lock(&writer.lock);
  writer.stopping = true;
  pthread_cond_signal(&writer.wake);
  pthread_mutex_unlock(&writer.lock);
  pthread_join(writer.thread, NULL);
}

/* ---- categories and the API ---------------------------------------------- */

/* A category as the registry keeps it, with its name. */
struct category_entry {
  struct log_category category;
  struct category_entry *next;
  char name[];
};

static struct {
  pthread_mutex_t lock;  /* this struct, and every call that configures log4c */
  struct category_entry *categories;
  enum { LOG4C_NOT_YET, LOG4C_READY, LOG4C_FAILED } log4c;
  bool running;
} registry = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Registers our types before log4c_init, so that a log4crc can name them,
 * and initialises log4c: once per process. */
static int log4c_setup(void)
{
  if (registry.log4c != LOG4C_NOT_YET)
    return registry.log4c == LOG4C_READY ? 0 : -1;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&writer.wake, &attr);
  pthread_cond_init(&writer.room, &attr);
  pthread_condattr_destroy(&attr);
  log4c_appender_type_set(&appender_type);
  log4c_layout_type_set(&layout_type);
  log4c_layout_type_set(&journal_layout_type);
  int rc = log4c_init();
  /* A bounded buffer puts log4c's text on the stack instead of malloc'ing
   * it per line, and is the line's size (+1 for the NUL). Re-reading would
   * stat() the log4crc files on every line and reload them under running
   * threads. */
  log4c_rc->config.bufsize = LOG_LINE_MAX + 1;
  log4c_rc->config.reread = 0;
  /* A log4crc may name the "emg" layout without declaring it. */
  log4c_layout_set_type(log4c_layout_get(LOG_TYPE_NAME), &layout_type);
  registry.log4c = rc == 0 ? LOG4C_READY : LOG4C_FAILED;
  return rc == 0 ? 0 : -1;
}

/* Opens the appender of every category there is, so that none is opened
 * lazily by the first threads to log through it (log4c's open is not
 * thread-safe), and a file the log4crc names that cannot be opened fails
 * log_init rather than losing its lines. */
static int appenders_open(void)
{
  log4c_category_t *first;
  int n = log4c_category_list(&first, 1), rc = 0;
  log4c_category_t **all = malloc((size_t)n * sizeof *all);
  if (!all)
    return -1;
  n = log4c_category_list(all, n);
  for (int i = 0; i < n; i++) {
    /* log4c hands out its appenders as const but opens them as mutable. */
    log4c_appender_t *app = (log4c_appender_t *)log4c_category_get_appender(all[i]);
    if (app && log4c_appender_open(app) == -1)
      rc = -1;
  }
  free(all);
  return rc;
}

/* The threshold log4c's hierarchy gives the category. */
static void category_update(struct category_entry *e)
{
  int priority = log4c_category_get_chainedpriority(e->category.impl);
  atomic_store_explicit(&e->category.threshold, level_of_priority(priority), memory_order_relaxed);
}

static void category_attach(struct category_entry *e)
{
  e->category.impl = log4c_category_get(e->name);
  category_update(e);
}

/* Closes what log_init opened; the writer must be stopped. */
static void sinks_close(void)
{
  while (writer.sinks)
    log4c_appender_close(writer.sinks->appender);
}

int log_init(enum log_level level, const char *file)
{
  int rc = -1;
  pthread_mutex_lock(&registry.lock);
  if (registry.running || log4c_setup() == -1)
    goto out;
  log4c_appender_t *app = log4c_appender_get(file && *file ? file : "stderr");
  log4c_appender_set_type(app, &appender_type);
  bool journal = file && strcmp(file, LOG_JOURNAL) == 0;
  log4c_layout_t *layout = log4c_layout_get(journal ? LOG_JOURNAL_LAYOUT : LOG_TYPE_NAME);
  log4c_layout_set_type(layout, journal ? &journal_layout_type : &layout_type);
  log4c_appender_set_layout(app, layout);
  log4c_category_t *root = log4c_category_get("root");
  log4c_category_set_appender(root, app);
  log4c_category_set_priority(root, priority_of(level));
  if (appenders_open() == -1 || writer_start() == -1) {
    int err = errno;  /* why, for the caller */
    sinks_close();
    errno = err;
    goto out;
  }
  registry.running = true;
  for (struct category_entry *e = registry.categories; e; e = e->next)
    category_attach(e);
  rc = 0;
out:
  pthread_mutex_unlock(&registry.lock);
  return rc;
}

int log_reopen(void)
{
  int rc = 0, err = 0;
  pthread_mutex_lock(&writer.lock);
  for (struct log_sink *s = writer.sinks; s; s = s->next) {
    if (!s->owns_fd || s->journal)
      continue;
    /* dup2 puts the new file under the same descriptor at once: a write
     * the writer has under way ends in the old file, the next goes to the
     * new one. */
    int fd = open(log4c_appender_get_name(s->appender), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd == -1 || dup3(fd, s->fd, O_CLOEXEC) == -1) {
      err = errno;
      rc = -1;
    }
    if (fd != -1)
      close(fd);
  }
  pthread_mutex_unlock(&writer.lock);
  errno = err;
  return rc;
}

void log_shutdown(void)
{
  pthread_mutex_lock(&registry.lock);
  if (registry.running) {
    for (struct category_entry *e = registry.categories; e; e = e->next)
      atomic_store_explicit(&e->category.threshold, LOG_OFF, memory_order_relaxed);
    writer_stop();
    sinks_close();
    registry.running = false;
  }
  pthread_mutex_unlock(&registry.lock);
}

struct log_category *log_category(const char *name)
{
  struct category_entry *e;
  pthread_mutex_lock(&registry.lock);
  for (e = registry.categories; e; e = e->next)
    if (strcmp(e->name, name) == 0)
      goto out;
  size_t len = strlen(name);
  e = calloc(1, sizeof *e + len + 1);
  if (!e)
    goto out;
  memcpy(e->name, name, len + 1);
  e->category.name = e->name;
  e->category.threshold = LOG_OFF;
  if (registry.running)
    category_attach(e);
  e->next = registry.categories;
  registry.categories = e;
out:
  pthread_mutex_unlock(&registry.lock);
  return e ? &e->category : NULL;
}

void log_set_level(enum log_level level)
{
  pthread_mutex_lock(&registry.lock);
  if (registry.running) {
    log4c_category_set_priority(log4c_category_get("root"), priority_of(level));
    for (struct category_entry *e = registry.categories; e; e = e->next)
      category_update(e);
  }
  pthread_mutex_unlock(&registry.lock);
}

void log_write(struct log_category *c, enum log_level level, const char *fmt, ...)
{
  if (level < LOG_ERROR || !log_enabled(c, level))
    return;
  va_list ap;
  va_start(ap, fmt);
  log4c_category_vlog(c->impl, priority_of(level), fmt, ap);
  va_end(ap);
}

bool log_every_due(struct log_every *e, uint64_t now_ms, uint64_t period_ms, uint64_t *skipped)
{
  return log_burst_due(e, now_ms, period_ms, 1, skipped);
}

bool log_burst_due(struct log_every *e, uint64_t now_ms, uint64_t period_ms, unsigned burst, uint64_t *skipped)
{
  if (now_ms >= e->next_ms) {
    e->next_ms = now_ms + period_ms;
    e->lines = 0;
  }
  if (e->lines >= burst) {
    e->skipped++;
    return false;
  }
  e->lines++;
  *skipped = e->skipped;
  e->skipped = 0;
  return true;
}
