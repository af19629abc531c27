/* dlr_bench.c - DLR table throughput and memory.
 *
 * Prints, for one and for two threads, inserts/s, final-receipt lookups/s
 * (found and removed) and the rate of the real mix (each insert followed by
 * the final lookup of an entry inserted a window earlier); then the memory a
 * full table takes: RSS before and after filling it with --count entries,
 * and again once every entry has been evicted and replaced (the rings have
 * wrapped: the steady state of a table that stays full).
 *
 * Entries are of realistic size: SMSC ids as a hex submit_sm_resp id
 * normalises (the decimal of 64 bits: 19-20 digits), origin user 8
 * characters, origin ref a UCP "AdC:SCTS" (26), addresses 13 digits.
 *
 * Usage: dlr_bench [--count N] [--json]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "dlr.h"

#define TTL_S 172800
#define LAG 1000       /* entries in flight in the mix: receipts trail the submits */
#define TARGET_SINGLE_OPS 2e6
#define TARGET_BYTES_PER_ENTRY 150

struct input {
  char key[24];
  char ref[28];
};

static struct input *inputs;
static size_t count = 1000000;
static struct dlr_info info_template;

static uint64_t splitmix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

static void build_inputs(void)
{
  inputs = malloc(count * sizeof *inputs);
  if (!inputs) {
    fprintf(stderr, "dlr_bench: out of memory for %zu inputs\n", count);
    exit(1);
  }
  for (size_t i = 0; i < count; i++) {
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, splitmix64(i));
    if (dlr_id_normalize(inputs[i].key, sizeof inputs[i].key, hex, DLR_ID_HEX) < 0) {
      fprintf(stderr, "dlr_bench: cannot normalise %s\n", hex);
      exit(1);
    }
    snprintf(inputs[i].ref, sizeof inputs[i].ref, "4917612345678:%012zu", 261130053500 + i);
  }
  struct dlr_info *t = &info_template;
  t->origin_connector = 1;
  t->dlr_mask = 3;
  t->submit_time = 1764480000;
  strcpy(t->origin_user, "loadtest");
  strcpy(t->src.addr, "4912345678901");
  t->src.ton = 1;
  t->src.npi = 1;
  strcpy(t->dst.addr, "4917612345678");
  t->dst.ton = 1;
  t->dst.npi = 1;
}

static void insert(struct dlrtab *t, uint16_t out_connector, size_t i)
{
  struct dlr_info info = info_template;
  info.msg_id = i;
  memcpy(info.origin_ref, inputs[i].ref, sizeof inputs[i].ref);
  if (dlrtab_insert(t, out_connector, inputs[i].key, &info, 1764480000) != 0) {
    fprintf(stderr, "dlr_bench: insert failed\n");
    exit(1);
  }
}

static void lookup_final(struct dlrtab *t, uint16_t out_connector, size_t i)
{
  struct dlr_info info;
  if (dlrtab_lookup(t, out_connector, inputs[i].key, true, &info) != 1 || info.msg_id != i) {
    fprintf(stderr, "dlr_bench: entry %zu not found\n", i);
    exit(1);
  }
}

enum phase { PHASE_INSERT, PHASE_LOOKUP, PHASE_MIX };

/* One thread's share of a phase: entries [lo, hi). */
struct slice {
  struct dlrtab *t;
  enum phase phase;
  uint16_t out_connector;
  size_t lo, hi;
};

static void *run_slice(void *arg)
{
  const struct slice *s = arg;
  for (size_t i = s->lo; i < s->hi; i++) {
    switch (s->phase) {
    case PHASE_INSERT:
      insert(s->t, s->out_connector, i);
      break;
    case PHASE_LOOKUP:
      lookup_final(s->t, s->out_connector, i);
      break;
    case PHASE_MIX:
      insert(s->t, s->out_connector, i);
      if (i >= s->lo + LAG)
        lookup_final(s->t, s->out_connector, i - LAG);
      break;
    }
  }
  if (s->phase == PHASE_MIX)
    for (size_t i = s->hi - LAG; i < s->hi; i++)
      lookup_final(s->t, s->out_connector, i);
  return NULL;
}

/* Runs a phase over all entries split among `threads`; returns table
 * operations per second (the mix does two per entry). */
static double run_phase(struct dlrtab *t, int threads, enum phase phase, uint16_t out_connector)
{
  struct slice slices[2];
  pthread_t tids[2];
  uint64_t start = clock_now_ns();
  for (int k = 0; k < threads; k++) {
    slices[k] = (struct slice){ t, phase, out_connector, count * (size_t)k / (size_t)threads,
                                count * (size_t)(k + 1) / (size_t)threads };
    if (pthread_create(&tids[k], NULL, run_slice, &slices[k]) != 0) {
      fprintf(stderr, "dlr_bench: cannot start a thread\n");
      exit(1);
    }
  }
  for (int k = 0; k < threads; k++)
    pthread_join(tids[k], NULL);
  double seconds = (double)(clock_now_ns() - start) / 1e9;
  return (double)count * (phase == PHASE_MIX ? 2 : 1) / seconds;
}

