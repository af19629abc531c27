/* config.c - reads emgd.conf with libconfig and checks it against one table
 * of keys per section.
 *
 * Each table entry says where a key's value goes, its type, range, default
 * and in which connector modes it belongs. The same tables drive reading,
 * type and range checks, defaults, the unknown-key search (with its "did
 * you mean" suggestion) and config_free, so a new key is one line.
 *
 * Keys are read in table order, not file order: a key's bound may then
 * depend on a key read before it (window on protocol, the soft queue limit
 * on the hard one), and routes can check names against the connectors.
 * Errors are collected and sorted by file and line at the end. */
#include <errno.h>
#include <libconfig.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"

#define KEY_PATH_LEN 256   /* "connectors.[12].users.[3].password" and the like */
#define DIGITS "0123456789"

/* The enums are stored through int, as the value tables hold them. */
_Static_assert(sizeof(enum config_log_level) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum config_conn_mode) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum config_msgid_type) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum proto_bind_mode) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum config_route_mode) == sizeof(int), "enum stored as int");

struct name_value {
  const char *name;
  int value;
};

static const struct name_value log_levels[] = {
  { "error", CONFIG_LOG_ERROR }, { "warn", CONFIG_LOG_WARN }, { "info", CONFIG_LOG_INFO },
  { "debug", CONFIG_LOG_DEBUG }, { "debug2", CONFIG_LOG_DEBUG2 }, { NULL, 0 },
};

static const struct name_value conn_modes[] = {
  { "server", CONFIG_CONN_SERVER }, { "client", CONFIG_CONN_CLIENT }, { NULL, 0 },
};

static const struct name_value bind_modes[] = {
  { "transceiver", PROTO_BIND_TRX }, { "transmitter", PROTO_BIND_TX },
  { "receiver", PROTO_BIND_RX }, { NULL, 0 },
};

static const struct name_value msgid_types[] = {
  { "string", CONFIG_MSGID_STRING }, { "decimal", CONFIG_MSGID_DECIMAL },
  { "hex", CONFIG_MSGID_HEX }, { NULL, 0 },
};

static const struct name_value route_modes[] = {
  { "failover", CONFIG_ROUTE_FAILOVER }, { "weighted", CONFIG_ROUTE_WEIGHTED }, { NULL, 0 },
};

/* Connector modes as bits, for the keys that belong to one mode only.
 * Sections without a mode are read as MODE_ANY. */
#define MODE_SERVER (1u << CONFIG_CONN_SERVER)
#define MODE_CLIENT (1u << CONFIG_CONN_CLIENT)
#define MODE_ANY (MODE_SERVER | MODE_CLIENT)

enum key_type {
  KEY_BOOL,
  KEY_UINT,        /* unsigned, min..max */
  KEY_SIZE,        /* size_t, min..max */
  KEY_DOUBLE,      /* double, min..max */
  KEY_STRING,      /* char[size], at least min characters */
  KEY_ADDR,        /* char[size] holding HOST:PORT, the port min..max */
  KEY_ENUM,        /* an enum spelled by names */
  KEY_PROTO,       /* const struct proto_ops *, by proto_find */
  KEY_GROUP,       /* { ... } whose keys (sub) fill the same struct */
  KEY_LIST,        /* ( { ... }, ... ): an array of structs of size bytes, min..max of them */
  KEY_ARRAY        /* [ v, ... ]: 1..capacity values of type elem, each size bytes, into a fixed
                    * array; min, max, def and the string checks apply to each. One bare value
                    * is an array of one. */
};

struct load;
struct section;

struct key {
  const char *name;
  enum key_type type;
  size_t offset;
  size_t size;                     /* KEY_STRING, KEY_ADDR: the array; KEY_LIST: an element */
  long long min, max;              /* see enum key_type */
  long long def;                   /* numbers, bools and enums when the key is absent */
  const char *def_str;             /* strings when absent; NULL = "" */
  /* A tighter upper bound from keys read before this one, or LLONG_MAX;
   * bound_why says which, for the message. Defaults are capped by it too. */
  long long (*bound)(const void *base);
  const char *bound_why;
  const char *chars, *chars_why;   /* KEY_STRING: the characters allowed (NULL = any) */
  bool connector_ref;              /* KEY_STRING: names a connector ("" = none) */
  const struct name_value *names;  /* KEY_ENUM */
  const struct section *sub;       /* KEY_GROUP, KEY_LIST */
  size_t count_offset;             /* KEY_LIST, KEY_ARRAY: where the unsigned count goes */
  enum key_type elem;              /* KEY_ARRAY */
  unsigned capacity;               /* KEY_ARRAY */
  const char *unique;              /* KEY_LIST: a string key no two elements share */
  unsigned only;                   /* the modes it belongs to; 0 = all */
  unsigned required;               /* the modes it must appear in; 0 = none */
};

