/* blacklist - refuses messages whose destination starts with a prefix of a
 * list, or (action "log") lets them through flagged, so that emgd counts
 * and logs them.
 *
 * Settings: file (required): one prefix per line, digits with an optional
 * leading '+', '#' starts a comment; action: "refuse" (default) or "log".
 *
 * The file is read at init, so a reload picks up a changed list. The list
 * is sorted and read-only afterwards: any number of threads match against
 * it, a destination of n digits costing n binary searches.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plugin.h"

#define DIGITS "0123456789"
#define BLANKS " \t\r\n"

struct prefix {
  char *digits;
  size_t len;
};

struct blacklist {
  struct prefix *prefixes;        /* sorted by compare() */
  size_t count;
  bool refuse;                    /* else flag only */
};

/* Byte order, a prefix before its extensions: the order bsearch needs to
 * find "49" when probing with the first two digits of "49151". */
static int compare(const char *a, size_t a_len, const char *b, size_t b_len)
{
  int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
  return c ? c : (a_len > b_len) - (a_len < b_len);
}

static int prefix_order(const void *a, const void *b)
{
  const struct prefix *x = a, *y = b;
  return compare(x->digits, x->len, y->digits, y->len);
}

/* The first len digits of a destination, looked up in the list. */
struct probe {
  const char *digits;
  size_t len;
};

static int probe_order(const void *key, const void *elem)
{
  const struct probe *k = key;
  const struct prefix *e = elem;
  return compare(k->digits, k->len, e->digits, e->len);
}

static void blacklist_free(struct blacklist *b)
{
  if (!b)
    return;
  for (size_t i = 0; i < b->count; i++)
    free(b->prefixes[i].digits);
  free(b->prefixes);
  free(b);
}

/* Adds one prefix. Returns 0, or -1 when memory is short. */
static int add_prefix(struct blacklist *b, size_t *cap, const char *digits, size_t len)
{
  if (b->count == *cap) {
    size_t more = *cap ? 2 * *cap : 64;
    struct prefix *p = realloc(b->prefixes, more * sizeof *p);
    if (!p)
      return -1;
    b->prefixes = p;
    *cap = more;
  }
  char *copy = strndup(digits, len);
  if (!copy)
    return -1;
  b->prefixes[b->count++] = (struct prefix){ copy, len };
  return 0;
}

/* Reads the prefixes of path into b and sorts them. Returns 0, or -1 with
 * the reason (FILE:LINE for a bad line) in err. A bad line fails the whole
 * list: a barred number silently let through is worse than a refused start. */
static int read_list(struct blacklist *b, const char *path, char *err, size_t errlen)
{
  int rc = -1;
  char *line = NULL;
  size_t line_cap = 0, cap = 0;
  unsigned line_no = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "file: cannot open %s: %s", path, strerror(errno));
    goto out;
  }
  while (getline(&line, &line_cap, f) >= 0) {
    line_no++;
    line[strcspn(line, "#")] = '\0';
    char *start = line + strspn(line, BLANKS);
    size_t len = strlen(start);
    while (len && strchr(BLANKS, start[len - 1]))
      len--;
    if (!len)
      continue;
    const char *digits = start[0] == '+' ? start + 1 : start;
    size_t n_digits = len - (size_t)(digits - start);
    if (!n_digits || strspn(digits, DIGITS) < n_digits) {
      snprintf(err, errlen, "%s:%u: '%.*s' is no number prefix (digits, an optional leading '+')",
               path, line_no, (int)(len > 40 ? 40 : len), start);
      goto out;
    }
    if (add_prefix(b, &cap, digits, n_digits) != 0) {
      snprintf(err, errlen, "file: %s: out of memory", path);
      goto out;
    }
  }
  if (ferror(f)) {
    snprintf(err, errlen, "file: cannot read %s: %s", path, strerror(errno));
    goto out;
  }
  if (b->count)
    qsort(b->prefixes, b->count, sizeof *b->prefixes, prefix_order);
  rc = 0;
out:
  free(line);
  if (f)
    fclose(f);
  return rc;
}

static int blacklist_init(const struct emg_plugin_setting *settings, size_t n, void **state,
                          char *err, size_t errlen)
{
  const char *file = NULL;
  struct blacklist *b = calloc(1, sizeof *b);
  if (!b) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  b->refuse = true;
  for (size_t i = 0; i < n; i++) {
    const char *key = settings[i].key, *value = settings[i].value;
    if (strcmp(key, "file") == 0) {
      file = value;
    } else if (strcmp(key, "action") == 0) {
      if (strcmp(value, "refuse") != 0 && strcmp(value, "log") != 0) {
        snprintf(err, errlen, "action: '%.64s' is not one of refuse|log", value);
        goto fail;
      }
      b->refuse = strcmp(value, "refuse") == 0;
    } else {
      snprintf(err, errlen, "unknown setting '%.64s' (blacklist takes file and action)", key);
      goto fail;
    }
  }
  if (!file) {
    snprintf(err, errlen, "file: missing");
    goto fail;
  }
  if (read_list(b, file, err, errlen) != 0)
    goto fail;
  *state = b;
  return 0;
fail:
  blacklist_free(b);
  return -1;
}

static void blacklist_destroy(void *state)
{
  blacklist_free(state);
}

static int blacklist_before_receive(void *state, struct emg_plugin_msg *msg, char *reason,
                                    size_t reason_len)
{
  const struct blacklist *b = state;
  const char *dst = msg->dst.addr[0] == '+' ? msg->dst.addr + 1 : msg->dst.addr;
  size_t len = b->count ? strlen(dst) : 0;
  for (size_t n = 1; n <= len; n++) {
    const struct probe probe = { dst, n };
    const struct prefix *hit =
        bsearch(&probe, b->prefixes, b->count, sizeof *b->prefixes, probe_order);
    if (hit) {
      snprintf(reason, reason_len, "destination %s is blacklisted (prefix %s)", msg->dst.addr,
               hit->digits);
      return b->refuse ? EMG_PLUGIN_REFUSE : EMG_PLUGIN_FLAG;
    }
  }
  return EMG_PLUGIN_CONTINUE;
}

EMG_PLUGIN_EXPORT const struct emg_plugin emg_plugin = {
  .abi_version = EMG_PLUGIN_ABI_VERSION,
  .init = blacklist_init,
  .destroy = blacklist_destroy,
  .before_receive = blacklist_before_receive,
};
