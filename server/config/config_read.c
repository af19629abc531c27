/* config_read.c - reads a libconfig file against the tables of keys of
 * config_internal.h, and finds a connector by name (config_connector).
 *
 * Each table entry says where a key's value goes, its type, range, default
 * and in which connector modes it belongs. The same tables drive reading,
 * type and range checks, defaults, the unknown-key search (with its "did
 * you mean" suggestion) and freeing, so a new key is one line.
 *
 * Keys are read in table order, not file order: a key's bound may then
 * depend on a key read before it (window on protocol, the soft queue limit
 * on the hard one), and routes can check names against the connectors.
 * Errors are collected and sorted by file and line at the end.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config_internal.h"

/* ---- errors ---- */

static void add_error(struct load *ld, const char *file, unsigned line, char *text)
{
  if (ld->n_errs == ld->cap_errs) {
    unsigned cap = ld->cap_errs ? 2 * ld->cap_errs : 16;
    struct pending *p = realloc(ld->errs, cap * sizeof *p);
    if (!p) {
      ld->out_of_memory = true;
      free(text);
      return;
    }
    ld->errs = p;
    ld->cap_errs = cap;
  }
  ld->errs[ld->n_errs] = (struct pending){ file, line, ld->n_errs, text };
  ld->n_errs++;
}

/* "FILE:LINE: what", or "FILE: what" when there is no line. file is the
 * name libconfig gives (NULL: the file being loaded). It names an included
 * file as its @include wrote it, relative to the include directory; the
 * message shows the path an operator can open. */
void report_at(struct load *ld, const char *file, unsigned line, const char *fmt, ...)
{
  char what[768], shown[2 * CONFIG_PATH_LEN], *text;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (!file)
    file = ld->name;
  if (ld->include_dir && file[0] != '/' && strcmp(file, ld->name) != 0)
    snprintf(shown, sizeof shown, "%s/%s", ld->include_dir, file);
  else
    snprintf(shown, sizeof shown, "%s", file);
  int n = line ? asprintf(&text, "%s:%u: %s", shown, line, what)
               : asprintf(&text, "%s: %s", shown, what);
  if (n < 0) {
    ld->out_of_memory = true;
    return;
  }
  add_error(ld, file, line, text);
}