struct section {
  const struct key *keys;
  size_t n_keys;
  const char *mode_key;            /* the KEY_ENUM key whose value is the mode, or NULL */
  bool open;                       /* keys not in the table belong to someone else */
  bool has_line;                   /* note the group's line at line_offset (int) */
  size_t line_offset;
  /* Checks across keys and elements, after the group is read. */
  void (*check)(struct load *ld, const config_setting_t *grp, void *base, const char *path);
};

/* One error, kept until all are known and can be sorted. */
struct pending {
  const char *file;
  unsigned line;
  unsigned seq;
  char *text;
};

struct load {
  const char *name;                /* the file as messages name it */
  const char *include_dir;         /* where @include looks; NULL for text */
  struct config *cfg;
  struct pending *errs;
  unsigned n_errs, cap_errs;
  bool out_of_memory;
};

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
static void __attribute__((format(printf, 4, 5)))
report_at(struct load *ld, const char *file, unsigned line, const char *fmt, ...)
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
static void __attribute__((format(printf, 4, 5)))
report(struct load *ld, const config_setting_t *where, const char *path, const char *fmt, ...)
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
static unsigned finish_errors(struct load *ld, struct config_errors *out)
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

static const struct key *find_key(const struct section *sec, const char *name)
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
static void join_path(char *out, const char *prefix, const char *name)
{
  snprintf(out, KEY_PATH_LEN, "%s%s%s", prefix, *prefix ? "." : "", name);
}

static void elem_path(char *out, const char *prefix, unsigned i)
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

static const char *type_name(int type)
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

static void read_group(struct load *ld, const config_setting_t *grp, const struct section *sec,
                       void *base, const char *path);

