/* pause_state.h - the connectors the operator paused, kept in a file so
 * that a pause outlives a restart (connector_pause writes it, the start
 * reads it before any connector sends).
 *
 * The file (PAUSE_STATE_FILE in spool_dir) is text: '#' comment lines,
 * blank lines, and one connector name a line. It is replaced whole on each
 * write (a temporary file written and synced, renamed over it, the folder
 * synced), so that a crash leaves either the old set or the new one.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_PAUSE_STATE_H
#define EMG_PAUSE_STATE_H

#include <stddef.h>
#include "config.h"

#define PAUSE_STATE_FILE "paused-connectors"

/* A file larger than this is no file emgd wrote: a read refuses it. */
#define PAUSE_STATE_MAX_BYTES (1 << 20)

/* The bad lines a read reports one by one; beyond, only their count. */
#define PAUSE_STATE_BAD_SHOWN 8

struct pause_state_name {
  char name[CONFIG_NAME_LEN];
  unsigned line;
};

struct pause_state_bad {
  unsigned line;
  char why[96];
};

/* What a read found: the names (each once, in file order) and the lines
 * that are not a connector name. */
struct pause_state {
  struct pause_state_name *names;
  unsigned count;
  struct pause_state_bad bad[PAUSE_STATE_BAD_SHOWN];
  unsigned n_bad;                     /* bad lines in all (those beyond the array counted only) */
};

/* The file's path in dir (spool_dir): 0, or -1 when it does not fit len. */
int pause_state_path(const char *dir, char *path, size_t len);

/* Reads path into *st (zeroed here; free with pause_state_free). A missing
 * file (or folder) reads as no connector paused. A line that is not a
 * connector name (letters, digits, '-', '_', '.', at most
 * CONFIG_NAME_LEN - 1 of them) is reported in st->bad and skipped: the
 * others are read. Returns 0, or -1 with err when the file is there but
 * cannot be read, or is larger than PAUSE_STATE_MAX_BYTES. */
int pause_state_read(const char *path, struct pause_state *st, char *err, size_t err_len);

void pause_state_free(struct pause_state *st);

/* Replaces path with a file naming names[0..count-1], atomically and
 * durably: PATH.tmp written and fsynced, renamed over path, the folder
 * fsynced. The folder is made (0750) when it is missing. Returns 0, or -1
 * with err: path is then as it was, unless only the folder's fsync failed
 * (the new file is in place, but a crash could still bring back the old). */
int pause_state_write(const char *path, const char *const *names, unsigned count, char *err, size_t err_len);

#endif