static size_t rss_bytes(void)
{
  size_t pages_total = 0, pages_resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%zu %zu", &pages_total, &pages_resident) != 2) {
    fprintf(stderr, "dlr_bench: cannot read /proc/self/statm\n");
    exit(1);
  }
  fclose(f);
  return pages_resident * (size_t)sysconf(_SC_PAGESIZE);
}

static struct dlrtab *table_new(void)
{
  struct dlrtab *t = dlrtab_create(count, TTL_S);
  if (!t) {
    fprintf(stderr, "dlr_bench: cannot create a table of %zu\n", count);
    exit(1);
  }
  return t;
}

struct rates {
  double insert, lookup, mix;
};

/* Each phase on a fresh table of --count: fill, then match every entry
 * finally; then the mix. */
static struct rates measure(int threads)
{
  struct rates r;
  struct dlrtab *t = table_new();
  r.insert = run_phase(t, threads, PHASE_INSERT, 1);
  r.lookup = run_phase(t, threads, PHASE_LOOKUP, 1);
  dlrtab_destroy(t);
  t = table_new();
  r.mix = run_phase(t, threads, PHASE_MIX, 1);
  dlrtab_destroy(t);
  return r;
}

int main(int argc, char **argv)
{
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--count") == 0 && i + 1 < argc && atol(argv[i + 1]) > 2 * LAG)
      count = (size_t)atol(argv[++i]);
    else if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else {
      fprintf(stderr, "usage: dlr_bench [--count N (> %d)] [--json]\n", 2 * LAG);
      return 5;
    }
  }
  build_inputs();

  /* Memory first, while the process has freed nothing yet. */
  struct dlrtab *t = table_new();
  size_t rss_empty = rss_bytes();
  run_phase(t, 1, PHASE_INSERT, 1);
  size_t rss_full = rss_bytes();
  /* the same ids on another connector are other keys: each evicts one */
  run_phase(t, 1, PHASE_INSERT, 2);
  size_t rss_wrapped = rss_bytes();
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  dlrtab_destroy(t);

  struct rates rate[2] = { measure(1), measure(2) };

  double per_entry = (double)(rss_full - rss_empty) / (double)count;
  double per_entry_wrapped = (double)(rss_wrapped - rss_empty) / (double)count;
  bool speed_met = rate[0].mix >= TARGET_SINGLE_OPS;
  bool memory_met =
    per_entry <= TARGET_BYTES_PER_ENTRY && per_entry_wrapped <= TARGET_BYTES_PER_ENTRY;
  if (json) {
    printf("{\"entries\":%zu,\"inserts_1\":%.0f,\"lookups_1\":%.0f,\"mix_1\":%.0f,"
           "\"inserts_2\":%.0f,\"lookups_2\":%.0f,\"mix_2\":%.0f,\"rss_empty\":%zu,"
           "\"rss_full\":%zu,\"rss_wrapped\":%zu,\"bytes_per_entry\":%.1f,"
           "\"bytes_per_entry_wrapped\":%.1f}\n",
           count, rate[0].insert, rate[0].lookup, rate[0].mix, rate[1].insert, rate[1].lookup,
           rate[1].mix, rss_empty, rss_full, rss_wrapped, per_entry, per_entry_wrapped);
  } else {
    printf("emg DLR table benchmark: %zu entries; id %zu chars, user 8, ref 26, addresses 13\n\n"
           "%-8s %14s %14s %20s\n",
           count, strlen(inputs[0].key), "threads", "inserts/s", "lookups/s",
           "insert+lookup ops/s");
    for (int k = 0; k < 2; k++)
      printf("%-8d %14.0f %14.0f %20.0f\n", k + 1, rate[k].insert, rate[k].lookup, rate[k].mix);
    printf("(inserts: filling an empty table; lookups: final receipts, found and removed, from\n"
           " the full table; insert+lookup: each insert, then the final lookup %d inserts back)\n\n"
           "%-8s %14s %14s\n%-8s %14.1f\n%-8s %14.1f %14.1f\n%-8s %14.1f %14.1f"
           "  after %zu more inserts, %" PRIu64 " evicted\n\n",
           LAG, "memory", "RSS MB", "bytes/entry", "empty", (double)rss_empty / 1e6, "full",
           (double)rss_full / 1e6, per_entry, "wrapped", (double)rss_wrapped / 1e6,
           per_entry_wrapped, count, st.evicted);
    printf("target: insert+lookup on one thread >= %.0f ops/s: %s\n"
           "target: bytes/entry <= %d: %s\n",
           TARGET_SINGLE_OPS, speed_met ? "met" : "MISSED", TARGET_BYTES_PER_ENTRY,
           memory_met ? "met" : "MISSED");
  }
  free(inputs);
  return 0;
}
