/* emgctl.c - the operator's command line for emgd's admin API.
 *
 * usage: emgctl [--url URL] [--token T | --token-file FILE] [--json] COMMAND
 *   status | connectors | queues | queue NAME [OFFSET [LIMIT]] | msg X |
 *   pause NAME | resume NAME | drain NAME | reload | watch [--count N] [--interval S] |
 *   accounts | account add|set|enable|disable|delete|credit|show NAME [options]
 * URL and token also come from EMGCTL_URL and EMGCTL_TOKEN (else
 * EMGCTL_TOKEN_FILE, else the package's /etc/emg/admin.token). Aligned tables
 * for people, --json for scripts. Exit: 0 ok, 1 error, 3 unauthorised,
 * 5 bad argument.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "emgctl_account.h"

/* The package's admin token (debian/emg.postinst writes it). */
#ifndef ADMIN_TOKEN_DEFAULT
#define ADMIN_TOKEN_DEFAULT "/etc/emg/admin.token"
#endif

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_UNAUTHORISED = 3, EXIT_USAGE = 5 };

/* ---- HTTP ---- */

struct body {
  char *data;
  size_t len;
};

static size_t collect(char *ptr, size_t size, size_t n, void *arg)
{
  struct body *b = arg;
  char *grown = realloc(b->data, b->len + size * n + 1);
  if (!grown)
    return 0;
  memcpy(grown + b->len, ptr, size * n);
  b->data = grown;
  b->len += size * n;
  b->data[b->len] = 0;
  return size * n;
}

/* CAs an https:// URL's certificate must chain to; NULL = the system's. */
static const char *ca_file;

/* What went wrong with a request: into why (why_len bytes) when given,
 * else on stderr. */
static char *request_why;
static size_t request_why_len;
static void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void complain(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (request_why) {
    vsnprintf(request_why, request_why_len, fmt, ap);
  } else {
    fputs("emgctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  }
  va_end(ap);
}

/* Sends method path; on success *out is the parsed JSON. Returns an exit
 * code, having said what went wrong (complain). */
static int request_json(const char *url, const char *token, const char *method, const char *path,
                        const char *send, json_t **out)
{
  char full[1024], auth[512];
  struct body b = { NULL, 0 };
  snprintf(full, sizeof full, "%s%s", url, path);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
  *out = NULL;
  CURL *c = curl_easy_init();
  if (!c)
    return EXIT_ERROR;
  struct curl_slist *headers = curl_slist_append(NULL, auth);
  if (send) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, send);
  }
  curl_easy_setopt(c, CURLOPT_URL, full);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (ca_file && *ca_file)
    curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  int exit_code = EXIT_OK;
  json_t *j = rc == CURLE_OK ? json_loads(b.data ? b.data : "", 0, NULL) : NULL;
  const char *error = json_string_value(json_object_get(j, "error"));
  if (rc != CURLE_OK) {
    complain("%s: %s", full, curl_easy_strerror(rc));
    exit_code = EXIT_ERROR;
  } else if (status == 401) {
    complain("%s: unauthorised (check --token or EMGCTL_TOKEN)", full);
    exit_code = EXIT_UNAUTHORISED;
  } else if (!j) {
    complain("%s: HTTP %ld, and the answer is not JSON", full, status);
    exit_code = EXIT_ERROR;
  } else if (status != 200 && status != 201 && status != 409 && status != 422) {
    /* 409 is an action refused with its reason, 422 a reload refused in
     * part with its items: printed with the result. */
    complain("%s: %s", path, error ? error : "failed");
    exit_code = status == 400 ? EXIT_USAGE : EXIT_ERROR;
  }
  if (exit_code == EXIT_OK)
    *out = j;
  else
    json_decref(j);
  free(b.data);
  return exit_code;
}

/* ---- values from the answers ---- */

/* The value at a dotted path ("queue.in_flight"), or NULL. */
static json_t *at(json_t *j, const char *path)
{
  const char *dot;
  while (j && (dot = strchr(path, '.'))) {
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
    j = json_object_get(j, key);
    path = dot + 1;
  }
  return json_object_get(j, path);
}

static long long num(json_t *j, const char *path)
{
  return (long long)json_integer_value(at(j, path));
}

static double real(json_t *j, const char *path)
{
  return json_number_value(at(j, path));
}

/* A string, "-" for null or missing. */
static const char *text(json_t *j, const char *path)
{
  const char *s = json_string_value(at(j, path));
  return s && *s ? s : "-";
}

/* A number with one decimal, "-" for null. */
static const char *decimal(json_t *j, const char *path, char *buf, size_t cap)
{
  json_t *v = at(j, path);
  if (!json_is_number(v))
    return "-";
  snprintf(buf, cap, "%.1f", json_number_value(v));
  return buf;
}

/* "2026-01-02 03:04:05.678" from the API's ISO time, "-" for null. */
static const char *when(json_t *j, const char *path, char *buf, size_t cap)
{
  const char *iso = json_string_value(at(j, path));
  if (!iso)
    return "-";
  snprintf(buf, cap, "%.23s", iso);
  char *t = strchr(buf, 'T');
  if (t)
    *t = ' ';
  return buf;
}

/* ---- aligned tables ---- */

#define MAX_COLS 20
/* Cells of a row are given as one string, separated by SEP. */
#define SEP "\x1f"

/* --wide: every column and row; by default the tables fit 80 columns. */
static bool wide;

struct table {
  unsigned ncols;
  const char *align;           /* 'l' or 'r' per column; 'L' or 'R': shown with --wide only */
  char **rows;                 /* one string per row, cells separated by SEP; NULL = a rule */
  size_t n, cap;
  size_t width[MAX_COLS];      /* of each column, in characters */
};

static void table_init(struct table *t, const char *align)
{
  memset(t, 0, sizeof *t);
  t->align = align;
  t->ncols = (unsigned)strlen(align);
  if (t->ncols > MAX_COLS)
    t->ncols = MAX_COLS;
}

static void table_push(struct table *t, char *row)
{
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 32;
    char **grown = realloc(t->rows, cap * sizeof *grown);
    if (!grown) {
      free(row);
      return;
    }
    t->rows = grown;
    t->cap = cap;
  }
  t->rows[t->n++] = row;
}