/* "FILE:LINE: PATH: what", FILE and LINE those of where. */
void report(struct load *ld, const config_setting_t *where, const char *path, const char *fmt, ...)
{
  char what[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  report_at(ld, config_setting_source_file(where), config_setting_source_line(where), "%s: %s",
            path, what);
}

static int pending_order(const void *a, const void *b)
{
  const struct pending *x = a, *y = b;
  int by_file = strcmp(x->file, y->file);
  if (by_file)
    return by_file;
  if (x->line != y->line)
    return x->line < y->line ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hands the errors, sorted, to *out. Returns how many there were. */
unsigned finish_errors(struct load *ld, struct config_errors *out)
{
  unsigned n = ld->n_errs + ld->out_of_memory;
  if (!n)
    return 0;
  qsort(ld->errs, ld->n_errs, sizeof *ld->errs, pending_order);
  out->lines = calloc(n, sizeof *out->lines);
  for (unsigned i = 0; i < ld->n_errs; i++) {
    if (out->lines)
      out->lines[out->count++] = ld->errs[i].text;
    else
      free(ld->errs[i].text);
  }
  /* Some errors were lost: say so rather than pass for a shorter list. */
  if (ld->out_of_memory && out->lines &&
      (out->lines[out->count] = strdup("out of memory: not every error is listed")))
    out->count++;
  free(ld->errs);
  ld->errs = NULL;
  return n;
}

void config_errors_free(struct config_errors *e)
{
  if (!e)
    return;
  for (unsigned i = 0; i < e->count; i++)
    free(e->lines[i]);
  free(e->lines);
  e->lines = NULL;
  e->count = 0;
}

/* ---- helpers of the tables ---- */

static void *field(void *base, const struct key *k)
{
  return (char *)base + k->offset;
}

const struct key *find_key(const struct section *sec, const char *name)
{
  for (size_t i = 0; i < sec->n_keys; i++)
    if (strcmp(sec->keys[i].name, name) == 0)
      return &sec->keys[i];
  return NULL;
}

static const struct name_value *find_name(const struct name_value *names, const char *name)
{
  for (; names->name; names++)
    if (strcmp(names->name, name) == 0)
      return names;
  return NULL;
}

/* Paths nest four deep at most; one longer than KEY_PATH_LEN is cut short. */
void join_path(char *out, const char *prefix, const char *name)
{
  snprintf(out, KEY_PATH_LEN, "%s%s%s", prefix, *prefix ? "." : "", name);
}

void elem_path(char *out, const char *prefix, unsigned i)
{
  snprintf(out, KEY_PATH_LEN, "%.*s.[%u]", KEY_PATH_LEN - 16, prefix, i);
}

/* The mode of a group, peeked before its keys are read so that every key
 * can be judged by it; MODE_ANY when there is none or it is not valid (its
 * own error comes when the mode key is read). */
static unsigned group_mode(const config_setting_t *grp, const struct section *sec)
{
  if (!grp || !sec->mode_key)
    return MODE_ANY;
  const config_setting_t *m = config_setting_get_member(grp, sec->mode_key);
  if (!m || config_setting_type(m) != CONFIG_TYPE_STRING)
    return MODE_ANY;
  const struct name_value *nv =
      find_name(find_key(sec, sec->mode_key)->names, config_setting_get_string(m));
  return nv ? 1u << nv->value : MODE_ANY;
}

/* `mode = "server"`, for messages about a key of one mode. */
static void describe_mode(char *out, size_t len, const struct section *sec, unsigned modes)
{
  for (const struct name_value *nv = find_key(sec, sec->mode_key)->names; nv->name; nv++)
    if (modes & (1u << nv->value)) {
      snprintf(out, len, "%s = \"%s\"", sec->mode_key, nv->name);
      return;
    }
}

/* Edit distance with transpositions (optimal string alignment), for
 * suggestions: "windw" and "widnow" are both one edit from "window". */
static unsigned edit_distance(const char *a, const char *b)
{
  enum { MAX = 32 };   /* longer names are no typo of a key */
  size_t la = strlen(a), lb = strlen(b);
  if (la >= MAX || lb >= MAX)
    return MAX;
  unsigned d[MAX + 1][MAX + 1];
  for (size_t i = 0; i <= la; i++)
    d[i][0] = (unsigned)i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = (unsigned)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      unsigned cost = a[i - 1] != b[j - 1];
      unsigned best = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

/* The known key closest to name, when it is close enough to be a typo. */
static const char *suggest(const struct section *sec, const char *name)
{
  const char *best = NULL;
  unsigned best_distance = 0;
  for (size_t i = 0; i < sec->n_keys; i++) {
    const char *known = sec->keys[i].name;
    unsigned d = edit_distance(name, known);
    unsigned allowed = strlen(known) >= 6 ? 2 : 1;
    if (d <= allowed && (!best || d < best_distance)) {
      best = known;
      best_distance = d;
    }
  }
  return best;
}

const char *type_name(int type)
{
  switch (type) {
  case CONFIG_TYPE_GROUP: return "a group";
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: return "an integer";
  case CONFIG_TYPE_FLOAT: return "a float";
  case CONFIG_TYPE_STRING: return "a string";
  case CONFIG_TYPE_BOOL: return "a boolean";
  case CONFIG_TYPE_ARRAY: return "an array";
  case CONFIG_TYPE_LIST: return "a list";
  }
  return "nothing";
}

#define TYPE_BIT(t) (1u << (t))

/* What each kind of key accepts from libconfig, and how a message names it. */
static const struct {
  unsigned accepts;
  const char *expected;
} key_types[] = {
  [KEY_BOOL] = { TYPE_BIT(CONFIG_TYPE_BOOL), "true or false" },
  [KEY_UINT] = { TYPE_BIT(CONFIG_TYPE_INT) | TYPE_BIT(CONFIG_TYPE_INT64), "an integer" },
  [KEY_SIZE] = { TYPE_BIT(CONFIG_TYPE_INT) | TYPE_BIT(CONFIG_TYPE_INT64), "an integer" },
  [KEY_DOUBLE] = { TYPE_BIT(CONFIG_TYPE_INT) | TYPE_BIT(CONFIG_TYPE_INT64) | TYPE_BIT(CONFIG_TYPE_FLOAT),
                   "a number" },
  [KEY_STRING] = { TYPE_BIT(CONFIG_TYPE_STRING), "a string" },
  [KEY_ADDR] = { TYPE_BIT(CONFIG_TYPE_STRING), "a string" },
  [KEY_ENUM] = { TYPE_BIT(CONFIG_TYPE_STRING), "a string" },
  [KEY_PROTO] = { TYPE_BIT(CONFIG_TYPE_STRING), "a string" },
  [KEY_GROUP] = { TYPE_BIT(CONFIG_TYPE_GROUP), "a group { ... }" },
  [KEY_LIST] = { TYPE_BIT(CONFIG_TYPE_LIST), "a list ( ... )" },
  [KEY_ARRAY] = { TYPE_BIT(CONFIG_TYPE_ARRAY), "an array [ ... ]" },
};

/* An array key takes a bare value of its element type as an array of one. */
static unsigned accepted_types(const struct key *k)
{
  unsigned types = key_types[k->type].accepts;
  return k->type == KEY_ARRAY ? types | key_types[k->elem].accepts : types;
}

static long long upper_bound(const struct key *k, const void *base)
{
  long long b = k->bound ? k->bound(base) : LLONG_MAX;
  return b < k->max ? b : k->max;
}

/* HOST:PORT with the port in lo..hi. The host is left to the resolver at
 * start, so that a name the DNS cannot answer for yet does not fail a check. */
static bool addr_ok(const char *s, long long lo, long long hi)
{
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s)
    return false;
  const char *port = colon + 1;
  size_t len = strlen(port);
  if (len == 0 || len > 5 || strspn(port, DIGITS) != len)
    return false;
  long value = atol(port);
  return value >= lo && value <= hi;
}

/* ---- reading ---- */

void read_group(struct load *ld, const config_setting_t *grp, const struct section *sec,
                       void *base, const char *path);

static void store_integer(const struct key *k, void *base, long long v)
{
  if (k->type == KEY_UINT)
    *(unsigned *)field(base, k) = (unsigned)v;
  else
    *(size_t *)field(base, k) = (size_t)v;
}

bool config_resolve_path(const struct config *c, char *path, size_t size)
{
  if (!path[0] || path[0] == '/')
    return true;
  char dir[CONFIG_PATH_LEN], cwd[CONFIG_PATH_LEN], out[3 * CONFIG_PATH_LEN];
  snprintf(dir, sizeof dir, "%s", c->path);
  const char *base = strchr(c->path, '/') ? dirname(dir) : ".";
  if (base[0] == '/')
    snprintf(out, sizeof out, "%s/%s", base, path);
  else if (getcwd(cwd, sizeof cwd))
    snprintf(out, sizeof out, "%s/%s/%s", cwd, base, path);
  else
    return false;
  size_t len = strlen(out);
  if (len >= size)
    return false;
  memcpy(path, out, len + 1);
  return true;
}

/* A file key's value made absolute from the configuration's folder
 * (s NULL: the default's). */
static void resolve_file(struct load *ld, const config_setting_t *s, const struct key *k, void *base,
                         const char *path)
{
  char *v = field(base, k);
  if (!k->file || !ld->cfg || (k->not_file && strcmp(v, k->not_file) == 0) ||
      config_resolve_path(ld->cfg, v, k->size))
    return;
  if (s)
    report(ld, s, path, "the path is too long once taken from the configuration's folder");
  else
    report_at(ld, NULL, 0, "%s: the path is too long once taken from the configuration's folder", path);
}

/* What an absent key (or one with an error) stands for. */
static void set_default(struct load *ld, const struct key *k, void *base, const char *path)
{
  switch (k->type) {
  case KEY_BOOL:
    *(bool *)field(base, k) = k->def;
    break;
  case KEY_UINT:
  case KEY_SIZE: {
    long long hi = upper_bound(k, base);
    store_integer(k, base, k->def < hi ? k->def : hi);
    break;
  }
  case KEY_DOUBLE:
    *(double *)field(base, k) = (double)k->def;
    break;
  case KEY_STRING:
  case KEY_ADDR:
    snprintf(field(base, k), k->size, "%s", k->def_str ? k->def_str : "");
    resolve_file(ld, NULL, k, base, path);
    break;
  case KEY_ENUM:
    *(int *)field(base, k) = (int)k->def;
    break;
  case KEY_PROTO:
    *(const struct proto_ops **)field(base, k) = NULL;
    break;
  case KEY_GROUP:
    read_group(ld, NULL, k->sub, field(base, k), path);
    break;
  case KEY_LIST:
    break;         /* no elements: the struct starts zeroed */
  case KEY_ARRAY:
    *(unsigned *)((char *)base + k->count_offset) = 0;
    break;
  }
}

/* Here rather than in config.c: the check of a connector_ref key needs it,
 * and so do the section parsers, which config.c calls. */
const struct config_connector *config_connector(const struct config *c, const char *name)
{
  for (unsigned i = 0; i < c->n_connectors; i++)
    if (strcmp(c->connectors[i].name, name) == 0)
      return &c->connectors[i];
  return NULL;
}

/* A string is kept even when it is wrong (cut to size), so that checks
 * across keys see what was written: a bad prefix does not make its route
 * look like a second default route. */
static void read_string(struct load *ld, const config_setting_t *s, const struct key *k, void *base,
                        const char *path)
{
  const char *v = config_setting_get_string(s);
  size_t len = strlen(v);
  /* Passwords pass here: of the values, only a connector's name is echoed. */
  if (len >= k->size)
    report(ld, s, path, "longer than %zu characters", k->size - 1);
  else if (k->type == KEY_STRING && (long long)len < k->min)
    report(ld, s, path, "must not be empty");
  else if (k->chars && strspn(v, k->chars) != len)
    report(ld, s, path, "may hold only %s", k->chars_why);
  else if (k->type == KEY_ADDR && !addr_ok(v, k->min, k->max))
    report(ld, s, path, "must be HOST:PORT with a port %lld..%lld", k->min, k->max);
  else if (k->connector_ref && len && !config_connector(ld->cfg, v))
    report(ld, s, path, "no connector is named '%s'", v);
  snprintf(field(base, k), k->size, "%s", v);
  resolve_file(ld, s, k, base, path);
}

static void read_list(struct load *ld, const config_setting_t *list, const struct key *k, void *base,
                      const char *path);
static void read_array(struct load *ld, const config_setting_t *s, const struct key *k, void *base,
                       const char *path);

/* Reads one present key into base. A value of the wrong type, a number out
 * of range or an unknown name gives way to the default, so that bounds read
 * later stay sane. */
static void read_value(struct load *ld, const config_setting_t *s, const struct key *k, void *base,
                       const char *path)
{
  int type = config_setting_type(s);
  if (!(accepted_types(k) & TYPE_BIT(type))) {
    if (k->type == KEY_ARRAY)
      report(ld, s, path, "must be %s or an array [ ... ] of them, not %s",
             key_types[k->elem].expected, type_name(type));
    else
      report(ld, s, path, "must be %s, not %s", key_types[k->type].expected, type_name(type));
    set_default(ld, k, base, path);
    return;
  }
  switch (k->type) {
  case KEY_BOOL:
    *(bool *)field(base, k) = config_setting_get_bool(s);
    break;
  case KEY_UINT:
  case KEY_SIZE: {
    long long v = config_setting_get_int64(s), hi = upper_bound(k, base);
    if (v < k->min || v > hi) {
      report(ld, s, path, "must be %lld..%lld%s%s", k->min, hi, hi < k->max ? " " : "",
             hi < k->max ? k->bound_why : "");
      set_default(ld, k, base, path);
    } else {
      store_integer(k, base, v);
    }
    break;
  }
  case KEY_DOUBLE: {
    double v = type == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                         : (double)config_setting_get_int64(s);
    if (v < (double)k->min || v > (double)k->max) {
      report(ld, s, path, "must be %lld..%lld", k->min, k->max);
      set_default(ld, k, base, path);
    } else {
      *(double *)field(base, k) = v;
    }
    break;
  }
  case KEY_STRING:
  case KEY_ADDR:
    read_string(ld, s, k, base, path);
    break;
  case KEY_ENUM: {
    const char *v = config_setting_get_string(s);
    const struct name_value *nv = find_name(k->names, v);
    if (nv) {
      *(int *)field(base, k) = nv->value;
      break;
    }
    char choices[128] = "";
    for (const struct name_value *c = k->names; c->name; c++)
      snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s",
               c == k->names ? "" : "|", c->name);
    report(ld, s, path, "'%.64s' is not one of %s", v, choices);
    set_default(ld, k, base, path);
    break;
  }
  case KEY_PROTO: {
    const char *v = config_setting_get_string(s);
    const struct proto_ops *ops = proto_find(v);
    /* HTTP has no frames and no sessions: the connector runs on requests. */
    bool http = strcmp(v, "http") == 0;
    ((struct config_connector *)base)->http = http;
    if (!ops && !http)
      report(ld, s, path, "unknown protocol '%.64s' (smpp, ucp, cimd2 or http)", v);
    *(const struct proto_ops **)field(base, k) = ops;
    break;
  }
  case KEY_GROUP:
    read_group(ld, s, k->sub, field(base, k), path);
    break;
  case KEY_LIST:
    read_list(ld, s, k, base, path);
    break;
  case KEY_ARRAY:
    read_array(ld, s, k, base, path);
    break;
  }
}

/* Reports the second and later elements of a list that share the value of
 * key k->unique with an earlier one. */
static void check_unique(struct load *ld, const config_setting_t *list, const struct key *k,
                         const char *elems, unsigned n, const char *path)
{
  const struct key *u = find_key(k->sub, k->unique);
  for (unsigned i = 1; i < n; i++) {
    const char *name = elems + i * k->size + u->offset;
    for (unsigned j = 0; j < i && *name; j++) {
      if (strcmp(name, elems + j * k->size + u->offset) != 0)
        continue;
      const config_setting_t *elem = config_setting_get_elem(list, i);
      const config_setting_t *at = config_setting_get_member(elem, u->name);
      char key_path[KEY_PATH_LEN], first[KEY_PATH_LEN];
      snprintf(key_path, sizeof key_path, "%.*s.[%u].%s", KEY_PATH_LEN - 64, path, i, u->name);
      elem_path(first, path, j);
      report(ld, at ? at : elem, key_path, "'%s' is already the %s of %s (line %u)", name, u->name,
             first, config_setting_source_line(config_setting_get_elem(list, j)));
      break;
    }
  }
}

static void read_list(struct load *ld, const config_setting_t *list, const struct key *k, void *base,
                      const char *path)
{
  unsigned n = (unsigned)config_setting_length(list);
  if (n < k->min)
    report(ld, list, path, "needs at least %lld %s", k->min, k->min == 1 ? "entry" : "entries");
  else if (n > k->max)
    report(ld, list, path, "holds more than %lld entries", k->max);
  if (n == 0)
    return;
  char *elems = calloc(n, k->size);
  if (!elems) {
    ld->out_of_memory = true;
    return;
  }
  /* Stored before the elements are read: checks of an element look at the
   * ones before it (unique default route) through the config. */
  void *array = elems;
  memcpy(field(base, k), &array, sizeof array);
  *(unsigned *)((char *)base + k->count_offset) = n;
  /* Each element is a group filling its own struct. */
  const struct key element = { .type = KEY_GROUP, .sub = k->sub };
  for (unsigned i = 0; i < n; i++) {
    char p[KEY_PATH_LEN];
    elem_path(p, path, i);
    read_value(ld, config_setting_get_elem(list, i), &element, elems + i * k->size, p);
  }
  if (k->unique)
    check_unique(ld, list, k, elems, n, path);
}

/* Each value is read as a key of its own type at its place in the array,
 * so that it gets every check a single value gets. */
static void read_array(struct load *ld, const config_setting_t *s, const struct key *k, void *base,
                       const char *path)
{
  bool bare = config_setting_type(s) != CONFIG_TYPE_ARRAY;
  unsigned n = bare ? 1 : (unsigned)config_setting_length(s);
  if (n == 0) {
    report(ld, s, path, "needs at least 1 entry");
  } else if (n > k->capacity) {
    report(ld, s, path, "holds more than %u entries", k->capacity);
    n = k->capacity;
  }
  struct key element = *k;
  element.type = k->elem;
  for (unsigned i = 0; i < n; i++) {
    char p[KEY_PATH_LEN];
    element.offset = k->offset + i * k->size;
    if (bare) {
      read_value(ld, s, &element, base, path);
    } else {
      elem_path(p, path, i);
      read_value(ld, config_setting_get_elem(s, i), &element, base, p);
    }
  }
  *(unsigned *)((char *)base + k->count_offset) = n;
}

/* Reads the keys of sec from grp into base; grp NULL (the group is absent)
 * gives every key its default and requires nothing. */
void read_group(struct load *ld, const config_setting_t *grp, const struct section *sec,
                       void *base, const char *path)
{
  unsigned mode = group_mode(grp, sec);
  char p[KEY_PATH_LEN], mode_text[64];
  if (grp && sec->has_line)
    *(int *)((char *)base + sec->line_offset) = (int)config_setting_source_line(grp);

  for (size_t i = 0; i < sec->n_keys; i++) {
    const struct key *k = &sec->keys[i];
    const config_setting_t *s = grp ? config_setting_get_member(grp, k->name) : NULL;
    join_path(p, path, k->name);
    if (!s) {
      if (grp && k->required && (k->required & mode) == mode) {
        if (k->required == MODE_ANY) {
          report(ld, grp, p, "missing");
        } else {
          describe_mode(mode_text, sizeof mode_text, sec, k->required);
          report(ld, grp, p, "missing (required when %s)", mode_text);
        }
      }
      set_default(ld, k, base, p);
    } else if (k->only && !(k->only & mode)) {
      describe_mode(mode_text, sizeof mode_text, sec, k->only);
      report(ld, s, p, "applies only when %s", mode_text);
      set_default(ld, k, base, p);
    } else {
      read_value(ld, s, k, base, p);
    }
  }

  for (int i = 0; grp && !sec->open && i < config_setting_length(grp); i++) {
    const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
    const char *name = config_setting_name(s);
    if (find_key(sec, name))
      continue;
    const char *close = suggest(sec, name);
    join_path(p, path, name);
    if (close)
      report(ld, s, p, "unknown key '%s' (did you mean '%s'?)", name, close);
    else
      report(ld, s, p, "unknown key '%s'", name);
  }

  if (grp && sec->check)
    sec->check(ld, grp, base, path);
}

/* Frees the arrays the lists of sec allocated in base. */
void free_lists(const struct section *sec, void *base)
{
  for (size_t i = 0; i < sec->n_keys; i++) {
    const struct key *k = &sec->keys[i];
    if (k->type == KEY_GROUP) {
      free_lists(k->sub, field(base, k));
    } else if (k->type == KEY_LIST) {
      void *array;
      memcpy(&array, field(base, k), sizeof array);
      unsigned n = *(unsigned *)((char *)base + k->count_offset);
      for (unsigned e = 0; e < n; e++)
        free_lists(k->sub, (char *)array + e * k->size);
      free(array);
    }
  }
}


/* ---- what a reload would change ---- */

static size_t value_size(enum key_type type)
{
  switch (type) {
  case KEY_BOOL: return sizeof(bool);
  case KEY_UINT: return sizeof(unsigned);
  case KEY_SIZE: return sizeof(size_t);
  case KEY_DOUBLE: return sizeof(double);
  case KEY_ENUM: return sizeof(int);
  case KEY_PROTO: return sizeof(const struct proto_ops *);
  default: return 0;
  }
}

/* One value of type at a and b: strings by their text, the rest by bytes. */
static bool value_differs(enum key_type type, const void *a, const void *b)
{
  if (type == KEY_STRING || type == KEY_ADDR)
    return strcmp(a, b) != 0;
  return memcmp(a, b, value_size(type)) != 0;
}

static bool key_differs(const struct key *k, const void *a, const void *b, const char *path, char *out)
{
  const char *fa = (const char *)a + k->offset, *fb = (const char *)b + k->offset;
  switch (k->type) {
  case KEY_GROUP:
    return section_differs(k->sub, fa, fb, path, out);
  case KEY_LIST: {
    unsigned na = *(const unsigned *)((const char *)a + k->count_offset);
    unsigned nb = *(const unsigned *)((const char *)b + k->count_offset);
    if (na != nb) {
      snprintf(out, KEY_PATH_LEN, "%s", path);
      return true;
    }
    const char *ea, *eb;
    memcpy(&ea, fa, sizeof ea);
    memcpy(&eb, fb, sizeof eb);
    char elem[KEY_PATH_LEN];
    for (unsigned i = 0; i < na; i++) {
      elem_path(elem, path, i);
      if (section_differs(k->sub, ea + i * k->size, eb + i * k->size, elem, out))
        return true;
    }
    return false;
  }
  case KEY_ARRAY: {
    unsigned na = *(const unsigned *)((const char *)a + k->count_offset);
    unsigned nb = *(const unsigned *)((const char *)b + k->count_offset);
    bool differs = na != nb;
    for (unsigned i = 0; !differs && i < na; i++)
      differs = value_differs(k->elem, fa + i * k->size, fb + i * k->size);
    if (differs)
      snprintf(out, KEY_PATH_LEN, "%s", path);
    return differs;
  }
  default:
    if (!value_differs(k->type, fa, fb))
      return false;
    snprintf(out, KEY_PATH_LEN, "%s", path);
    return true;
  }
}

bool section_differs(const struct section *sec, const void *a, const void *b, const char *prefix, char *path)
{
  char p[KEY_PATH_LEN];
  for (size_t i = 0; i < sec->n_keys; i++) {
    const struct key *k = &sec->keys[i];
    if (k->live)
      continue;
    join_path(p, prefix, k->name);
    if (key_differs(k, a, b, p, path))
      return true;
  }
  return false;
}