static void store_integer(const struct key *k, void *base, long long v)
{
  if (k->type == KEY_UINT)
    *(unsigned *)field(base, k) = (unsigned)v;
  else
    *(size_t *)field(base, k) = (size_t)v;
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
    break;
  case KEY_ENUM:
    *(int *)field(base, k) = (int)k->def;
    break;
  case KEY_PROTO:
    *(const struct proto_ops **)field(base, k) = NULL;
    break;
  case KEY_GROUP:
    read_group(ld, NULL, k->sub, base, path);
    break;
  case KEY_LIST:
    break;         /* no elements: the struct starts zeroed */
  case KEY_ARRAY:
    *(unsigned *)((char *)base + k->count_offset) = 0;
    break;
  }
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
      report(ld, s, path, "unknown protocol '%.64s' (smpp, ucp or http)", v);
    *(const struct proto_ops **)field(base, k) = ops;
    break;
  }
  case KEY_GROUP:
    read_group(ld, s, k->sub, base, path);
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
static void read_group(struct load *ld, const config_setting_t *grp, const struct section *sec,
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

/* ---- the tables ---- */

/* Offsets checked against the field's type: a wrong table line fails to compile. */
#define AT(type, f) _Generic(((TARGET *)0)->f, type: offsetof(TARGET, f))
#define COUNT(a) (sizeof (a) / sizeof (a)[0])

#define BOOL_KEY(k, f, d) .name = k, .type = KEY_BOOL, .offset = AT(bool, f), .def = d
#define UINT_KEY(k, f, lo, hi, d) \
  .name = k, .type = KEY_UINT, .offset = AT(unsigned, f), .min = lo, .max = hi, .def = d
#define SIZE_KEY(k, f, lo, hi, d) \
  .name = k, .type = KEY_SIZE, .offset = AT(size_t, f), .min = lo, .max = hi, .def = d
#define DOUBLE_KEY(k, f, lo, hi, d) \
  .name = k, .type = KEY_DOUBLE, .offset = AT(double, f), .min = lo, .max = hi, .def = d
#define STRING_KEY(k, f, min_len) \
  .name = k, .type = KEY_STRING, .offset = AT(char *, f), .size = sizeof ((TARGET *)0)->f, .min = min_len
#define ADDR_KEY(k, f, min_port) \
  .name = k, .type = KEY_ADDR, .offset = AT(char *, f), .size = sizeof ((TARGET *)0)->f, \
  .min = min_port, .max = 65535
#define ENUM_KEY(k, f, table, d) .name = k, .type = KEY_ENUM, .offset = offsetof(TARGET, f), \
  .names = table, .def = d
#define PROTO_KEY(k, f) .name = k, .type = KEY_PROTO, .offset = AT(const struct proto_ops *, f)
#define GROUP_KEY(k, s) .name = k, .type = KEY_GROUP, .sub = &s
#define ARRAY_OF(k, f, n) .name = k, .type = KEY_ARRAY, .size = sizeof ((TARGET *)0)->f[0], \
  .capacity = COUNT(((TARGET *)0)->f), .count_offset = AT(unsigned, n)
#define STRINGS_KEY(k, f, n, min_len) ARRAY_OF(k, f, n), .elem = KEY_STRING, \
  .offset = AT(char (*)[sizeof ((TARGET *)0)->f[0]], f), .min = min_len
#define UINTS_KEY(k, f, n, lo, hi, d) ARRAY_OF(k, f, n), .elem = KEY_UINT, .offset = AT(unsigned *, f), \
  .min = lo, .max = hi, .def = d
#define LIST_KEY(k, f, n, s, lo, hi) .name = k, .type = KEY_LIST, .offset = offsetof(TARGET, f), \
  .count_offset = AT(unsigned, n), .size = sizeof *((TARGET *)0)->f, .sub = &s, .min = lo, .max = hi
#define ALWAYS MODE_ANY
#define SECTION(table) .keys = table, .n_keys = COUNT(table)

#define TARGET struct config_user
static const struct key user_keys[] = {
  { STRING_KEY("name", name, 1), .required = ALWAYS },
  { STRING_KEY("password", password, 1), .required = ALWAYS },
};
#undef TARGET
static const struct section user_section = { SECTION(user_keys) };

static long long window_bound(const void *base)
{
  /* The runtime keeps one slot of the protocol's window for its own
   * requests (bind, keep-alive, unbind). */
  const struct config_connector *c = base;
  return c->proto ? (long long)c->proto->window_max - 1 : LLONG_MAX;
}

static long long reconnect_bound(const void *base)
{
  return ((const struct config_connector *)base)->reconnect_max_ms;
}

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" DIGITS "-_."

static const struct name_value http_methods[] = {
  { "get", CONFIG_HTTP_GET }, { "post_form", CONFIG_HTTP_POST_FORM }, { "post_json", CONFIG_HTTP_POST_JSON },
  { NULL, 0 },
};
_Static_assert(sizeof(enum config_http_method) == sizeof(int), "enum stored as int");

#define TARGET struct config_connector
static const struct key connector_keys[] = {
  /* Names appear in the admin API's URLs and in log categories. */
  { STRING_KEY("name", name, 1), .required = ALWAYS, .chars = NAME_CHARS,
    .chars_why = "letters, digits, '-', '_' and '.'" },
  { PROTO_KEY("protocol", proto), .required = ALWAYS },
  { ENUM_KEY("mode", mode, conn_modes, CONFIG_CONN_SERVER), .required = ALWAYS },
  { ADDR_KEY("listen", listen, 0), .only = MODE_SERVER, .required = MODE_SERVER },
  { ADDR_KEY("connect", connect, 1), .only = MODE_CLIENT },   /* required: check_connector */
  { UINT_KEY("instances", instances, 1, 1000, 1) },
  { UINT_KEY("window", window, 1, 65535, 10), .bound = window_bound,
    .bound_why = "(this protocol's limit)" },
  { STRING_KEY("system_id", system_id, 1), .only = MODE_CLIENT },   /* required: check_connector */
  { STRING_KEY("password", password, 0), .only = MODE_CLIENT },
  { ENUM_KEY("bind_mode", bind_mode, bind_modes, PROTO_BIND_TRX), .only = MODE_CLIENT },
  { LIST_KEY("users", users, n_users, user_section, 1, 100000), .unique = "name",
    .only = MODE_SERVER, .required = MODE_SERVER },
  { DOUBLE_KEY("max_rate", max_rate, 0, 1000000, 0) },
  { UINT_KEY("response_timeout", response_timeout_ms, 1, 3600000, 30000) },
  { UINT_KEY("keepalive", keepalive_ms, 1, 3600000, 30000) },
  /* reconnect_max first: it bounds reconnect_min. */
  { UINT_KEY("reconnect_max", reconnect_max_ms, 1, 3600000, 60000), .only = MODE_CLIENT },
  { UINT_KEY("reconnect_min", reconnect_min_ms, 1, 3600000, 1000), .only = MODE_CLIENT,
    .bound = reconnect_bound, .bound_why = "(not above reconnect_max)" },
  { UINT_KEY("max_queue", max_queue, 0, 100000000, 0) },
  { ENUM_KEY("msgid_type_submit", msgid_submit, msgid_types, CONFIG_MSGID_STRING), .only = MODE_CLIENT },
  { ENUM_KEY("msgid_type_receipt", msgid_receipt, msgid_types, CONFIG_MSGID_STRING), .only = MODE_CLIENT },
  { STRING_KEY("url", url, 1), .only = MODE_CLIENT },
  { ENUM_KEY("method", http_method, http_methods, CONFIG_HTTP_GET), .only = MODE_CLIENT },
  { STRING_KEY("body", body, 0), .only = MODE_CLIENT },
  { STRING_KEY("id_field", id_field, 0), .only = MODE_CLIENT },
  { UINT_KEY("connections", connections, 1, 1000, 10), .only = MODE_CLIENT },
  { UINT_KEY("connections_per_ip", connections_per_ip, 1, 100000, 64), .only = MODE_SERVER },
  { UINT_KEY("max_connections", max_connections, 1, 1000000, 1000), .only = MODE_SERVER },
  { UINT_KEY("request_timeout", request_timeout_s, 1, 3600, 30), .only = MODE_SERVER },
  { UINT_KEY("bind_timeout", bind_timeout_ms, 100, 600000, 5000), .only = MODE_SERVER },
  { UINT_KEY("unbound_per_ip", unbound_per_ip, 1, 100000, 16), .only = MODE_SERVER },
  { UINT_KEY("unbound_max", unbound_max, 1, 100000, 128), .only = MODE_SERVER },
};
#undef TARGET
/* What a client connector needs depends on its protocol: an SMSC's address
 * and account, or a provider's URL; and each only where it applies. */
static void check_connector(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  const struct config_connector *c = base;
  char p[KEY_PATH_LEN];
  /* system_id and password serve both: an SMSC account, or a provider's HTTP Basic credentials. */
  static const char *const session_only[] = { "connect", "bind_mode", "keepalive",
                                               "msgid_type_submit", "msgid_type_receipt", NULL };
  static const char *const http_only[] = { "url", "method", "body", "id_field", "connections", NULL };
  const char *const *wrong = c->http ? session_only : http_only;
  for (unsigned i = 0; wrong[i]; i++) {
    const config_setting_t *s = config_setting_get_member(grp, wrong[i]);
    join_path(p, path, wrong[i]);
    if (s && (c->http || c->mode == CONFIG_CONN_CLIENT))
      report(ld, s, p, "applies only when protocol = %s", c->http ? "\"smpp\" or \"ucp\"" : "\"http\"");
  }
  static const char *const http_server_only[] = { "connections_per_ip", "max_connections", "request_timeout", NULL };
  static const char *const session_server_only[] = { "bind_timeout", "unbound_per_ip", "unbound_max", NULL };
  const char *const *server_wrong = c->http ? session_server_only : http_server_only;
  for (unsigned i = 0; server_wrong[i]; i++) {
    const config_setting_t *s = config_setting_get_member(grp, server_wrong[i]);
    join_path(p, path, server_wrong[i]);
    if (s && c->mode == CONFIG_CONN_SERVER)
      report(ld, s, p, "applies only when protocol = %s", c->http ? "\"smpp\" or \"ucp\"" : "\"http\"");
  }
  if (c->mode != CONFIG_CONN_CLIENT)
    return;
  const char *const *needed = c->http ? (const char *const[]){ "url", NULL }
                                      : (const char *const[]){ "connect", "system_id", NULL };
  for (unsigned i = 0; needed[i]; i++)
    if (!config_setting_get_member(grp, needed[i])) {
      join_path(p, path, needed[i]);
      report(ld, grp, p, "missing (required when mode = \"client\" and protocol = \"%s\")",
             c->http ? "http" : c->proto ? c->proto->name : "?");
    }
}

static const struct section connector_section = {
  SECTION(connector_keys), .mode_key = "mode", .check = check_connector,
  .has_line = true, .line_offset = offsetof(struct config_connector, line),
};

static bool route_is_default(const struct config_route *r)
{
  return !r->from[0] && !r->dst_prefix[0] && !r->src_prefix[0];
}

/* One default route at most: a second could never be taken. */
static void check_default_route(struct load *ld, const config_setting_t *grp,
                                const struct config_route *r, const char *path)
{
  if (!route_is_default(r))
    return;
  for (const struct config_route *earlier = ld->cfg->routes; earlier < r; earlier++)
    if (route_is_default(earlier)) {
      report(ld, grp, path, "a second default route (no from, dst_prefix or src_prefix); "
             "the first is at line %d", earlier->line);
      return;
    }
}

/* The target's keys taken together, so that nothing written is silently
 * ignored: a mode needs a group, weights a weighted one, one weight for
 * each of its connectors. A connector twice in a group is an error too: it
 * is a typo more often than a way to weigh or to retry. Then the weights
 * not given are 1, so that a loaded route holds one for each connector. */
static void check_target(struct load *ld, const config_setting_t *grp, struct config_route *r,
                         const char *path)
{
  const config_setting_t *to = config_setting_get_member(grp, "to");
  const config_setting_t *mode = config_setting_get_member(grp, "mode");
  const config_setting_t *weights = config_setting_get_member(grp, "weights");
  bool group = to && config_setting_type(to) == CONFIG_TYPE_ARRAY;
  char p[KEY_PATH_LEN];
  if (mode && !group) {
    join_path(p, path, "mode");
    report(ld, mode, p, "applies only when to is an array [ ... ] of connectors");
  }
  if (weights) {
    join_path(p, path, "weights");
    if (r->mode != CONFIG_ROUTE_WEIGHTED)
      report(ld, weights, p, "applies only when mode = \"weighted\"");
    else if (r->n_to && r->n_weights != r->n_to)
      report(ld, weights, p, "%u weights for %u connectors in to", r->n_weights, r->n_to);
  } else {
    for (unsigned i = 0; i < r->n_to; i++)
      r->weights[i] = 1;
    r->n_weights = r->n_to;
  }
  for (unsigned i = 1; group && i < r->n_to; i++)
    for (unsigned j = 0; j < i && r->to[i][0]; j++)
      if (strcmp(r->to[i], r->to[j]) == 0) {
        char to_path[KEY_PATH_LEN];
        join_path(to_path, path, "to");
        elem_path(p, to_path, i);
        report(ld, config_setting_get_elem(to, i), p, "'%s' is already to.[%u]", r->to[i], j);
        break;
      }
}

static void check_route(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  check_default_route(ld, grp, base, path);
  check_target(ld, grp, base, path);
}

#define TARGET struct config_route
static const struct key route_keys[] = {
  { STRING_KEY("from", from, 0), .connector_ref = true },
  { STRING_KEY("dst_prefix", dst_prefix, 0), .chars = DIGITS, .chars_why = "digits" },
  { STRING_KEY("src_prefix", src_prefix, 0), .chars = DIGITS, .chars_why = "digits" },
  { STRINGS_KEY("to", to, n_to, 1), .connector_ref = true, .required = ALWAYS },
  { ENUM_KEY("mode", mode, route_modes, CONFIG_ROUTE_FAILOVER) },
  /* Capped so that a weighted route's sequence (router.c) stays a few kilobytes. */
  { UINTS_KEY("weights", weights, n_weights, 1, 1000, 1) },
  { STRING_KEY("user", user, 0) },
};
#undef TARGET
static const struct section route_section = {
  SECTION(route_keys), .has_line = true,
  .line_offset = offsetof(struct config_route, line), .check = check_route,
};

static const struct name_value plugin_on_errors[] = {
  { "pass", CONFIG_PLUGIN_PASS }, { "refuse", CONFIG_PLUGIN_REFUSE }, { NULL, 0 },
};
_Static_assert(sizeof(enum config_plugin_on_error) == sizeof(int), "enum stored as int");

#define TARGET struct config_plugin
static const struct key plugin_keys[] = {
  { STRING_KEY("path", path, 1), .required = ALWAYS },
  /* Names appear in the admin API and in log categories, as connectors' do. */
  { STRING_KEY("name", name, 1), .chars = NAME_CHARS,
    .chars_why = "letters, digits, '-', '_' and '.'" },
  { ENUM_KEY("on_error", on_error, plugin_on_errors, CONFIG_PLUGIN_PASS) },
  { UINT_KEY("timeout_ms", timeout_ms, 1, 60000, 50) },
};
#undef TARGET

/* A float in the shortest form that reads back as the same value, so that
 * 0.1 reaches the plugin as "0.1", not "0.10000000000000001". */
static int float_text(char *out, size_t len, double v)
{
  int n = 0;
  for (int precision = 1; precision <= 17; precision++) {
    n = snprintf(out, len, "%.*g", precision, v);
    if (strtod(out, NULL) == v)
      break;
  }
  return n;
}

/* A plugin's own setting as text. Returns the length the text needs (at
 * least len: it was cut), or -1 for a type that has no text (a group, a
 * list, an array). */
static int setting_text(const config_setting_t *s, char *out, size_t len)
{
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_STRING:
    return snprintf(out, len, "%s", config_setting_get_string(s));
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64:
    return snprintf(out, len, "%lld", config_setting_get_int64(s));
  case CONFIG_TYPE_FLOAT:
    return float_text(out, len, config_setting_get_float(s));
  case CONFIG_TYPE_BOOL:
    return snprintf(out, len, "%s", config_setting_get_bool(s) ? "true" : "false");
  }
  return -1;
}

