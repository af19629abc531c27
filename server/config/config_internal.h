/* config_internal.h - the machinery config.c and config_accounts.c share:
 * tables of keys per section, read, checked, defaulted and freed by
 * config_read.c. A section's table says where each key's value goes, its
 * type, range, default and the connector modes it belongs to.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CONFIG_INTERNAL_H
#define EMG_CONFIG_INTERNAL_H

#include <libconfig.h>
#include <stdbool.h>
#include <stddef.h>
#include "config.h"

#define KEY_PATH_LEN 256   /* "connectors.[12].users.[3].password" and the like */
#define DIGITS "0123456789"

struct name_value {
  const char *name;
  int value;
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
  KEY_GROUP,       /* { ... } whose keys (sub) fill the struct at offset (0: the same one) */
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
  bool file;                       /* KEY_STRING: a file name, made absolute from the folder of the
                                      configuration (config_resolve_path) as it is read */
  const char *not_file;            /* ... except this value, which names no file */
  const struct name_value *names;  /* KEY_ENUM */
  const struct section *sub;       /* KEY_GROUP, KEY_LIST */
  size_t count_offset;             /* KEY_LIST, KEY_ARRAY: where the unsigned count goes */
  enum key_type elem;              /* KEY_ARRAY */
  unsigned capacity;               /* KEY_ARRAY */
  const char *unique;              /* KEY_LIST: a string key no two elements share */
  unsigned only;                   /* the modes it belongs to; 0 = all */
  unsigned required;               /* the modes it must appear in; 0 = none */
  bool live;                       /* a reload puts it in place (else a change is refused) */
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

/* ---- config_read.c ---- */

/* "FILE:LINE: what", or "FILE: what" when there is no line (file NULL: the
 * file being loaded). */
void report_at(struct load *ld, const char *file, unsigned line, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* "FILE:LINE: PATH: what", FILE and LINE those of where. */
void report(struct load *ld, const config_setting_t *where, const char *path, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
void join_path(char *out, const char *prefix, const char *name);
void elem_path(char *out, const char *prefix, unsigned i);
const struct key *find_key(const struct section *sec, const char *name);
const char *type_name(int type);

/* Reads grp's keys into base as sec's table says, then runs sec's check. */
void read_group(struct load *ld, const config_setting_t *grp, const struct section *sec, void *base,
                const char *path);
/* Frees the arrays the lists of sec allocated in base. */
void free_lists(const struct section *sec, void *base);

/* A path of the configuration made absolute: a relative one is taken from
 * the folder of the configuration file (c->path), not from where emgd
 * runs. "" stays. False when the result would not fit in size. Keys
 * marked file (FILE_KEY) are resolved so as they are read. */
bool config_resolve_path(const struct config *c, char *path, size_t size);

/* Whether a and b, both read with sec, differ in a key that is not live;
 * the first such key's path (as the error messages write it) in path. */
bool section_differs(const struct section *sec, const void *a, const void *b, const char *prefix,
                     char *path);

/* Sorts ld's errors by file and line into out; returns their count. */
unsigned finish_errors(struct load *ld, struct config_errors *out);

/* ---- config_accounts.c ---- */

extern const struct section account_section;

/* Turns the connectors' users entries into accounts and rebuilds each
 * server connector's users as the accounts that may use it. */
void config_accounts_merge(struct load *ld, const config_setting_t *root, struct config *c);

/* Adds the accounts of general.accounts_file (made absolute here) to c's,
 * read with lc, which the caller keeps until the errors are sorted. A
 * missing file holds none. */
void config_accounts_file(struct load *ld, config_t *lc, struct config *c);

/* ---- config_tls.c ---- */

extern const struct section tls_section;

/* ---- config_retry.c ---- */

/* A client connector's retry group. */
extern const struct section retry_section;

/* Completes the tls group of parent (read into t by tls_section) for its
 * role: the defaults that depend on it, the keys that do not apply, the
 * paths made absolute and the files checked (for sessions, t->ctx built). */
void config_tls_check(struct load *ld, const config_setting_t *parent, struct config_tls *t, const char *path,
                      enum config_tls_role role);
void config_tls_free(struct config_tls *t);

/* A key naming a file of CAs: checked (readable, PEM certificates). */
void config_ca_check(struct load *ld, const config_setting_t *where, const char *path, const char *file);

/* Whether going from running to next needs a restart (the group is live
 * in the tables: what a reload can put in place depends on the role). */
bool config_tls_needs_restart(const struct config_tls *running, const struct config_tls *next,
                              enum config_tls_role role);

/* ---- the tables (config.c, config_accounts.c) ---- */

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
#define FILE_KEY(k, f, min_len) STRING_KEY(k, f, min_len), .file = true
#define ADDR_KEY(k, f, min_port) \
  .name = k, .type = KEY_ADDR, .offset = AT(char *, f), .size = sizeof ((TARGET *)0)->f, \
  .min = min_port, .max = 65535
#define ENUM_KEY(k, f, table, d) .name = k, .type = KEY_ENUM, .offset = offsetof(TARGET, f), \
  .names = table, .def = d
#define PROTO_KEY(k, f) .name = k, .type = KEY_PROTO, .offset = AT(const struct proto_ops *, f)
#define GROUP_KEY(k, s) .name = k, .type = KEY_GROUP, .sub = &s
#define STRUCT_KEY(k, f, t, s) .name = k, .type = KEY_GROUP, .offset = AT(t, f), .sub = &s
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


#endif