static void table_row(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void table_row(struct table *t, const char *fmt, ...)
{
  va_list ap;
  char *row = NULL;
  va_start(ap, fmt);
  if (vasprintf(&row, fmt, ap) == -1)
    row = NULL;
  va_end(ap);
  if (row)
    table_push(t, row);
}

static void table_rule(struct table *t)
{
  table_push(t, NULL);
}

/* Width on a terminal: UTF-8 continuation bytes take no column. */
static size_t columns(const char *s, size_t len)
{
  size_t w = 0;
  for (size_t i = 0; i < len; i++)
    w += ((unsigned char)s[i] & 0xC0) != 0x80;
  return w;
}

/* Calls fn for each cell of row (cells past ncols are ignored). */
static void cells(const struct table *t, const char *row,
                  void (*fn)(const struct table *t, unsigned col, const char *cell, size_t len, void *arg),
                  void *arg)
{
  for (unsigned col = 0; col < t->ncols; col++) {
    const char *end = row ? strchr(row, SEP[0]) : NULL;
    size_t len = row ? (end ? (size_t)(end - row) : strlen(row)) : 0;
    fn(t, col, row ? row : "", len, arg);
    row = row && end ? end + 1 : NULL;
  }
}

static bool shown(const struct table *t, unsigned col)
{
  return wide || (t->align[col] != 'L' && t->align[col] != 'R');
}

/* The last column shown: no separator after it. */
static unsigned last_shown(const struct table *t)
{
  unsigned last = 0;
  for (unsigned c = 0; c < t->ncols; c++)
    if (shown(t, c))
      last = c;
  return last;
}

static void widen(const struct table *t, unsigned col, const char *cell, size_t len, void *arg)
{
  size_t *width = arg, w = columns(cell, len);
  if (w > width[col])
    width[col] = w;
}

/* Control characters (from a peer's error text, say) are shown as '?':
 * they must not move the cursor or recolour the operator's terminal. */
static void print_cell(const struct table *t, unsigned col, const char *cell, size_t len, void *arg)
{
  FILE *line = arg;
  if (!shown(t, col))
    return;
  size_t pad = t->width[col] - columns(cell, len);
  bool right = t->align[col] == 'r' || t->align[col] == 'R';
  if (right)
    fprintf(line, "%*s", (int)pad, "");
  for (size_t i = 0; i < len; i++)
    fputc((unsigned char)cell[i] < 0x20 || cell[i] == 0x7f ? '?' : cell[i], line);
  if (!right)
    fprintf(line, "%*s", (int)pad, "");
  if (col < last_shown(t))
    fputs("  ", line);
}

/* Prints the rows aligned (numbers right, text left), without trailing
 * blanks, and frees them. */
static void table_print(struct table *t)
{
  memset(t->width, 0, sizeof t->width);
  for (size_t r = 0; r < t->n; r++)
    if (t->rows[r])
      cells(t, t->rows[r], widen, t->width);
  for (size_t r = 0; r < t->n; r++) {
    char *text_out = NULL;
    size_t len = 0;
    FILE *line = open_memstream(&text_out, &len);
    if (!line)
      break;
    if (!t->rows[r]) {
      for (unsigned c = 0; c < t->ncols; c++)
        for (size_t i = 0; shown(t, c) && i < t->width[c] + (c < last_shown(t) ? 2 : 0); i++)
          fputc('-', line);
    } else {
      cells(t, t->rows[r], print_cell, line);
    }
    fclose(line);
    while (len && text_out[len - 1] == ' ')
      len--;
    printf("%.*s\n", (int)len, text_out);
    free(text_out);
  }
  for (size_t r = 0; r < t->n; r++)
    free(t->rows[r]);
  free(t->rows);
  t->rows = NULL;
  t->n = t->cap = 0;
}

/* A count as it fits a narrow column: exact below 100,000, else with a
 * unit (k, M, G; "123.4k"); always exact with --wide. */
static const char *count_text(long long v, char *buf, size_t cap)
{
  static const char units[] = "kMGT";
  double x = (double)v;
  int u = -1;
  if (wide || (v < 100000 && v > -100000)) {
    snprintf(buf, cap, "%lld", v);
    return buf;
  }
  while ((x >= 1000 || x <= -1000) && u < 3) {
    x /= 1000;
    u++;
  }
  snprintf(buf, cap, "%.1f%c", x, units[u]);
  return buf;
}

/* ---- the commands' tables ---- */

static void print_status(json_t *s)
{
  char since[32];
  printf("emgd %s, node %lld, up %lld s (since %.19s UTC), persist %s\n\n", text(s, "version"), num(s, "node_id"),
         num(s, "uptime_s"), when(s, "started", since, sizeof since), json_is_true(at(s, "persist")) ? "on" : "off");

  struct table t;
  table_init(&t, "lr");
  table_row(&t, "TOTALS (since start)" SEP "COUNT");
  json_t *totals = at(s, "totals"), *v;
  json_t *refused_by = at(s, "refused_by");
  const char *key;
  bool refused_shown = false;
  json_object_foreach(totals, key, v) {
    /* The refusals as one total and its reasons (every reason with --wide,
     * else those that happened), where the first of them stands. */
    if (json_is_object(refused_by) && strncmp(key, "refused_", 8) == 0 && json_object_get(refused_by, key + 8)) {
      if (refused_shown)
        continue;
      refused_shown = true;
      table_row(&t, "refused" SEP "%lld", num(s, "refused_messages"));
      json_t *n;
      const char *reason;
      json_object_foreach(refused_by, reason, n)
        if (wide || json_integer_value(n))
          table_row(&t, "  %s" SEP "%lld", reason, (long long)json_integer_value(n));
      continue;
    }
    table_row(&t, "%s" SEP "%lld", key, (long long)json_integer_value(v));
  }
  table_print(&t);

  table_init(&t, "lrrr");
  table_row(&t, "RATES (msg/s)" SEP "LAST 1 s" SEP "LAST 10 s" SEP "LAST 60 s");
  table_row(&t, "received" SEP "%.1f" SEP "%.1f" SEP "%.1f", real(s, "rates.1s.received"),
            real(s, "rates.10s.received"), real(s, "rates.60s.received"));
  table_row(&t, "sent" SEP "%.1f" SEP "%.1f" SEP "%.1f", real(s, "rates.1s.sent"), real(s, "rates.10s.sent"),
            real(s, "rates.60s.sent"));
  putchar('\n');
  table_print(&t);

  table_init(&t, "lrrrr");
  table_row(&t, "LIMITS" SEP "NOW" SEP "OF" SEP "SOFT LIMIT" SEP "USE");
  table_row(&t, "in flight (messages)" SEP "%lld" SEP "%lld" SEP "%lld" SEP "%.1f %%", num(s, "queue.in_flight"),
            num(s, "queue.hard_limit"), num(s, "queue.soft_limit"),
            num(s, "queue.hard_limit") ? 100.0 * (double)num(s, "queue.in_flight") / (double)num(s, "queue.hard_limit") : 0.0);
  table_row(&t, "queued (messages, receipts)" SEP "%lld" SEP "" SEP "" SEP "", num(s, "queue.queued"));
  table_row(&t, "DLR table (entries)" SEP "%lld" SEP "%lld" SEP "" SEP "%.1f %%", num(s, "dlr.used"), num(s, "dlr.size"),
            real(s, "dlr.used_pct"));
  putchar('\n');
  table_print(&t);

  char c1[24], c2[24], c3[24], c4[24], c5[24];
  printf("\nDLR table: %s inserted, %s matched, %s unmatched, %s evicted, %s expired\n",
         count_text(num(s, "dlr.inserted"), c1, sizeof c1), count_text(num(s, "dlr.matched"), c2, sizeof c2),
         count_text(num(s, "dlr.unmatched"), c3, sizeof c3), count_text(num(s, "dlr.evicted"), c4, sizeof c4),
         count_text(num(s, "dlr.expired"), c5, sizeof c5));
  printf("history: keeps the last %s message events (%s recorded since start)\n",
         count_text(num(s, "history.capacity"), c1, sizeof c1), count_text(num(s, "history.recorded"), c2, sizeof c2));
  if (json_is_object(at(s, "spool")))
    printf("journal: %s, %.1f MB on disk, %s live messages, %s live receipts,\n         %s records, %s fsyncs\n",
           json_is_true(at(s, "spool.failing")) ? "FAILING" : "ok", (double)num(s, "spool.disk_bytes") / 1e6,
           count_text(num(s, "spool.live_messages"), c1, sizeof c1),
           count_text(num(s, "spool.live_receipts"), c2, sizeof c2), count_text(num(s, "spool.records"), c3, sizeof c3),
           count_text(num(s, "spool.fsyncs"), c4, sizeof c4));
  else
    printf("journal: none (persist off)\n");
  if (json_is_true(at(s, "spool.failing")))
    printf("journal failing: %s\n", text(s, "spool.reason"));
  if (json_is_object(at(s, "database.message_log")))
    printf("message log: %s, lag %.1f s, %s events written, %s pending, %s lost\n  last error: %s\n",
           json_is_true(at(s, "database.message_log.connected")) ? "connected" : "NOT CONNECTED",
           real(s, "database.message_log.lag_s"), count_text(num(s, "database.message_log.events_written"), c1, sizeof c1),
           count_text(num(s, "database.message_log.events_pending"), c2, sizeof c2),
           count_text(num(s, "database.message_log.events_lost"), c3, sizeof c3),
           text(s, "database.message_log.last_error"));
  if (json_is_object(at(s, "database.cluster")))
    printf("cluster: %s, receipts of other nodes' messages: %lld resolved, %lld handed over,\n"
           "  %lld claimed; last error: %s\n",
           json_is_true(at(s, "database.cluster.connected")) ? "connected" : "NOT CONNECTED",
           num(s, "database.cluster.receipts_resolved"), num(s, "database.cluster.receipts_handed_over"),
           num(s, "database.cluster.receipts_claimed"), text(s, "database.cluster.last_error"));
  if (!json_is_object(at(s, "database")))
    printf("database: none\n");

  json_t *plugins = at(s, "plugins"), *p;
  size_t i;
  if (json_array_size(plugins)) {
    table_init(&t, "lrrrrr");
    table_row(&t, "PLUGIN" SEP "CALLS" SEP "REFUSED" SEP "FLAGGED" SEP "ERRORS" SEP "TIME-OUTS");
    json_array_foreach(plugins, i, p)
      table_row(&t, "%s" SEP "%lld" SEP "%lld" SEP "%lld" SEP "%lld" SEP "%lld", text(p, "name"), num(p, "calls"),
                num(p, "refusals"), num(p, "flagged"), num(p, "errors"), num(p, "timeouts"));
    putchar('\n');
    table_print(&t);
  } else {
    printf("plugins: none\n");
  }
}

/* "<=2.5" ms: latencies are histogram buckets, so a quantile is a bound. */
static const char *bound_ms(json_t *j, const char *path, char *buf, size_t cap)
{
  json_t *v = at(j, path);
  if (!json_is_number(v))
    return num(j, "count") ? ">10000" : "-";
  snprintf(buf, cap, "<=%g", json_number_value(v));
  return buf;
}

/* --wide: each connector's refusals by reason, a column for each reason
 * that any connector has. */
static void print_refused_by(json_t *list)
{
  json_t *c, *n;
  size_t i;
  const char *reason;
  const char *cols[MAX_COLS];
  unsigned ncols = 0;
  json_object_foreach(at(json_array_get(list, 0), "refused_by"), reason, n) {
    bool any = false;
    json_array_foreach(list, i, c)
      any = any || num(at(c, "refused_by"), reason) > 0;
    if (any && ncols < MAX_COLS - 1)
      cols[ncols++] = reason;
  }
  if (!ncols) {
    printf("REFUSED BY REASON: none\n\n");
    return;
  }
  char align[MAX_COLS + 1] = "l", *row;
  memset(align + 1, 'r', ncols);
  align[ncols + 1] = '\0';
  struct table t;
  table_init(&t, align);
  char head[1024] = "REFUSED BY REASON";
  for (unsigned k = 0; k < ncols; k++)
    snprintf(head + strlen(head), sizeof head - strlen(head), SEP "%s", cols[k]);
  table_row(&t, "%s", head);
  json_array_foreach(list, i, c) {
    if (!num(c, "refused_messages"))
      continue;
    if (asprintf(&row, "%s", text(c, "name")) == -1)
      break;
    for (unsigned k = 0; k < ncols; k++) {
      char *longer;
      if (asprintf(&longer, "%s" SEP "%lld", row, num(at(c, "refused_by"), cols[k])) == -1)
        longer = NULL;
      free(row);
      if (!(row = longer))
        break;
    }
    if (row)
      table_push(&t, row);
  }
  table_print(&t);
  putchar('\n');
}

static void print_connectors(json_t *j)
{
  json_t *list = at(j, "connectors"), *c, *in;
  size_t i, k;
  long long bound = 0, instances = 0, used = 0, room = 0, sums[7] = { 0 };
  /* REFUSED: the messages refused (an older emgd: every request answered with an error). */
  bool by_reason = json_is_object(at(json_array_get(list, 0), "refused_by"));
  const char *const counters[7] = { "submits_in", "submits_out", "receipts_in", "receipts_out",
                                    by_reason ? "refused_messages" : "refused", "errors", "reconnects" };
  char n[7][24];
  struct table t;
  /* Narrow: the connectors' traffic; --wide adds each instance and its peer. */
  table_init(&t, "llRlLLLrrrrrrrRL");
  table_row(&t, "CONNECTOR" SEP "PROTOCOL" SEP "#" SEP "BOUND" SEP "PEER" SEP "USER" SEP "BIND" SEP "WINDOW" SEP "IN" SEP
                "OUT" SEP "DLR IN" SEP "DLR OUT" SEP "REFUSED" SEP "ERRORS" SEP "RECONNECTS" SEP "LAST ERROR");
  table_rule(&t);
  json_array_foreach(list, i, c) {
    char state[48];
    if (json_is_true(at(c, "paused")))
      snprintf(state, sizeof state, "paused");
    else
      snprintf(state, sizeof state, "%lld/%lld", num(c, "bound"), num(c, "instance_count"));
    const char *mode = text(c, "mode");
    for (unsigned m = 0; m < 7; m++)
      count_text(num(c, counters[m]), n[m], sizeof n[m]);
    table_row(&t, "%s" SEP "%s %s" SEP "" SEP "%s" SEP "%s" SEP "" SEP "" SEP "%lld/%lld" SEP "%s" SEP "%s" SEP "%s" SEP
                  "%s" SEP "%s" SEP "%s" SEP "%s" SEP "",
              text(c, "name"), text(c, "protocol"),
              wide ? mode : strcmp(mode, "server") == 0 ? "srv" : strcmp(mode, "client") == 0 ? "cli" : mode, state,
              text(c, "address"), num(c, "window_used"), num(c, "window") * num(c, "instance_count"), n[0], n[1],
              n[2], n[3], n[4], n[5], n[6]);
    json_array_foreach(at(c, "instances"), k, in) {
      if (!wide)
        break;
      char since[32], last[256];
      const char *error_time = when(in, "last_error_time", since, sizeof since);
      if (json_is_string(at(in, "last_error")))
        snprintf(last, sizeof last, "%s: %s", error_time, text(in, "last_error"));
      else
        snprintf(last, sizeof last, "-");
      table_row(&t, "" SEP "" SEP "%lld" SEP "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%lld/%lld" SEP "%lld" SEP "%lld" SEP
                    "%lld" SEP "%lld" SEP "%lld" SEP "%lld" SEP "%lld" SEP "%s",
                num(in, "index"), text(in, "state"), text(in, "peer"), text(in, "user"), text(in, "bind"),
                num(in, "window_used"), num(in, "window"), num(in, "submits_in"), num(in, "submits_out"),
                num(in, "receipts_in"), num(in, "receipts_out"), num(in, "refused"), num(in, "errors"),
                num(in, "reconnects"), last);
    }
    bound += num(c, "bound");
    instances += num(c, "instance_count");
    used += num(c, "window_used");
    room += num(c, "window") * num(c, "instance_count");
    for (unsigned m = 0; m < 7; m++)
      sums[m] += num(c, counters[m]);
  }
  table_rule(&t);
  for (unsigned m = 0; m < 7; m++)
    count_text(sums[m], n[m], sizeof n[m]);
  table_row(&t, "total" SEP "" SEP "" SEP "%lld/%lld" SEP "" SEP "" SEP "" SEP "%lld/%lld" SEP "%s" SEP "%s" SEP "%s" SEP
                "%s" SEP "%s" SEP "%s" SEP "%s" SEP "",
            bound, instances, used, room, n[0], n[1], n[2], n[3], n[4], n[5], n[6]);
  table_print(&t);
  printf("IN, OUT: messages; DLR: receipts; since start. WINDOW: awaiting answers/room\n");
  if (by_reason)
    printf("REFUSED: messages refused on their way in%s\n",
           wide ? " (an instance's: its requests answered with an error)" : ", by reason with --wide");
  if (!wide)
    printf("(--wide: each instance, its peer and last error)\n");
  putchar('\n');
  if (wide && by_reason)
    print_refused_by(list);

  table_init(&t, "lRrrRrrRrr");
  table_row(&t, "LATENCY (ms)" SEP "ACKS" SEP "ACK p50" SEP "ACK p99" SEP "RESPONSES" SEP "RESP p50" SEP "RESP p99" SEP
                "DELIVERIES" SEP "DELIV p50" SEP "DELIV p99");
  json_array_foreach(list, i, c) {
    char b[6][24];
    json_t *l = at(c, "latency");
    table_row(&t, "%s" SEP "%lld" SEP "%s" SEP "%s" SEP "%lld" SEP "%s" SEP "%s" SEP "%lld" SEP "%s" SEP "%s",
              text(c, "name"), num(l, "ack.count"), bound_ms(at(l, "ack"), "p50_ms", b[0], sizeof b[0]),
              bound_ms(at(l, "ack"), "p99_ms", b[1], sizeof b[1]), num(l, "response.count"),
              bound_ms(at(l, "response"), "p50_ms", b[2], sizeof b[2]),
              bound_ms(at(l, "response"), "p99_ms", b[3], sizeof b[3]), num(l, "delivery.count"),
              bound_ms(at(l, "delivery"), "p50_ms", b[4], sizeof b[4]),
              bound_ms(at(l, "delivery"), "p99_ms", b[5], sizeof b[5]));
  }
  table_print(&t);
}

static void print_queues(json_t *j)
{
  json_t *list = at(j, "queues"), *q, *acct;
  size_t i, k;
  struct table t;
  char age[32];
  table_init(&t, "llrrrl");
  table_row(&t, "QUEUE" SEP "ACCOUNT" SEP "QUEUED" SEP "OLDEST (s)" SEP "MAX" SEP "PAUSED");
  json_array_foreach(list, i, q) {
    char max[24] = "-";
    if (num(q, "max_queue"))
      snprintf(max, sizeof max, "%lld", num(q, "max_queue"));
    table_row(&t, "%s" SEP "" SEP "%lld" SEP "%s" SEP "%s" SEP "%s", text(q, "connector"), num(q, "queued"),
              decimal(q, "oldest_age_s", age, sizeof age), max, json_is_true(at(q, "paused")) ? "yes" : "no");
    json_array_foreach(at(q, "accounts"), k, acct)
      table_row(&t, "" SEP "%s" SEP "%lld" SEP "%s" SEP "" SEP "", text(acct, "user"), num(acct, "queued"),
                decimal(acct, "oldest_age_s", age, sizeof age));
  }
  table_rule(&t);
  table_row(&t, "total" SEP "" SEP "%lld" SEP "" SEP "" SEP "", num(j, "total"));
  table_print(&t);
  printf("QUEUED: messages, receipts. In flight: %lld (soft limit %lld, hard %lld)\n",
         num(j, "in_flight"), num(j, "soft_limit"), num(j, "hard_limit"));
}

static void print_accounts(json_t *j)
{
  json_t *a;
  size_t i;
  struct table t;
  table_init(&t, "llrrrrrR");
  /* Refusals as rate/sender/credit: the table fits 80 columns. */
  table_row(&t, "ACCOUNT" SEP "STATE" SEP "BINDS" SEP "RATE/MAX" SEP "CREDIT" SEP "SUBMITTED" SEP "REFUSED R/S/C" SEP
                "DELIVERED");
  json_array_foreach(at(j, "accounts"), i, a) {
    char binds[32], rate[48], credit[32] = "unlimited", delivered[48] = "-";
    long long ok = num(a, "receipts.delivered"), all = ok + num(a, "receipts.undelivered");
    if (all)
      snprintf(delivered, sizeof delivered, "%.1f %% of %lld", 100.0 * (double)ok / (double)all, all);
    if (num(a, "max_binds"))
      snprintf(binds, sizeof binds, "%lld/%lld", num(a, "binds"), num(a, "max_binds"));
    else
      snprintf(binds, sizeof binds, "%lld", num(a, "binds"));
    if (real(a, "max_rate") > 0)
      snprintf(rate, sizeof rate, "%.0f/%g", real(a, "rate_now"), real(a, "max_rate"));
    else
      snprintf(rate, sizeof rate, "%.0f/-", real(a, "rate_now"));
    if (json_is_integer(at(a, "credit_left")))
      snprintf(credit, sizeof credit, "%lld", num(a, "credit_left"));
    table_row(&t, "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%lld" SEP "%lld/%lld/%lld" SEP "%s", text(a, "name"),
              text(a, "state"), binds, rate, credit, num(a, "submitted"),
              num(a, "refused.rate"), num(a, "refused.sender"), num(a, "refused.credit"), delivered);
  }
  table_print(&t);
}

static void print_queue(json_t *j)
{
  json_t *list = at(j, "messages"), *m;
  size_t i;
  printf("%s: %lld waiting%s", text(j, "connector"), num(j, "queued"),
         json_is_true(at(j, "paused")) ? " (paused)" : "");
  if (num(j, "scheduled"))
    printf(", %lld held until their time", num(j, "scheduled"));
  printf("; from %lld, %zu shown\n", num(j, "offset"), json_array_size(list));
  struct table t;
  table_init(&t, "lLLlLrrrLl");
  table_row(&t, "ID" SEP "KIND" SEP "FROM" SEP "TO" SEP "ORIGIN" SEP "PRIO" SEP "AGE (s)" SEP "TRIES" SEP
                "NEXT ATTEMPT (UTC)" SEP "LAST ERROR / STATE");
  json_array_foreach(list, i, m) {
    char age[32], next[32], origin[96];
    bool scheduled = json_is_true(at(m, "scheduled"));
    if (json_is_object(at(m, "origin")))
      snprintf(origin, sizeof origin, "%s/%s", text(m, "origin.connector"), text(m, "origin.user"));
    else
      snprintf(origin, sizeof origin, "%s", text(m, "state"));
    /* Narrow, the last column says what matters most: a scheduled one's time, else its last error. */
    char last[160];
    const char *next_text = when(m, scheduled ? "send_at" : "next_attempt", next, sizeof next);
    if (!wide && scheduled)
      snprintf(last, sizeof last, "scheduled %.19s", next_text);
    else if (!wide && strcmp(text(m, "kind"), "message") != 0)
      snprintf(last, sizeof last, "%s", text(m, "kind"));
    else
      snprintf(last, sizeof last, "%s", text(m, "last_error"));
    table_row(&t, "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%lld" SEP "%s" SEP "%lld" SEP "%s" SEP "%s",
              text(m, "id"), scheduled ? "scheduled" : text(m, "kind"), text(m, "from"), text(m, "to"), origin,
              num(m, "priority"), decimal(m, "age_s", age, sizeof age), num(m, "attempts"), next_text, last);
  }
  table_print(&t);
}

static void print_message(json_t *j)
{
  printf("message %s (%s): %s\n%s\n", text(j, "id"), text(j, "id_hex"), text(j, "state"), text(j, "summary"));
  printf("receipt from the SMSC: %s; receipt to the origin (%s): %s\n\n", text(j, "receipt.from_smsc"),
         text(j, "receipt.origin"), text(j, "receipt.to_origin"));
  struct table t;
  table_init(&t, "lllll");
  char first[32] = "";
  when(json_array_get(at(j, "events"), 0), "time", first, sizeof first);
  table_row(&t, "%s" SEP "EVENT" SEP "CONNECTOR" SEP "STATE" SEP "DETAIL",
            wide ? "TIME (UTC)" : (first[10] = '\0', first));
  json_t *e;
  size_t i;
  json_array_foreach(at(j, "events"), i, e) {
    char time_text[32], detail[128];
    if (num(e, "code"))
      snprintf(detail, sizeof detail, "%s (code %lld)", text(e, "detail"), num(e, "code"));
    else
      snprintf(detail, sizeof detail, "%s", text(e, "detail"));
    /* Narrow: the time of day (the first event's date is in the header). */
    const char *stamp = when(e, "time", time_text, sizeof time_text);
    table_row(&t, "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%s", !wide && strlen(stamp) > 11 ? stamp + 11 : stamp,
              text(e, "event"), text(e, "connector"), text(e, "state"), detail);
  }
  table_print(&t);
}

static void print_action(json_t *j)
{
  if (json_object_get(j, "error"))
    printf("refused: %s\n", json_string_value(json_object_get(j, "error")));
  else if (json_object_get(j, "moved"))
    printf("%s drained: %lld moved, %lld stay\n", text(j, "connector"), num(j, "moved"), num(j, "stayed"));
  else if (json_object_get(j, "paused"))
    printf("%s %s\n", text(j, "connector"), json_is_true(json_object_get(j, "paused")) ? "paused" : "resumed");
  else
    printf("reloaded\n");
}

/* A reload's answer item by item: what went in, what was refused and why. */
static void print_reload(json_t *j)
{
  bool done = json_is_true(json_object_get(j, "reloaded"));
  json_t *applied = json_object_get(j, "applied"), *refused = json_object_get(j, "refused"), *e;
  size_t i;
  if (!json_is_array(refused)) {
    print_action(j);   /* a server without items: its one reason, if any */
    return;
  }
  printf("%s\n", done                        ? "reloaded"
                  : json_array_size(applied) ? "reloaded in part: refused items stay as they were"
                                             : "reload refused: nothing changed");
  json_array_foreach(applied, i, e)
    printf("  applied: %s\n", json_string_value(e));
  json_array_foreach(refused, i, e)
    printf("  refused: %s: %s\n", text(e, "item"), text(e, "error"));
  if (num(j, "refused_more"))
    printf("  refused: %lld more\n", num(j, "refused_more"));
}

/* ---- main ---- */

static void usage(FILE *out)
{
  fprintf(out,
          "usage: emgctl [--url URL] [--token-file FILE | --token T] [--cacert FILE] [--json] [--wide]\n"
          "              COMMAND\n"
          "  status                        totals, rates, limits, DLR table, journal, plugins\n"
          "  connectors                    each connector and its instances\n"
          "  queues                        what waits, per connector and account\n"
          "  accounts                      each account: sessions, rate, credit, submits and refusals\n"
          "  account add|set|enable|disable|delete|credit|show NAME [--password P]\n"
          "          [--connector C].. [--allow-ip CIDR].. [--max-binds N] [--max-rate R]\n"
          "          [--credit N|unlimited] [--sender S].. [--default-sender S] [--expires DATE]\n"
          "          [--tls-subject SUBJECT]  (a client certificate stands for it; \"\" = none)\n"
          "                                change an account of general.accounts_file at once;\n"
          "                                credit NAME --credit N sets, --credit +N/-N adds\n"
          "  queue NAME [OFFSET [LIMIT]]   the messages waiting for NAME (default 0 50)\n"
          "  msg X                         find messages: X is our id (decimal or 0x hex), an\n"
          "                                SMSC's id or a recipient; one is shown with its history\n"
          "  pause NAME | resume NAME      stop or restart a connector's sending\n"
          "  drain NAME                    move what waits for NAME to the other connectors of\n"
          "                                each message's route that can take it\n"
          "  reload                        re-read the configuration\n"
          "  watch [--count N] [--interval S]  the status every S seconds (default 1)\n"
          "  top [--count N] [--interval S]    the busiest connectors and accounts, every S seconds\n"
          "  --wide                        every column (the tables fit 80 columns without it)\n"
          "  --version, -h/--help          the version, this text\n"
          "URL defaults to $EMGCTL_URL, else http://127.0.0.1:8480. The token: --token-file FILE\n"
          "(its first line), --token T (ps shows it to every user: prefer the file), else\n"
          "$EMGCTL_TOKEN, else the file $EMGCTL_TOKEN_FILE, else " ADMIN_TOKEN_DEFAULT "\n"
          "when it is readable (the package's; root and group emg may read it).\n"
          "an https:// URL's certificate is verified against --cacert (or $EMGCTL_CACERT, else\n"
          "the system's CAs).\n"
          "Exit status: 0 ok, 1 error, 3 unauthorised, 5 bad argument.\n");
}

/* A whole number of at least min in text. Returns 0, or -1. */
static int parse_count(const char *text_in, long min, long *out)
{
  char *end;
  errno = 0;
  long v = strtol(text_in, &end, 10);
  if (!*text_in || *end || errno || v < min)
    return -1;
  *out = v;
  return 0;
}

static void show(json_t *j, bool json, void (*print)(json_t *), int flags)
{
  if (json) {
    json_dumpf(j, stdout, flags | JSON_REAL_PRECISION(6));
    putchar('\n');
  } else {
    print(j);
  }
}

/* emgctl msg X: the messages whose id is X, that an SMSC knows by X, or
 * sent to X, recent ones from emgd's history and older ones from its
 * message log. One: shown whole; several: listed, newest first. */
static int show_message(const char *url, const char *token, const char *id, const char *escaped, bool json)
{
  char path[600];
  json_t *j = NULL;
  int rc;
  snprintf(path, sizeof path, "/api/messages?q=%s", escaped);
  if ((rc = request_json(url, token, "GET", path, NULL, &j)) != EXIT_OK)
    return rc;
  json_t *list = json_object_get(j, "messages"), *m;
  size_t n = json_array_size(list), i;
  const char *db_error = json_string_value(json_object_get(j, "database_error"));
  if (db_error)
    fprintf(stderr, "emgctl: msg: the message log cannot answer (%s): recent messages only\n", db_error);
  if (n == 0) {
    fprintf(stderr, "emgctl: msg: no message %s: not one of our ids, an SMSC's or a recipient's that emgd "
            "still knows (its history keeps the last %lld events%s)\n", id, num(j, "history_capacity"),
            db_error ? "" : ", then its message log if it has a database");
    json_decref(j);
    return EXIT_ERROR;
  }
  if (n == 1) {
    json_t *only = json_array_get(list, 0);
    char one[64], how[160];
    snprintf(one, sizeof one, "%s", text(only, "id"));
    /* Copied: j goes before they are used. */
    bool by_id = strcmp(text(only, "matched"), "id") == 0;
    snprintf(how, sizeof how, "%s %s: message %s\n", strcmp(text(only, "matched"), "to") == 0 ? "recipient" : "SMSC id",
             id, one);
    json_decref(j);
    snprintf(path, sizeof path, "/api/messages/%s", one);
    if ((rc = request_json(url, token, "GET", path, NULL, &j)) == EXIT_OK) {
      if (!json && !by_id)
        fputs(how, stdout);
      show(j, json, print_message, JSON_INDENT(2));
    }
    json_decref(j);
    return rc;
  }
  if (json) {
    json_dumpf(j, stdout, JSON_INDENT(2));
    putchar('\n');
  } else {
    printf("%s: %zu%s messages, newest first\n", id, n, json_is_true(json_object_get(j, "more")) ? " (of more)" : "");
    struct table t;
    table_init(&t, "llllL");
    table_row(&t, "ID" SEP "BY" SEP "STATE" SEP "TO" SEP "SUMMARY");
    json_array_foreach(list, i, m)
      table_row(&t, "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%s", text(m, "id"), text(m, "matched"), text(m, "state"),
                text(m, "to"), text(m, "summary"));
    table_print(&t);
    if (!wide)
      printf("(--wide: each one's summary; emgctl msg ID: its history)\n");
  }
  json_decref(j);
  return EXIT_OK;
}


/* What watch shows on a terminal: the status in brief, then the
 * connectors' traffic. */
static void print_watch(json_t *s, json_t *c)
{
  char r1[24], r2[24], q[24];
  printf("emgd %s, node %lld, up %lld s, persist %s; journal %s\n", text(s, "version"), num(s, "node_id"),
         num(s, "uptime_s"), json_is_true(at(s, "persist")) ? "on" : "off",
         !json_is_object(at(s, "spool")) ? "none" : json_is_true(at(s, "spool.failing")) ? "FAILING" : "ok");
  printf("received %s/s, sent %s/s (last 10 s); in flight %s of %lld (%.1f %%); DLR table %.1f %%\n",
         count_text((long long)real(s, "rates.10s.received"), r1, sizeof r1),
         count_text((long long)real(s, "rates.10s.sent"), r2, sizeof r2),
         count_text(num(s, "queue.in_flight"), q, sizeof q), num(s, "queue.hard_limit"),
         num(s, "queue.hard_limit") ? 100.0 * (double)num(s, "queue.in_flight") / (double)num(s, "queue.hard_limit")
                                    : 0.0,
         real(s, "dlr.used_pct"));
  putchar('\n');
  if (c)
    print_connectors(c);
}

/* Draws frame (lines) over the screen in place: each line cut to the
 * terminal's width and cleared to its end, as many as fit its height. */
static void draw(const char *frame, bool first)
{
  struct winsize ws = { .ws_row = 24, .ws_col = 80 };
  ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
  unsigned rows = ws.ws_row ? ws.ws_row : 24, cols = ws.ws_col ? ws.ws_col : 80, shown_rows = 0, total = 0;
  for (const char *p = frame; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
    total++;
  fputs(first ? "\033[H\033[2J" : "\033[H", stdout);
  for (const char *p = frame; *p && shown_rows + 1 < rows;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    bool more = total - shown_rows > rows - 1 && shown_rows + 2 == rows;
    if (more) {
      printf("... %u more lines: a taller terminal shows them\033[K\n", total - shown_rows);
    } else {
      printf("%.*s\033[K\n", (int)(len < cols ? len : cols), p);
    }
    shown_rows++;
    if (more)
      break;
    p = end ? end + 1 : p + len;
  }
  fputs("\033[J", stdout);
}

/* ---- top: the busiest connectors and accounts ---- */

struct busy {
  char name[96];
  double a, b, c;                  /* connectors: in, out, errors a second; accounts: submitted, refused */
  double queue;                    /* connectors: the queue now */
};

static long long round_ll(double v)
{
  return (long long)(v < 0 ? v - 0.5 : v + 0.5);
}

static int busier(const void *x, const void *y)
{
  const struct busy *p = x, *q = y;
  double u = p->a + p->b, v = q->a + q->b;
  return u < v ? 1 : u > v ? -1 : strcmp(p->name, q->name);
}

/* The mean of a series' last values in a /api/history answer. */
static double mean_of(json_t *answer, const char *series)
{
  json_t *values = at(json_object_get(at(answer, "series"), series), "values"), *v;
  size_t i, n = json_array_size(values);
  double sum = 0;
  json_array_foreach(values, i, v)
    sum += json_number_value(v);
  return n ? sum / (double)n : 0;
}

static double last_of(json_t *answer, const char *series)
{
  json_t *values = at(json_object_get(at(answer, "series"), series), "values");
  size_t n = json_array_size(values);
  return n ? json_number_value(json_array_get(values, n - 1)) : 0;
}

/* The rates over the last 10 s of every connector and account, from emgd's
 * history, busiest first. Returns the exit code of the requests. */
static int print_top(const char *url, const char *token)
{
  json_t *list = NULL, *s;
  int rc = request_json(url, token, "GET", "/api/history", NULL, &list);
  if (rc != EXIT_OK)
    return rc;
  struct busy conn[64], acct[64];
  size_t nc = 0, na = 0, i;
  json_array_foreach(at(list, "series"), i, s) {
    const char *name = text(s, "name"), *dot;
    size_t len = strlen(name);
    if (strncmp(name, "connector.", 10) == 0 && len > 13 && strcmp(name + len - 3, ".in") == 0 && nc < 64)
      snprintf(conn[nc++].name, sizeof conn[0].name, "%.*s", (int)(len - 13), name + 10);
    else if (strncmp(name, "account.", 8) == 0 && (dot = strrchr(name, '.')) && strcmp(dot, ".submitted") == 0 &&
             na < 64)
      snprintf(acct[na++].name, sizeof acct[0].name, "%.*s", (int)(dot - name - 8), name + 8);
  }
  json_decref(list);
  /* Every series wanted, asked for 32 at a time (what one request may name):
   * a few requests whatever the number of connectors and accounts. */
  static const char *const conn_series[] = { "in", "out", "errors", "queue" }, *const acct_series[] = { "submitted", "refused" };
  size_t wanted = nc * 4 + na * 2;
  json_t *all = json_object();
  char path[8192];
  size_t len = 0, in_path = 0;
  for (size_t w = 0; w < wanted && rc == EXIT_OK; w++) {
    const char *name = w < nc * 4 ? conn[w / 4].name : acct[(w - nc * 4) / 2].name;
    const char *kind = w < nc * 4 ? "connector" : "account";
    const char *what = w < nc * 4 ? conn_series[w % 4] : acct_series[(w - nc * 4) % 2];
    if (!in_path)
      len = (size_t)snprintf(path, sizeof path, "/api/history?since=-10&step=1&series=");
    len += (size_t)snprintf(path + len, sizeof path - len, "%s%s.%.95s.%s", in_path ? "," : "", kind, name, what);
    if (++in_path < 32 && w + 1 < wanted)
      continue;
    json_t *h = NULL;
    if ((rc = request_json(url, token, "GET", path, NULL, &h)) == EXIT_OK)
      json_object_update(all, at(h, "series"));
    json_decref(h);
    in_path = 0;
  }
  json_t *merged = json_pack("{s:o}", "series", all);
  char key[160];
  for (size_t k = 0; k < nc && rc == EXIT_OK; k++) {
    snprintf(key, sizeof key, "connector.%.95s.in", conn[k].name);
    conn[k].a = mean_of(merged, key);
    snprintf(key, sizeof key, "connector.%.95s.out", conn[k].name);
    conn[k].b = mean_of(merged, key);
    snprintf(key, sizeof key, "connector.%.95s.errors", conn[k].name);
    conn[k].c = mean_of(merged, key);
    snprintf(key, sizeof key, "connector.%.95s.queue", conn[k].name);
    conn[k].queue = last_of(merged, key);
  }
  for (size_t k = 0; k < na && rc == EXIT_OK; k++) {
    snprintf(key, sizeof key, "account.%.95s.submitted", acct[k].name);
    acct[k].a = mean_of(merged, key);
    snprintf(key, sizeof key, "account.%.95s.refused", acct[k].name);
    acct[k].b = mean_of(merged, key);
  }
  json_decref(merged);
  if (rc != EXIT_OK)
    return rc;
  qsort(conn, nc, sizeof *conn, busier);
  qsort(acct, na, sizeof *acct, busier);
  struct table t;
  char n1[24], n2[24], n3[24], n4[24];
  table_init(&t, "lrrrr");
  table_row(&t, "CONNECTOR" SEP "IN/s" SEP "OUT/s" SEP "ERRORS/s" SEP "QUEUED");
  for (size_t k = 0; k < nc; k++)
    table_row(&t, "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%s", conn[k].name, count_text(round_ll(conn[k].a), n1, sizeof n1),
              count_text(round_ll(conn[k].b), n2, sizeof n2), count_text(round_ll(conn[k].c), n3, sizeof n3),
              count_text(round_ll(conn[k].queue), n4, sizeof n4));
  table_print(&t);
  putchar('\n');
  table_init(&t, "lrr");
  table_row(&t, "ACCOUNT" SEP "SUBMITTED/s" SEP "REFUSED/s");
  for (size_t k = 0; k < na; k++)
    table_row(&t, "%s" SEP "%s" SEP "%s", acct[k].name, count_text(round_ll(acct[k].a), n1, sizeof n1),
              count_text(round_ll(acct[k].b), n2, sizeof n2));
  table_print(&t);
  printf("rates: the mean of the last 10 s (emgd's history); busiest first\n");
  return EXIT_OK;
}

/* The status (or, top, the busiest connectors and accounts) every
 * interval_s, count times (0: until interrupted). On a terminal the screen
 * is redrawn in place, fitting it, and says so when emgd cannot be
 * reached; otherwise the refreshes follow each other (JSON: one status
 * object per line). Returns the exit code of the last request. */
static int watch(const char *url, const char *token, bool json, long count, double interval_s, bool top)
{
  bool tty = isatty(STDOUT_FILENO) && !json;
  int rc = EXIT_OK;
  char why[512] = "", last_ok[16] = "never";
  char *body = NULL;   /* the last good frame's body */
  for (long n = 0; count == 0 || n < count; n++) {
    if (n) {
      struct timespec pause = { (time_t)interval_s, (long)((interval_s - (double)(time_t)interval_s) * 1e9) };
      nanosleep(&pause, NULL);
    }
    json_t *j = NULL, *c = NULL;
    char *text_out = NULL;
    size_t len = 0;
    if (tty) {
      request_why = why;
      request_why_len = sizeof why;
    }
    if (top) {
      /* The body is drawn into memory, so that a terminal's can be cut to the screen. */
      FILE *mem = open_memstream(&text_out, &len), *saved = stdout;
      if (mem) {
        stdout = mem;
        rc = print_top(url, token);
        stdout = saved;
        fclose(mem);
      }
    } else {
      rc = request_json(url, token, "GET", "/api/status", NULL, &j);
      if (rc == EXIT_OK && tty)
        rc = request_json(url, token, "GET", "/api/connectors", NULL, &c);
      FILE *mem = tty && rc == EXIT_OK ? open_memstream(&text_out, &len) : NULL, *saved = stdout;
      if (mem) {
        stdout = mem;
        print_watch(j, c);
        stdout = saved;
        fclose(mem);
      }
    }
    request_why = NULL;
    if (rc == EXIT_UNAUTHORISED) {
      if (tty)
        fprintf(stderr, "emgctl: %s\n", why);
      json_decref(j);
      json_decref(c);
      free(text_out);
      free(body);
      return rc;
    }
    time_t now = time(NULL);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime(&now));
    if (!tty) {
      if (n && !json)
        putchar('\n');
      if (!json)
        printf("--- %s (every %g s, Ctrl-C to stop)\n", stamp, interval_s);
      if (top && text_out)
        fputs(text_out, stdout);
      else if (j)
        show(j, json, print_status, JSON_COMPACT);
      free(text_out);
    } else {
      if (rc == EXIT_OK) {
        free(body);
        body = text_out;
        strftime(last_ok, sizeof last_ok, "%H:%M:%S", localtime(&now));
      } else {
        free(text_out);
      }
      char *frame = NULL;
      size_t flen = 0;
      FILE *f = open_memstream(&frame, &flen);
      if (f) {
        fprintf(f, "%s  %s  (every %g s, Ctrl-C to stop)\n", url, stamp, interval_s);
        if (rc != EXIT_OK)
          fprintf(f, "EMGD CANNOT BE REACHED: %s\nlast answer at %s; trying again every %g s\n", why, last_ok,
                  interval_s);
        fprintf(f, "\n%s", body ? body : "");
        fclose(f);
        draw(frame, n == 0);
        free(frame);
      }
    }
    json_decref(j);
    json_decref(c);
    fflush(stdout);
  }
  free(body);
  return rc;
}

/* The token in path: its first line, the line's end and blanks around it
 * trimmed, into buf. 0, or -1 with the reason in err. */
static int read_token(const char *path, char *buf, size_t cap, char *err, size_t err_len)
{
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, err_len, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  bool got = fgets(buf, (int)cap, f) != NULL;
  bool failed = ferror(f) != 0;
  fclose(f);
  if (failed) {
    snprintf(err, err_len, "cannot read %s", path);
    return -1;
  }
  if (!got)
    buf[0] = '\0';
  size_t len = strlen(buf);
  if (len == cap - 1 && buf[len - 1] != '\n') {
    snprintf(err, err_len, "%s: the token is longer than %zu characters", path, cap - 2);
    return -1;
  }
  while (len && strchr(" \t\r\n", buf[len - 1]))
    buf[--len] = '\0';
  size_t lead = strspn(buf, " \t");
  memmove(buf, buf + lead, len - lead + 1);
  if (!buf[0]) {
    snprintf(err, err_len, "%s holds no token", path);
    return -1;
  }
  return 0;
}

struct options {
  const char *url, *token;
  const char *token_file;             /* --token-file */
  bool token_given;                   /* --token */
  bool json;
  long count;
  double interval_s;
};

/* The options into o, an account's into account: -1, or the exit code. */
static int parse_options(int argc, char **argv, struct options *o, json_t *account)
{
  static const struct option longopts[] = {
    { "url", required_argument, 0, 'u' },   { "token", required_argument, 0, 't' },
    { "token-file", required_argument, 0, 'T' },
    { "json", no_argument, 0, 'j' },        { "count", required_argument, 0, 'c' },
    { "wide", no_argument, 0, 'w' },
    { "interval", required_argument, 0, 'i' }, { "version", no_argument, 0, 'v' }, { "help", no_argument, 0, 'h' },
    { "password", required_argument, 0, ACCOUNT_OPT_PASSWORD },
    { "connector", required_argument, 0, ACCOUNT_OPT_CONNECTOR },
    { "allow-ip", required_argument, 0, ACCOUNT_OPT_ALLOW_IP },
    { "max-binds", required_argument, 0, ACCOUNT_OPT_MAX_BINDS },
    { "max-rate", required_argument, 0, ACCOUNT_OPT_MAX_RATE },
    { "credit", required_argument, 0, ACCOUNT_OPT_CREDIT },
    { "sender", required_argument, 0, ACCOUNT_OPT_SENDER },
    { "default-sender", required_argument, 0, ACCOUNT_OPT_DEFAULT_SENDER },
    { "expires", required_argument, 0, ACCOUNT_OPT_EXPIRES },
    { "tls-subject", required_argument, 0, ACCOUNT_OPT_TLS_SUBJECT },
    { "cacert", required_argument, 0, 'C' },
    { 0, 0, 0, 0 }
  };
  int ch;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (ch >= ACCOUNT_OPT_PASSWORD) {
      if (emgctl_account_option(ch, optarg, account) != 0)
        return EXIT_USAGE;
      continue;
    }
    switch (ch) {
    case 'u': o->url = optarg; break;
    case 't': o->token = optarg; o->token_given = true; break;
    case 'T': o->token_file = optarg; break;
    case 'C': ca_file = optarg; break;
    case 'j': o->json = true; break;
    case 'w': wide = true; break;
    case 'c':
      if (parse_count(optarg, 1, &o->count) == -1) {
        fprintf(stderr, "emgctl: --count takes a whole number of at least 1\n");
        return EXIT_USAGE;
      }
      break;
    case 'i': {
      char *end;
      o->interval_s = strtod(optarg, &end);
      if (*end || !(o->interval_s >= 0.1 && o->interval_s <= 3600)) {
        fprintf(stderr, "emgctl: --interval takes seconds, from 0.1 to 3600\n");
        return EXIT_USAGE;
      }
      break;
    }
    case 'h': usage(stdout); return EXIT_OK;
    case 'v': printf("emgctl %s\n", EMG_VERSION); return EXIT_OK;
    default: usage(stderr); return EXIT_USAGE;
    }
  }
  if (optind >= argc) {
    usage(stderr);
    return EXIT_USAGE;
  }
  if (o->token_given && o->token_file) {
    fprintf(stderr, "emgctl: --token and --token-file exclude each other: give one\n");
    return EXIT_USAGE;
  }
  return -1;
}

