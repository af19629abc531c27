/* scts.h - service-centre time stamps: the 12-digit times UCP and CIMD2
 * write, and the allocator that keeps a server's (recipient, time stamp)
 * pairs unique.
 *
 * UCP (op 51's ACK "AdC:SCTS", op 53) and CIMD2 (a submit's response 021
 * and 060, the status report 23) name a message by its recipient and the
 * time stamp the server gave it: the client matches the later receipt on
 * that pair, so a recipient must never get the same stamp twice. A second
 * message to it within one second gets the next second, and so on. The
 * allocator remembers, per recipient, the last second it handed out, in a
 * table of fixed size. A newcomer takes the slot with the oldest second
 * among those it may use: when that second has passed, nothing is lost;
 * when it has not, every newcomer starts after it until it passes (the one
 * dropped may come back), so uniqueness holds whatever the load, and a
 * table smaller than the distinct recipients per second only pushes stamps
 * ahead of the clock.
 *
 * Not thread-safe. Give one allocator to everything that answers the same
 * clients (a client matches receipts across all its connections), under the
 * caller's lock if threads share it.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SCTS_H
#define EMG_SCTS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* How a protocol writes a time stamp, in UTC; YY 70-99 is 19YY, else 20YY. */
enum scts_layout {
  SCTS_NONE = 0,           /* the protocol names messages otherwise (SMPP) */
  SCTS_DDMMYY,             /* UCP: DDMMYYhhmm[ss] */
  SCTS_YYMMDD              /* CIMD2: yyMMddhhmm[ss] */
};

/* Writes t as 10 (to the minute) or 12 digits; returns digits, or -1 for
 * another count or a year beyond 1970-2069. No NUL is written. */
int scts_format(char *dst, size_t digits, enum scts_layout layout, time_t t);

/* Reads 10 or 12 digits; returns 0 and *t, or -1 (length, digits, a date
 * that does not exist). */
int scts_parse(const char *p, size_t len, enum scts_layout layout, time_t *t);

struct scts_alloc;

/* An allocator of capacity slots (rounded up to a power of two; about 16
 * bytes each) writing stamps of layout, or NULL when capacity is 0 or too
 * large, layout is SCTS_NONE, or memory is short. */
struct scts_alloc *scts_alloc_create(size_t capacity, enum scts_layout layout);
void scts_alloc_destroy(struct scts_alloc *a);

/* Writes the 12-digit stamp (NUL-terminated) for a message to recipient
 * (NUL-terminated) accepted at now (Unix seconds; the allocator never goes
 * back in time, should the caller's clock). Returns 0, or -1 when the
 * second is beyond what a stamp can write (2069). */
int scts_next(struct scts_alloc *a, const char *recipient, int64_t now, char stamp[13]);

/* The second of the stamp scts_next wrote last (Unix seconds). */
int64_t scts_last(const struct scts_alloc *a);

#endif
