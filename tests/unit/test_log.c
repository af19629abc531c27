/* test_log.c - the logging module: line format, levels, categories, the
 * log4crc, many threads into one file, truncation and dropping when the
 * writer cannot keep up.
 *
 * log4c reads its log4crc once per process, at the first log_init, so the
 * log4crc test comes first; every test starts and stops logging itself.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <log4c.h>
#include "access_log.h"
#include "clock.h"
#include "log.h"
#include "testutil.h"

/* A scratch directory per test, removed with what the test put in it. */
enum { SCRATCH_FILES = 8 };

struct scratch {
  char dir[64];
  char path[SCRATCH_FILES][128];
  int files;
};

static int scratch_open(struct scratch *s)
{
  snprintf(s->dir, sizeof s->dir, "/tmp/emg-log-XXXXXX");
  s->files = 0;
  return mkdtemp(s->dir) ? 0 : -1;
}

static const char *scratch_file(struct scratch *s, const char *name)
{
  size_t dir_len = strlen(s->dir), name_len = strlen(name);
  if (s->files == SCRATCH_FILES || dir_len + 1 + name_len >= sizeof s->path[0])
    return NULL;
  char *path = s->path[s->files++];
  memcpy(path, s->dir, dir_len);
  path[dir_len] = '/';
  memcpy(path + dir_len + 1, name, name_len + 1);
  return path;
}

static void scratch_close(struct scratch *s)
{
  for (int i = 0; i < s->files; i++)
    unlink(s->path[i]);
  rmdir(s->dir);
}