/* The keys the table does not know are the plugin's own settings, kept as
 * text in file order for the plugin's init, which judges them: only the
 * plugin knows what it takes. A plugin without a name is called after its
 * file, so that "plugins/blacklist.so" shows as "blacklist". */
static void check_plugin(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  struct config_plugin *pl = base;
  const struct section own = { SECTION(plugin_keys) };
  char p[KEY_PATH_LEN];
  for (int i = 0; i < config_setting_length(grp); i++) {
    const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
    const char *key = config_setting_name(s);
    if (find_key(&own, key))
      continue;
    join_path(p, path, key);
    if (pl->n_settings == CONFIG_PLUGIN_SETTINGS_MAX) {
      report(ld, s, p, "more than %d settings in one plugin", CONFIG_PLUGIN_SETTINGS_MAX);
      break;
    }
    struct config_plugin_setting *set = &pl->settings[pl->n_settings];
    int len = setting_text(s, set->value, sizeof set->value);
    if (strlen(key) >= sizeof set->key) {
      report(ld, s, p, "a setting's name may be %zu characters at most", sizeof set->key - 1);
    } else if (len < 0) {
      report(ld, s, p, "must be a string, a number or a boolean, not %s",
             type_name(config_setting_type(s)));
    } else if ((size_t)len >= sizeof set->value) {
      report(ld, s, p, "longer than %zu characters", sizeof set->value - 1);
    } else {
      snprintf(set->key, sizeof set->key, "%s", key);
      pl->n_settings++;
    }
  }
  if (!pl->name[0]) {
    const char *file = strrchr(pl->path, '/');
    file = file ? file + 1 : pl->path;
    size_t len = strlen(file);
    if (len > 3 && strcmp(file + len - 3, ".so") == 0)
      len -= 3;
    snprintf(pl->name, sizeof pl->name, "%.*s", (int)len, file);
  }
}