/* The token, from the first of --token-file, --token, $EMGCTL_TOKEN,
 * $EMGCTL_TOKEN_FILE and the package's file, into o->token (buf holds a
 * token read from a file). -1, or the exit code of an error (said). */
static int find_token(struct options *o, char *buf, size_t cap)
{
  char err[512];
  const char *file = o->token_file;
  if (!file && (!o->token || !*o->token))
    file = getenv("EMGCTL_TOKEN_FILE");
  if (file && *file) {
    if (read_token(file, buf, cap, err, sizeof err) != 0) {
      fprintf(stderr, "emgctl: %s\n", err);
      return EXIT_USAGE;
    }
    o->token = buf;
    return -1;
  }
  if (o->token && *o->token)
    return -1;
  /* The package's token, when this user may read it; else the error below
   * says where a token can come from. */
  if (access(ADMIN_TOKEN_DEFAULT, R_OK) == 0 && read_token(ADMIN_TOKEN_DEFAULT, buf, cap, err, sizeof err) == 0) {
    o->token = buf;
    return -1;
  }
  struct stat st;
  if (stat(ADMIN_TOKEN_DEFAULT, &st) == 0)
    fprintf(stderr, "emgctl: no token: %s is not readable by this user; give --token-file FILE or set "
                    "EMGCTL_TOKEN\n", ADMIN_TOKEN_DEFAULT);
  else
    fprintf(stderr, "emgctl: no token: give --token-file FILE (or --token T) or set EMGCTL_TOKEN\n");
  return EXIT_USAGE;
}