/* The whole file, NUL-terminated; NULL if it cannot be read. Caller frees. */
static char *slurp(const char *path, size_t *len)
{
  char *buf = NULL;
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    rewind(f);
    buf = malloc((size_t)size + 1);
    if (buf && fread(buf, 1, (size_t)size, f) == (size_t)size) {
      buf[size] = '\0';
      *len = (size_t)size;
    } else {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

/* Whether line starts with "YYYY-MM-DD HH:MM:SS.mmm " within a minute of now. */
static int stamp_ok(const char *line)
{
  static const char shape[] = "dddd-dd-dd dd:dd:dd.ddd ";
  for (size_t i = 0; i < sizeof shape - 1; i++)
    if (shape[i] == 'd' ? line[i] < '0' || line[i] > '9' : line[i] != shape[i])
      return 0;
  struct tm tm = { .tm_isdst = -1 };
  if (!strptime(line, "%Y-%m-%d %H:%M:%S", &tm))
    return 0;
  double age = difftime(time(NULL), mktime(&tm));
  return age >= -1 && age <= 60;
}

/* Lines of text whose part after the time stamp is exactly `rest`
 * (e.g. "INFO  emg.test: hello"); -1 if any line lacks its stamp or '\n'. */
static int count_lines(const char *text, const char *rest)
{
  int n = 0;
  size_t rest_len = strlen(rest);
  for (const char *line = text; *line;) {
    const char *nl = strchr(line, '\n');
    if (!nl)
      return -1;  /* an unterminated line */
    if (!stamp_ok(line))
      return -1;
    if ((size_t)(nl - line) == 24 + rest_len && memcmp(line + 24, rest, rest_len) == 0)
      n++;
    line = nl + 1;
  }
  return n;
}

static int count_all_lines(const char *text)
{
  int n = 0;
  for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++)
    n++;
  return n;
}

/* Starts logging at level into emgd.log in a new scratch directory and
 * returns the file's path, or NULL. */
static const char *start_logging(struct scratch *s, enum log_level level)
{
  if (scratch_open(s) != 0)
    return NULL;
  const char *path = scratch_file(s, "emgd.log");
  return log_init(level, path) == 0 ? path : NULL;
}

/* Stops logging and returns what reached the file (see slurp). */
static char *stop_logging(const char *path, size_t *len)
{
  log_shutdown();
  return slurp(path, len);
}

/* A log4crc raises one connector to debug2, routes another category to its
 * own file through the "emg" appender and a third through log4c's stream
 * appender with the "emg" layout; emgd's level still governs the rest. */
static void test_log4crc(void)
{
  struct scratch s;
  CU_ASSERT_FATAL(scratch_open(&s) == 0);
  const char *rc = scratch_file(&s, "log4crc");
  const char *main_log = scratch_file(&s, "main.log");
  const char *audit_log = scratch_file(&s, "audit.log");
  const char *stream_log = scratch_file(&s, "stream.log");
  FILE *f = fopen(rc, "w");
  CU_ASSERT_FATAL(f != NULL);
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n"
          "<!DOCTYPE log4c SYSTEM \"\">\n"
          "<log4c>\n"
          "  <category name=\"emg.conn.smpp-out\" priority=\"trace\"/>\n"
          "  <category name=\"emg.audit\" priority=\"info\" appender=\"%s\" additivity=\"false\"/>\n"
          "  <appender name=\"%s\" type=\"emg\" layout=\"emg\"/>\n"
          "  <category name=\"emg.trace\" appender=\"%s\" additivity=\"false\"/>\n"
          "  <appender name=\"%s\" type=\"stream\" layout=\"emg\"/>\n"
          "</log4c>\n",
          audit_log, audit_log, stream_log, stream_log);
  fclose(f);
  setenv("LOG4C_RCPATH", s.dir, 1);

  CU_ASSERT_FATAL(log_init(LOG_INFO, main_log) == 0);
  struct log_category *smpp = log_category("emg.conn.smpp-out");
  struct log_category *ucp = log_category("emg.conn.ucp-in");
  struct log_category *audit = log_category("emg.audit");
  struct log_category *trace = log_category("emg.trace");
  CU_ASSERT_FATAL(smpp && ucp && audit && trace);
  CU_ASSERT(log_enabled(smpp, LOG_DEBUG2));
  CU_ASSERT(log_enabled(ucp, LOG_INFO));
  CU_ASSERT(!log_enabled(ucp, LOG_DEBUG));
  LOGD2(smpp, "submit_sm seq=%d", 7);
  LOGD(ucp, "hidden");
  LOGI(audit, "audited");
  LOGI(trace, "streamed");
  /* The configured level moves every category the log4crc leaves alone. */
  log_set_level(LOG_WARN);
  CU_ASSERT(log_enabled(smpp, LOG_DEBUG2));
  CU_ASSERT(!log_enabled(ucp, LOG_INFO));
  LOGI(ucp, "muted");
  LOGW(ucp, "warned");
  log_shutdown();

  size_t len;
  char *text = slurp(main_log, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_EQUAL(count_lines(text, "DEBUG2 emg.conn.smpp-out: submit_sm seq=7"), 1);
  CU_ASSERT_EQUAL(count_lines(text, "WARN  emg.conn.ucp-in: warned"), 1);
  CU_ASSERT_EQUAL(count_all_lines(text), 2);
  free(text);
  text = slurp(audit_log, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_EQUAL(count_lines(text, "INFO  emg.audit: audited"), 1);
  CU_ASSERT_EQUAL(count_all_lines(text), 1);
  free(text);
  text = slurp(stream_log, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "INFO  emg.trace: streamed\n"));
  free(text);

  /* Later tests run without this log4crc, whose files are about to go. */
  log4c_category_set_appender(log4c_category_get("emg.audit"), NULL);
  log4c_category_set_appender(log4c_category_get("emg.trace"), NULL);
  unsetenv("LOG4C_RCPATH");
  scratch_close(&s);
}

static void test_line_format(void)
{
  struct scratch s;
  const char *path = start_logging(&s, LOG_INFO);
  CU_ASSERT_FATAL(path != NULL);
  struct log_category *c = log_category("emg.test");
  LOGI(c, "hello %s %d", "world", 42);
  LOGE(c, "failed: %s", "reason");
  LOGW(c, "two\nlines\r\nin one\n");

  size_t len;
  char *text = stop_logging(path, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_EQUAL(count_lines(text, "INFO  emg.test: hello world 42"), 1);
  CU_ASSERT_EQUAL(count_lines(text, "ERROR emg.test: failed: reason"), 1);
  CU_ASSERT_EQUAL(count_lines(text, "WARN  emg.test: two lines  in one"), 1);
  CU_ASSERT_EQUAL(count_all_lines(text), 3);
  free(text);
  scratch_close(&s);
}

static void test_levels(void)
{
  struct scratch s;
  const char *path = start_logging(&s, LOG_INFO);
  CU_ASSERT_FATAL(path != NULL);
  struct log_category *c = log_category("emg.levels");
  CU_ASSERT(log_enabled(c, LOG_ERROR));
  CU_ASSERT(log_enabled(c, LOG_INFO));
  CU_ASSERT(!log_enabled(c, LOG_DEBUG));
  LOGD(c, "debug dropped");
  LOGD2(c, "debug2 dropped");
  LOGI(c, "info kept");

  log_set_level(LOG_DEBUG2);
  CU_ASSERT(log_enabled(c, LOG_DEBUG2));
  LOGD2(c, "debug2 kept");
  log_set_level(LOG_ERROR);
  CU_ASSERT(!log_enabled(c, LOG_WARN));
  LOGW(c, "warn dropped");
  LOGE(c, "error kept");
  log_set_level(LOG_OFF);
  CU_ASSERT(!log_enabled(c, LOG_ERROR));
  LOGE(c, "error dropped");

  size_t len;
  char *text = stop_logging(path, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_EQUAL(count_lines(text, "INFO  emg.levels: info kept"), 1);
  CU_ASSERT_EQUAL(count_lines(text, "DEBUG2 emg.levels: debug2 kept"), 1);
  CU_ASSERT_EQUAL(count_lines(text, "ERROR emg.levels: error kept"), 1);
  CU_ASSERT_PTR_NULL(strstr(text, "dropped"));
  CU_ASSERT_EQUAL(count_all_lines(text), 3);
  free(text);
  scratch_close(&s);
}

/* One pointer per name, before, during and after logging runs. */
static void test_categories(void)
{
  struct scratch s;
  CU_ASSERT_FATAL(scratch_open(&s) == 0);
  struct log_category *a = log_category("emg.conn.ucp-in");
  CU_ASSERT_FATAL(a != NULL);
  CU_ASSERT_STRING_EQUAL(a->name, "emg.conn.ucp-in");
  CU_ASSERT(!log_enabled(a, LOG_ERROR));  /* logging is not running */
  CU_ASSERT_FATAL(log_init(LOG_DEBUG, scratch_file(&s, "emgd.log")) == 0);
  CU_ASSERT_PTR_EQUAL(log_category("emg.conn.ucp-in"), a);
  CU_ASSERT(log_enabled(a, LOG_DEBUG));
  struct log_category *b = log_category("emg.conn.ucp-in2");
  CU_ASSERT_PTR_NOT_EQUAL(b, a);
  CU_ASSERT_PTR_EQUAL(log_category("emg.conn.ucp-in2"), b);
  CU_ASSERT(log_enabled(b, LOG_DEBUG));
  log_shutdown();
  CU_ASSERT_PTR_EQUAL(log_category("emg.conn.ucp-in"), a);
  CU_ASSERT(!log_enabled(a, LOG_ERROR));
  CU_ASSERT(!log_enabled(NULL, LOG_ERROR));
  scratch_close(&s);
}

/* A file that cannot be opened fails log_init with errno, and leaves
 * logging stopped and ready for another try. */
static void test_init_failure(void)
{
  struct scratch s;
  CU_ASSERT_FATAL(scratch_open(&s) == 0);
  errno = 0;
  CU_ASSERT_EQUAL(log_init(LOG_INFO, "/nonexistent/emg/emgd.log"), -1);
  CU_ASSERT_EQUAL(errno, ENOENT);
  struct log_category *c = log_category("emg.test");
  CU_ASSERT(!log_enabled(c, LOG_ERROR));
  const char *path = scratch_file(&s, "emgd.log");
  CU_ASSERT_FATAL(log_init(LOG_INFO, path) == 0);
  CU_ASSERT_EQUAL(log_init(LOG_INFO, path), -1);  /* already running */
  LOGI(c, "second try");
  size_t len;
  char *text = stop_logging(path, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_EQUAL(count_lines(text, "INFO  emg.test: second try"), 1);
  free(text);
  scratch_close(&s);
}

/* A text longer than a line is cut, within the line, before a whole
 * character, and the next line is intact. */
static void test_truncation(void)
{
  static char ascii[3 * LOG_LINE_MAX], utf8[3 * LOG_LINE_MAX];
  memset(ascii, 'x', sizeof ascii - 1);
  for (size_t i = 0; i + 2 < sizeof utf8; i += 2)
    memcpy(utf8 + i, "\xc3\xa9", 2);  /* é: two bytes, cut only before one */
  struct scratch s;
  const char *path = start_logging(&s, LOG_INFO);
  CU_ASSERT_FATAL(path != NULL);
  struct log_category *c = log_category("emg.test");
  LOGI(c, "%s", ascii);
  LOGI(c, "after");
  /* Nine letters: the cut falls inside a character, which must go whole. */
  LOGI(log_category("emg.utf-8"), "%s", utf8);

  size_t len;
  char *text = stop_logging(path, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_EQUAL(count_all_lines(text), 3);
  char *first = text, *second = strchr(first, '\n') + 1, *third = strchr(second, '\n') + 1;
  CU_ASSERT_EQUAL(second - first, LOG_LINE_MAX);
  CU_ASSERT_NSTRING_EQUAL(second - 4, "...\n", 4);
  CU_ASSERT(stamp_ok(first));
  CU_ASSERT_NSTRING_EQUAL(first + 24, "INFO  emg.test: xxx", 19);
  CU_ASSERT_EQUAL(count_lines(second, "INFO  emg.test: after"), 1);
  char *end = strchr(third, '\n');
  CU_ASSERT(end - third <= LOG_LINE_MAX - 1);
  CU_ASSERT(end - third >= LOG_LINE_MAX - 1 - 4);  /* at most a character short */
  CU_ASSERT_NSTRING_EQUAL(end - 3, "...", 3);
  CU_ASSERT_EQUAL((unsigned char)end[-4], 0xa9);  /* the last character is whole */
  free(text);
  scratch_close(&s);
}

enum { THREADS = 8, LINES = 10000 };

static struct log_category *thread_category;

static void *thread_logger(void *arg)
{
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < LINES; i++)
    LOGD2(thread_category, "%d %05d", t, i);
  return NULL;
}

/* Every line of every thread is in the file once, whole. The lines are
 * short (46 bytes) so that all of them fit in the writer's 4 MiB ring:
 * then the result does not depend on the writer getting a CPU in time on a
 * loaded machine (when it does not, lines are dropped by design, which the
 * last test covers). */
static void test_threads(void)
{
  struct scratch s;
  const char *path = start_logging(&s, LOG_DEBUG2);
  CU_ASSERT_FATAL(path != NULL);
  thread_category = log_category("emg.t");
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++)
    CU_ASSERT_FATAL(pthread_create(&threads[t], NULL, thread_logger, (void *)(intptr_t)t) == 0);
  for (int t = 0; t < THREADS; t++)
    pthread_join(threads[t], NULL);

  size_t len;
  char *text = stop_logging(path, &len);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT_EQUAL(strlen(text), len);  /* no NUL bytes in the file */
  static unsigned char seen[THREADS][LINES];
  memset(seen, 0, sizeof seen);
  int lines = 0, bad = 0, repeated = 0;
  static const char prefix[] = "DEBUG2 emg.t: ";
  for (char *line = text, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
    int t, i;
    char expect[32];
    lines++;
    *nl = '\0';
    if (!stamp_ok(line) || strncmp(line + 24, prefix, sizeof prefix - 1) != 0 ||
        sscanf(line + 24 + sizeof prefix - 1, "%d %d", &t, &i) != 2 || t < 0 || t >= THREADS ||
        i < 0 || i >= LINES) {
      bad++;
      continue;
    }
    snprintf(expect, sizeof expect, "%d %05d", t, i);
    if (strcmp(line + 24 + sizeof prefix - 1, expect) != 0) {
      bad++;
      continue;
    }
    repeated += seen[t][i]++ > 0;
  }
  int missing = 0;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < LINES; i++)
      missing += !seen[t][i];
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(repeated, 0);
  CU_ASSERT_EQUAL(missing, 0);
  CU_ASSERT_EQUAL(lines, THREADS * LINES);
  free(text);
  scratch_close(&s);
}

/* Reads a pipe to its end. */
struct pipe_reader {
  int fd;
  char *buf;
  size_t len, cap;
};

static void *pipe_read_all(void *arg)
{
  struct pipe_reader *r = arg;
  for (;;) {
    if (r->cap - r->len < 65536) {
      r->cap = r->cap ? 2 * r->cap : 1 << 20;
      r->buf = realloc(r->buf, r->cap + 1);
      if (!r->buf)
        return NULL;
    }
    ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
    if (n <= 0)
      break;
    r->len += (size_t)n;
  }
  r->buf[r->len] = '\0';
  return NULL;
}

/* A writer that cannot write (a pipe nobody reads) costs callers one
 * bounded wait, not a block: what does not fit is dropped, counted, and
 * the count is written where the lines are missing. */
static void test_drop_when_behind(void)
{
  enum { FLOOD = 200000 };
  struct scratch s;
  CU_ASSERT_FATAL(scratch_open(&s) == 0);
  const char *path = scratch_file(&s, "fifo");
  CU_ASSERT_FATAL(mkfifo(path, 0600) == 0);
  struct pipe_reader r = { .fd = open(path, O_RDONLY | O_NONBLOCK) };
  CU_ASSERT_FATAL(r.fd != -1);
  CU_ASSERT_FATAL(log_init(LOG_INFO, path) == 0);
  struct log_category *c = log_category("emg.flood");

  uint64_t start = clock_now_ns();
  for (int i = 0; i < FLOOD; i++)
    LOGI(c, "flood %06d with some text to make a line of about a hundred bytes", i);
  double seconds = (double)(clock_now_ns() - start) / 1e9;
  /* A fraction of a second here, a few under sanitizers on a busy machine;
   * callers that blocked for the writer, or waited on each line, would take
   * minutes. */
  CU_ASSERT(seconds < 30);

  fcntl(r.fd, F_SETFL, 0);
  pthread_t reader;
  CU_ASSERT_FATAL(pthread_create(&reader, NULL, pipe_read_all, &r) == 0);
  log_shutdown();
  pthread_join(reader, NULL);
  close(r.fd);
  CU_ASSERT_FATAL(r.buf != NULL);

  int kept = 0, out_of_order = 0, reports = 0, bad = 0;
  unsigned long long dropped = 0;
  for (char *line = r.buf, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
    int i;
    *nl = '\0';
    if (stamp_ok(line) && sscanf(line + 24, "INFO  emg.flood: flood %d with some", &i) == 1) {
      out_of_order += i != kept;
      kept++;
    } else if (stamp_ok(line) &&
               sscanf(line + 24, "WARN  emg.log: %llu lines dropped: the log writer fell behind",
                      &dropped) == 1) {
      reports++;
      CU_ASSERT_PTR_NULL(strchr(nl + 1, '\n'));  /* after every line that was kept */
    } else {
      bad++;
    }
  }
  CU_ASSERT(kept > 0);
  CU_ASSERT(dropped > 0);
  CU_ASSERT_EQUAL(reports, 1);
  CU_ASSERT_EQUAL(kept + dropped, FLOOD);
  CU_ASSERT_EQUAL(out_of_order, 0);
  CU_ASSERT_EQUAL(bad, 0);
  free(r.buf);
  scratch_close(&s);
}

/* Lines that a flood would repeat: one a period, or a burst of them, the
 * ones left out counted into the next line written. */
static void test_rate_limited_lines(void)
{
  struct log_every e = { 0 };
  uint64_t skipped = 99;
  CU_ASSERT_TRUE(log_every_due(&e, 1000, 100, &skipped));
  CU_ASSERT_EQUAL(skipped, 0);
  CU_ASSERT_FALSE(log_every_due(&e, 1050, 100, &skipped));
  CU_ASSERT_FALSE(log_every_due(&e, 1099, 100, &skipped));
  CU_ASSERT_TRUE(log_every_due(&e, 1100, 100, &skipped));
  CU_ASSERT_EQUAL(skipped, 2);
  struct log_every b = { 0 };
  unsigned written = 0;
  for (unsigned i = 0; i < 25; i++)
    written += log_burst_due(&b, 5000 + i, 1000, 10, &skipped);
  CU_ASSERT_EQUAL(written, 10);
  CU_ASSERT_TRUE(log_burst_due(&b, 6000, 1000, 10, &skipped));
  CU_ASSERT_EQUAL(skipped, 15);
  CU_ASSERT_TRUE(log_burst_due(&b, 6001, 1000, 10, &skipped));
  CU_ASSERT_EQUAL(skipped, 0);
}

/* The access log: one line a message; values with blanks, quotes or
 * control characters quoted and escaped; a reopen after a rename writes a
 * new file. */
static void test_access_log(void)
{
  char dir[] = "/tmp/emg-access-XXXXXX", path[64], moved[80], err[256];
  CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/access.log", dir);
  snprintf(moved, sizeof moved, "%s/access.log.1", dir);
  struct access_log *a = access_log_open(path, err, sizeof err);
  CU_ASSERT_FATAL(a != NULL);
  struct access_line l = { .id = 42, .account = "acme", .in = "smpp-in", .out = NULL, .from = "My \"Shop\"",
                           .to = "4917\n1", .part = 2, .parts = 3, .state = "delivered", .smsc_id = "ab c",
                           .error = 7 };
  access_log_write(a, &l);
  access_log_flush(a);
  CU_ASSERT_EQUAL(rename(path, moved), 0);
  CU_ASSERT_EQUAL(access_log_reopen(a), 0);
  l.id = 43;
  access_log_write(a, &l);
  access_log_close(a);
  char line[512] = "";
  FILE *f = fopen(moved, "r");
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
  fclose(f);
  const char *rest = strstr(line, " id=42 ");
  CU_ASSERT_PTR_NOT_NULL_FATAL(rest);
  CU_ASSERT_STRING_EQUAL(rest, " id=42 account=acme in=smpp-in out=- from=\"My \\\"Shop\\\"\" to=\"4917\\x0a1\" "
                               "part=2/3 state=delivered smsc_id=\"ab c\" error=7\n");
  CU_ASSERT_EQUAL(line[10], 'T');
  f = fopen(path, "r");
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
  fclose(f);
  CU_ASSERT_PTR_NOT_NULL(strstr(line, " id=43 "));
  unlink(path);
  unlink(moved);
  rmdir(dir);
  /* A file that cannot be opened: the reason, naming it. */
  CU_ASSERT_PTR_NULL(access_log_open("/nonexistent-dir/access.log", err, sizeof err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent-dir/access.log: No such file"));
}

void suite_log(void);
void suite_log(void)
{
  static const struct test_case cases[] = {
    { "log4crc refines levels and appenders", test_log4crc },
    { "line format", test_line_format },
    { "levels filter and change", test_levels },
    { "categories created once", test_categories },
    { "init failure", test_init_failure },
    { "long lines truncated cleanly", test_truncation },
    { "8 threads x 10000 lines", test_threads },
    { "dropped and counted when the writer is behind", test_drop_when_behind },
    { "rate-limited lines", test_rate_limited_lines },
    { "the access log: fields, quoting, reopen", test_access_log },
    { NULL, NULL },
  };
  test_add_suite("log", cases);
}