/* Open: the plugin's own settings sit next to path (check_plugin). */
static const struct section plugin_section = {
  SECTION(plugin_keys), .open = true, .check = check_plugin,
  .has_line = true, .line_offset = offsetof(struct config_plugin, line),
};

static long long soft_queue_bound(const void *base)
{
  return (long long)((const struct config *)base)->max_total_queue;
}

#define TARGET struct config
static const struct key general_keys[] = {
  { UINT_KEY("node_id", node_id, 1, 65535, 1) },
  { BOOL_KEY("persist", persist, true) },
  { STRING_KEY("spool_dir", spool_dir, 1), .def_str = "var/spool" },
  { UINT_KEY("id_window", id_window, 1, 1000000, 100) },
  { ENUM_KEY("log_level", log_level, log_levels, CONFIG_LOG_INFO) },
  { STRING_KEY("log_file", log_file, 0) },
  { SIZE_KEY("dlr_table_size", dlr_table_size, 1, 100000000, 1000000) },
  { UINT_KEY("dlr_ttl", dlr_ttl_s, 1, 31536000, 172800) },
  { UINT_KEY("auth_max_failures", auth_max_failures, 0, 1000000, 10) },
  { UINT_KEY("auth_failure_window", auth_failure_window_s, 1, 86400, 60) },
  { UINT_KEY("auth_block_time", auth_block_s, 1, 86400, 60) },
  { SIZE_KEY("history_size", history_size, 0, 100000000, 262144) },
  { UINT_KEY("journal_commit_interval_us", journal_commit_interval_us, 100, 100000, 500) },
  { UINT_KEY("journal_segment_mb", journal_segment_mb, 1, 1024, 64) },
  /* max_total_queue first: it bounds the soft limit. */
  { SIZE_KEY("max_total_queue", max_total_queue, 1, 1000000000, 110000) },
  { SIZE_KEY("max_total_queue_soft", max_total_queue_soft, 1, 1000000000, 100000),
    .bound = soft_queue_bound, .bound_why = "(not above max_total_queue)" },
};
static const struct section general_section = { SECTION(general_keys) };