int main(int argc, char **argv)
{
  struct options o = { .url = getenv("EMGCTL_URL"), .token = getenv("EMGCTL_TOKEN"), .interval_s = 1.0 };
  ca_file = getenv("EMGCTL_CACERT");
  json_t *account = json_object();
  char *send = NULL;
  if (!account)
    return EXIT_ERROR;
  int parsed = parse_options(argc, argv, &o, account);
  if (parsed >= 0) {
    json_decref(account);
    return parsed;
  }
  char token_buf[512];
  bool json = o.json;
  long count = o.count;
  double interval_s = o.interval_s;

  const char *command = argv[optind], *method = "GET";
  const char *arg = optind + 1 < argc ? argv[optind + 1] : NULL;
  int extra = argc - optind - 1;
  char path[512], *name = NULL;
  void (*print)(json_t *) = NULL;
  if (arg) {
    /* Names go into the URL path: escaped, so that none can reach another resource. */
    CURL *c = curl_easy_init();
    char *escaped = c ? curl_easy_escape(c, arg, 0) : NULL;
    name = escaped ? strdup(escaped) : NULL;
    curl_free(escaped);
    curl_easy_cleanup(c);
    if (!name) {
      fprintf(stderr, "emgctl: out of memory\n");
      return EXIT_ERROR;
    }
  }
  int rc = EXIT_OK;
  if (strcmp(command, "status") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/status");
    print = print_status;
  } else if ((strcmp(command, "watch") == 0 || strcmp(command, "top") == 0) && extra == 0) {
    print = NULL;
    if (json && strcmp(command, "top") == 0) {
      fprintf(stderr, "emgctl: top has no JSON form: GET /api/history gives its figures\n");
      rc = EXIT_USAGE;
    }
  } else if (strcmp(command, "connectors") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/connectors");
    print = print_connectors;
  } else if (strcmp(command, "accounts") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/accounts");
    print = print_accounts;
  } else if (strcmp(command, "queues") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/queues");
    print = print_queues;
  } else if (strcmp(command, "queue") == 0 && extra >= 1 && extra <= 3) {
    long offset = 0, limit = 50;
    if ((extra >= 2 && parse_count(argv[optind + 2], 0, &offset) == -1) ||
        (extra == 3 && parse_count(argv[optind + 3], 1, &limit) == -1)) {
      fprintf(stderr, "emgctl: queue: OFFSET is a number, LIMIT a number of at least 1\n");
      rc = EXIT_USAGE;
    }
    snprintf(path, sizeof path, "/api/queues/%s/messages?offset=%ld&limit=%ld", name, offset, limit);
    print = print_queue;
  } else if (strcmp(command, "msg") == 0 && extra == 1) {
    /* Our id, an SMSC's or a recipient: looked up below. */
    snprintf(path, sizeof path, "/api/messages/%s", name);
    print = print_message;
  } else if ((strcmp(command, "pause") == 0 || strcmp(command, "resume") == 0 ||
              strcmp(command, "drain") == 0) && extra == 1) {
    snprintf(path, sizeof path, "/api/connectors/%s/%s", name, command);
    method = "POST";
    print = print_action;
  } else if (strcmp(command, "account") == 0 && extra == 2) {
    /* account VERB NAME: the name is the second argument. */
    const char *raw = argv[optind + 2];
    CURL *c = curl_easy_init();
    char *escaped = c ? curl_easy_escape(c, raw, 0) : NULL;
    if (!escaped || emgctl_account_request(arg, escaped, raw, account, path, sizeof path, &method, &send) != 0)
      rc = EXIT_USAGE;
    curl_free(escaped);
    curl_easy_cleanup(c);
    print = emgctl_account_print;
  } else if (strcmp(command, "reload") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/reload");
    method = "POST";
    print = print_reload;
  } else {
    fprintf(stderr, "emgctl: unknown command or wrong arguments: '%s'\n", command);
    usage(stderr);
    rc = EXIT_USAGE;
  }
  if (rc == EXIT_OK) {
    int found = find_token(&o, token_buf, sizeof token_buf);
    if (found >= 0)
      rc = found;
  }
  const char *url = o.url, *token = o.token;
  if (rc == EXIT_OK && json_object_size(account) && strcmp(command, "account") != 0) {
    fprintf(stderr, "emgctl: account options go with the account command\n");
    rc = EXIT_USAGE;
  }
  json_decref(account);
  if (rc != EXIT_OK) {
    free(name);
    free(send);
    return rc;
  }
  if (!url)
    url = "http://127.0.0.1:8480";
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!print) {
    rc = watch(url, token, json, count, interval_s, strcmp(command, "top") == 0);
  } else if (print == print_message) {
    rc = show_message(url, token, arg, name, json);
  } else {
    json_t *j = NULL;
    rc = request_json(url, token, method, path, send, &j);
    if (rc == EXIT_OK && (json_object_get(j, "error") || json_is_false(json_object_get(j, "reloaded"))))
      rc = EXIT_ERROR;   /* a reload refused, whole or in part: the items are printed below */
    if (j)
      show(j, json, print, JSON_INDENT(2));
    json_decref(j);
  }
  curl_global_cleanup();
  free(name);
  free(send);
  return rc;
}
