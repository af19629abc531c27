/* db_lane.h - one lane of the message log, as its writer (db_log.c) and its
 * spill file (db_spill.c) share it. Only those two files include it.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_DB_LANE_H
#define EMG_DB_LANE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bytebuf.h"
#include "db.h"
#include "db_internal.h"
#include "db_rec.h"

enum work_source { WORK_NONE, WORK_PENDING, WORK_SPILL };

/* One lane of the message log: the events of the messages whose ids hash to
 * it, its writer thread, connection, memory and spill file. */
struct lane {
  struct conn conn;                /* the writer's */
  struct db_log *parent;
  const struct db_log_limits *lim; /* the parent's, memory_bytes being this lane's share */
  char spill_path[4096];
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;             /* the writer waits here */
  pthread_cond_t settled;          /* db_log_sync waits here */

  /* Under lock. */
  struct bytebuf pending;          /* records not yet taken by the writer */
  uint64_t pending_events;
  int64_t pending_oldest_ms;
  uint64_t pending_since_ms;       /* monotonic: when pending stopped being empty */
  int spill_fd;
  uint64_t spill_size;             /* bytes of records in the file */
  uint64_t spill_unread;           /* offset the writer has read up to */
  uint64_t spill_events;           /* events in [spill_unread, spill_size) */
  int64_t spill_oldest_ms;         /* the oldest of those */
  uint64_t work_events;            /* events in the writer's work not yet written */
  int64_t work_oldest_ms;
  size_t work_bytes;               /* unwritten bytes of work */
  bool stop;
  uint64_t close_deadline_ms;
  unsigned sync_waiters;
  int link;                        /* -1 not tried yet, 0 down, 1 up */
  uint64_t events_logged, events_written, events_spilled, events_lost, events_dropped, batches;
  uint64_t spill_corrupt_bytes;
  char last_error[DB_ERR_LEN];

  /* The writer's own. */
  struct bytebuf work;             /* records being written, from pending or the spill file */
  size_t work_pos;                 /* records before it are written */
  enum work_source work_source;
  bool batch_ready;                /* fold holds the batch [work_pos, batch_end) */
  size_t batch_end;
  size_t isolate_end;              /* write one event per batch until here (after bad data) */
  uint64_t stage_generation;       /* the connection the staging table was made on */
  struct fold fold;
  struct bytebuf copy;
};

/* ---- the spill file (db_spill.c) ---- */

/* Moves pending to the spill file, under lock: 0, or DB_E_IO (the reason in
 * last_error; pending stays). */
int db_spill_pending(struct lane *log);

/* Moves what the writer holds from pending, and pending itself, to the
 * spill file, under lock. */
void db_spill_memory(struct lane *log);

/* The writer reads [from, to) of the spill file, as much of it as work
 * holds, into work; false when it cannot. Takes the lock for the counts. */
bool db_spill_read(struct lane *log, uint64_t from, uint64_t to);

/* At open: takes stock of the spill file a previous run left (its events,
 * the oldest, a torn tail cut). 0 or DB_E_IO with the reason in err. */
int db_spill_scan(struct lane *log, char *err, size_t err_len);

/* At open: appends to this lane's file (lane index of n) the records of the
 * spill files that a run with more writers left for lanes beyond n, and
 * removes those. 0 or DB_E_IO with the reason in err. */
int db_spill_adopt_all(struct lane *log, const char *spill_dir, unsigned index, unsigned n, char *err,
                       size_t err_len);

#endif