/* The admin token: long enough not to be guessed, and not one of the
 * placeholders of the example configurations (etc/). */
#define ADMIN_TOKEN_MIN 16
static const char *const example_tokens[] = { "change-me", "replace-with-a-long-random-token", NULL };

/* The token file's content, its trailing newlines stripped, into
 * cfg->admin_token. Returns 0, or -1 with the reason reported. */
static int read_token_file(struct load *ld, const config_setting_t *s, const char *path)
{
  struct config *c = ld->cfg;
  char buf[sizeof c->admin_token + 2];
  FILE *f = fopen(c->admin_token_file, "r");
  if (!f) {
    report(ld, s, path, "cannot read %s: %s", c->admin_token_file, strerror(errno));
    return -1;
  }
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  bool more = fgetc(f) != EOF;
  fclose(f);
  buf[n] = 0;
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    buf[--n] = 0;
  if (more || n >= sizeof c->admin_token) {
    report(ld, s, path, "%s holds more than %zu characters", c->admin_token_file, sizeof c->admin_token - 1);
    return -1;
  }
  if (strlen(buf) != n || strpbrk(buf, "\r\n")) {
    report(ld, s, path, "%s must hold the token on one line", c->admin_token_file);
    return -1;
  }
  memcpy(c->admin_token, buf, n + 1);
  memset(buf, 0, sizeof buf);
  return 0;
}

/* Exactly one of token and token_file; and a token fit to guard the API
 * (never echoed in the message). */
static void check_admin(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  struct config *c = base;
  const config_setting_t *token = config_setting_get_member(grp, "token");
  const config_setting_t *file = config_setting_get_member(grp, "token_file");
  const config_setting_t *where = token ? token : file;
  char p[KEY_PATH_LEN];
  join_path(p, path, token || !file ? "token" : "token_file");
  if (token && file) {
    report(ld, file, p, "token and token_file exclude each other: give one");
    return;
  }
  if (!where) {
    report(ld, grp, p, "missing (or token_file, a file holding the token)");
    return;
  }
  if (file && (!c->admin_token_file[0] || read_token_file(ld, file, p) == -1))
    return;
  size_t len = strlen(c->admin_token);
  if (!len)
    return;   /* "must not be empty", already */
  const char *in = file ? " in " : "", *name = file ? c->admin_token_file : "";
  if (len < ADMIN_TOKEN_MIN) {
    report(ld, where, p, "the token%s%s has %zu characters: at least %d are needed", in, name, len,
           ADMIN_TOKEN_MIN);
    return;
  }
  for (unsigned i = 0; example_tokens[i]; i++)
    if (strcmp(c->admin_token, example_tokens[i]) == 0)
      report(ld, where, p, "the token%s%s is the example configuration's placeholder: choose one of your own",
             in, name);
}

static const struct key admin_keys[] = {
  { ADDR_KEY("listen", admin_listen, 0), .required = ALWAYS },
  { STRING_KEY("token", admin_token, 1) },                 /* one of the two: check_admin */
  { STRING_KEY("token_file", admin_token_file, 1) },
};
static const struct section admin_section = { SECTION(admin_keys), .check = check_admin };

static const struct key database_keys[] = {
  { STRING_KEY("conninfo", db_conninfo, 1), .required = ALWAYS },
  { BOOL_KEY("message_log", db_message_log, false) },
};
static const struct section database_section = { SECTION(database_keys) };

/* Connectors before routes: routes name them. */
static const struct key root_keys[] = {
  { GROUP_KEY("general", general_section) },
  { GROUP_KEY("admin", admin_section) },
  { GROUP_KEY("database", database_section) },
  { LIST_KEY("connectors", connectors, n_connectors, connector_section, 1, 65535),
    .unique = "name", .required = ALWAYS },
  { LIST_KEY("routes", routes, n_routes, route_section, 0, 100000) },
  { LIST_KEY("plugins", plugins, n_plugins, plugin_section, 0, 1000), .unique = "name" },
};
#undef TARGET
static const struct section root_section = { SECTION(root_keys) };

/* ---- the API ---- */

/* Frees the arrays the lists of sec allocated in base. */
static void free_lists(const struct section *sec, void *base)
{
  for (size_t i = 0; i < sec->n_keys; i++) {
    const struct key *k = &sec->keys[i];
    if (k->type == KEY_GROUP) {
      free_lists(k->sub, base);
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

void config_free(struct config *c)
{
  if (!c)
    return;
  free_lists(&root_section, c);
  free(c);
}

/* Turns what libconfig read (ok false: its error) into a config, or NULL
 * with the errors in *errors. read_errno is errno after a failed read. */
static struct config *build(config_t *lc, bool ok, int read_errno, const char *name,
                            struct config_errors *errors)
{
  struct load ld = { .name = name, .include_dir = config_get_include_dir(lc) };
  struct config *c = NULL;
  *errors = (struct config_errors){ 0 };
  if (!ok) {
    if (config_error_type(lc) == CONFIG_ERR_FILE_IO)
      report_at(&ld, NULL, 0, "cannot read: %s", strerror(read_errno));
    else
      report_at(&ld, config_error_file(lc), (unsigned)config_error_line(lc), "%s",
                config_error_text(lc));
    goto out;
  }
  c = calloc(1, sizeof *c);
  if (!c) {
    ld.out_of_memory = true;
    goto out;
  }
  snprintf(c->path, sizeof c->path, "%s", name);
  ld.cfg = c;
  const config_setting_t *root = config_root_setting(lc);
  read_group(&ld, root, &root_section, c, "");
  c->has_admin = config_setting_get_member(root, "admin") != NULL;
  c->has_database = config_setting_get_member(root, "database") != NULL;
out:
  if (finish_errors(&ld, errors)) {
    config_free(c);
    c = NULL;
  }
  return c;
}

struct config *config_load(const char *path, struct config_errors *errors)
{
  config_t lc;
  config_init(&lc);
  /* An @include names a file next to the one that includes it, wherever
   * emgd was started (without a directory in path, that is where it runs). */
  char dir[CONFIG_PATH_LEN];
  snprintf(dir, sizeof dir, "%s", path);
  if (strchr(path, '/'))
    config_set_include_dir(&lc, dirname(dir));
  errno = 0;
  bool ok = config_read_file(&lc, path) == CONFIG_TRUE;
  struct config *c = build(&lc, ok, errno, path, errors);
  config_destroy(&lc);
  return c;
}

struct config *config_load_string(const char *text, const char *name, struct config_errors *errors)
{
  config_t lc;
  config_init(&lc);
  bool ok = config_read_string(&lc, text) == CONFIG_TRUE;
  struct config *c = build(&lc, ok, 0, name, errors);
  config_destroy(&lc);
  return c;
}

const struct config_connector *config_connector(const struct config *c, const char *name)
{
  for (unsigned i = 0; i < c->n_connectors; i++)
    if (strcmp(c->connectors[i].name, name) == 0)
      return &c->connectors[i];
  return NULL;
}

const char *config_log_level_name(enum config_log_level level)
{
  for (const struct name_value *nv = log_levels; nv->name; nv++)
    if (nv->value == (int)level)
      return nv->name;
  return "unknown";
}

const char *config_protocol_name(const struct config_connector *c)
{
  return c->http ? "http" : c->proto ? c->proto->name : "?";
}
