/* emgload.c - the load generator: submits messages over SMPP or UCP through N
 * binds with a window each, or over HTTP (the JSON API or Kannel's sendsms)
 * through N kept-alive connections, at a smooth global rate, and collects
 * the acks and receipts, reporting counts and latencies.
 *
 * Every text carries its sequence number ("emgload #0000000042 ..."), so a
 * sink's record file shows loss and duplication end to end. Runs on one event
 * loop: SMPP and UCP through the connector runtime emgd uses, HTTP through
 * the HTTP connector's client, with receipts coming back to a small HTTP
 * listener on the same loop (the dlr-url carries the sequence number).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bigmem.h"
#include "charset.h"
#include "clock.h"
#include "histogram.h"
#include "http_client.h"
#include "http_codec.h"
#include "http_listen.h"
#include "netutil.h"
#include "ratelimit.h"
#include "session.h"
#include "sms_text.h"
#include "strutil.h"
#include "tool_util.h"

struct load_options {
  const char *protocol;           /* "smpp", "ucp", "cimd2" or "http" */
  const struct proto_ops *proto;  /* SMPP and UCP; NULL for HTTP */
  bool http_kannel;               /* HTTP: Kannel's sendsms instead of the JSON API */
  unsigned batch;                 /* HTTP JSON: messages per request (an array); default 1 */
  const char *dlr_listen;         /* HTTP: where the receipt listener binds */
  const char *connect;
  const char *user;
  const char *password;
  unsigned connections;
  unsigned window;
  uint64_t count;                 /* 0: run for duration_s */
  double duration_s;
  double rate;                    /* msgs/s over all connections; 0 = as fast as acked */
  bool dlr;
  uint8_t dlr_mask;               /* MSG_DLR_*: the receipts asked for (with dlr) */
  double wait_dlr_s;              /* after the last ack, how long to wait for receipts */
  unsigned receipts_each;         /* receipts awaited per message (a long one's parts each report) */
  unsigned length;                /* characters per text */
  enum sms_text_coding coding;
  struct tool_addr_pattern from, to;
  bool json;
  bool quiet;
  unsigned timeout_ms;            /* response time-out before a resubmit */
  double give_up_s;               /* end the run after this long without any progress */
  const char *missing_path;       /* where to list messages acked but without their receipt */
  const char *latency_path;       /* where to write each second's ack latency */
  unsigned validity_s;            /* validity period asked for; 0 = none */
  unsigned priority;              /* priority level asked for (0-3; SMPP priority_flag, UCP PR, HTTP) */
  unsigned deferred_s;            /* delivery deferred by this many seconds; 0 = at once */
  struct tool_tls tls;
};

/* Per message, indexed by sequence number. */
enum load_flags {
  LOAD_ACKED = 1,
  LOAD_REFUSED = 2,
  LOAD_RECEIPT = 4,
  LOAD_PENDING_RESEND = 8
};
struct load_msg {
  uint64_t sent_ns;
  uint64_t acked_ns;
  uint8_t flags;
};

/* Receipt id -> sequence number. Open addressing on a 64-bit hash of the id;
 * two ids with the same 64-bit hash are taken as one (odds ~1e-6 at 10M).
 * Key and value side by side: a map of millions misses the cache once a
 * lookup, not twice. */
struct id_slot {
  uint64_t key;                   /* 0 = empty */
  uint32_t seq;
};
struct id_map {
  struct id_slot *slots;
  size_t mask;
  size_t used;
};

struct load_conn {
  struct loader *ld;
  struct session *session;        /* NULL until the first connection has bound */
  bool bound;
  bool refused;                   /* its bind was refused for good: stopped, no reconnect */
  unsigned bind_refusals;         /* refusals in a row that do not say why (see on_disconnect) */
};

/* Refusals of messages, counted by the protocol's name for them. */
#define REFUSAL_KINDS 16
struct refusal_count {
  char why[PROTO_DESCRIBE_LEN];
  uint64_t count;
};

struct loader {
  struct load_options opt;
  struct evloop *loop;
  struct load_conn *conns;        /* SMPP and UCP */
  struct session_config session_cfg;
  struct http_client *http;       /* HTTP */
  struct http_listen *dlr_server; /* HTTP: receives the receipt callbacks, on this loop */
  struct http_listen_loop *dlr_loop;
  uint64_t http_pause_until_ns;   /* HTTP: no sending after a connection failure, briefly */
  struct ratelimit rate;
  struct load_msg *msgs;
  size_t msgs_cap;
  uint64_t next_seq;              /* next new sequence number */
  uint64_t *resend;               /* sequence numbers to send again */
  size_t resend_len, resend_cap;
  struct id_map ids;
  struct id_map early;            /* receipts that came before their ack: id -> state */
  uint64_t early_waiting;
  uint64_t rng;
  uint64_t start_ns, send_end_ns, last_ack_ns, stop_deadline_ns;
  uint64_t last_progress_ns;      /* last ack, refusal or receipt */
  bool sending_done;              /* no new messages from now on */
  bool stopping;
  uint64_t sent, acked, refused, resubmits, duplicate_acks;
  struct refusal_count refusals[REFUSAL_KINDS];
  unsigned n_refusals;
  uint64_t refusals_other;        /* beyond REFUSAL_KINDS reasons */
  unsigned conns_started;         /* sessions created: the first alone until it binds */
  unsigned conns_refused;         /* stopped for good: bind (HTTP: login) refused */
  bool http_answered;             /* HTTP: a request was answered, and not 401/403 */
  char refusal_line[200];         /* why a bind or login was refused for good, as printed */
  char stop_reason[384];          /* why the run ended before every message went */
  char last_loss[256];            /* the last connection lost, and why */
  uint64_t receipts, receipts_delivered, receipts_undeliv, receipts_other;
  uint64_t receipts_unknown, receipts_duplicate, mo;
  uint64_t last_acked, last_status_ns;
  struct histogram ack_us, receipt_ms;
  FILE *latency_log;              /* --latency-log: a line per second */
  struct histogram second_ack_us; /* this second's acks, for that line */
  uint64_t latency_second_ns;     /* when this second began */
  uint8_t body[4096];             /* the encoded filler after a prefix of body_after characters */
  size_t body_len, body_after;
};

static uint64_t hash_id(const char *s)
{
  uint64_t h = 1469598103934665603ull;  /* FNV-1a, then a final mix */
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h ? h : 1;
}

/* Faults a new block's pages in now, at the start, rather than one by one
 * in the middle of the run, where each is a stall of the whole loader
 * (a huge page is zeroed, maybe compacted for, on its first touch). */
static void prefault(void *p, size_t bytes)
{
  for (size_t at = 0; at < bytes; at += 4096)
    ((volatile uint8_t *)p)[at] = 0;
}

/* Rehashes into cap slots (a power of two). The slots are read at random,
 * so they are bigmem's huge pages: with 4 KiB pages nearly every lookup
 * in a map of millions also missed the TLB. */
static int id_map_resize(struct id_map *m, size_t cap)
{
  struct id_slot *slots = bigmem_alloc(cap * sizeof *slots);
  if (!slots)
    return -1;
  prefault(slots, cap * sizeof *slots);
  for (size_t i = 0; m->mask && i <= m->mask; i++) {
    if (!m->slots[i].key)
      continue;
    size_t j = m->slots[i].key & (cap - 1);
    while (slots[j].key)
      j = (j + 1) & (cap - 1);
    slots[j] = m->slots[i];
  }
  bigmem_free(m->slots, m->slots ? (m->mask + 1) * sizeof *m->slots : 0);
  m->slots = slots;
  m->mask = cap - 1;
  return 0;
}

static int id_map_grow(struct id_map *m)
{
  return id_map_resize(m, m->mask ? (m->mask + 1) * 2 : 1 << 16);
}

/* Sizes the map for n ids up front: growing a map of millions rehashes them
 * all at once, a stall of a second in the middle of a long run that would
 * show as ack latency (the acks wait in the socket meanwhile). */
static int id_map_reserve(struct id_map *m, uint64_t n)
{
  size_t cap = 1 << 16;
  while (cap < 2 * n + 2)
    cap *= 2;
  return cap > m->mask + 1 ? id_map_resize(m, cap) : 0;
}

/* In the early-receipt map: a receipt already matched to its ack. */
#define EARLY_TAKEN UINT32_MAX

static int id_map_put(struct id_map *m, const char *id, uint32_t seq)
{
  if ((m->used + 1) * 2 > m->mask + 1 && id_map_grow(m) == -1)
    return -1;
  uint64_t k = hash_id(id);
  size_t i = k & m->mask;
  while (m->slots[i].key && m->slots[i].key != k)
    i = (i + 1) & m->mask;
  if (!m->slots[i].key)
    m->used++;
  m->slots[i] = (struct id_slot){ k, seq };
  return 0;
}

static int id_map_get(const struct id_map *m, const char *id, uint32_t *seq)
{
  if (!m->mask)
    return -1;
  uint64_t k = hash_id(id);
  for (size_t i = k & m->mask; m->slots[i].key; i = (i + 1) & m->mask)
    if (m->slots[i].key == k) {
      *seq = m->slots[i].seq;
      return 0;
    }
  return -1;
}

static struct load_msg *msg_slot(struct loader *ld, uint64_t seq)
{
  if (seq >= ld->msgs_cap) {
    size_t cap = ld->msgs_cap ? ld->msgs_cap * 2 : 1 << 20;
    while (cap <= seq)
      cap *= 2;
    /* Read at random by receipts: huge pages, as the id map. */
    struct load_msg *m = bigmem_alloc(cap * sizeof *m);
    if (!m)
      return NULL;
    prefault(m, cap * sizeof *m);
    if (ld->msgs_cap)
      memcpy(m, ld->msgs, ld->msgs_cap * sizeof *m);
    bigmem_free(ld->msgs, ld->msgs_cap * sizeof *m);
    ld->msgs = m;
    ld->msgs_cap = cap;
  }
  return &ld->msgs[seq];
}

/* UTF-8 in the chosen coding; -1 when it does not fit. */
static int text_encode(const struct loader *ld, uint8_t *out, size_t cap, const char *utf8, size_t len)
{
  if (ld->opt.coding == SMS_TEXT_UCS2)
    return charset_utf8_to_ucs2(out, cap, utf8, len);
  if (ld->opt.coding == SMS_TEXT_8BIT) {   /* binary: the ASCII octets as they are */
    if (len > cap)
      return -1;
    memcpy(out, utf8, len);
    return (int)len;
  }
  return charset_utf8_to_gsm(out, cap, utf8, len, 1);
}

/* The text of message seq in the chosen coding: "emgload #<seq> " and filler
 * up to opt.length characters. Returns the payload length. The filler after
 * a prefix of a given length is always the same, so it is encoded once and
 * copied (each character encodes on its own, so the parts join). */
static size_t build_text(struct loader *ld, uint64_t seq, uint8_t *out, size_t cap)
{
  static const char gsm_filler[] = "The quick brown fox jumps over the lazy dog 0123456789. ";
  static const char ucs2_filler[] = "Привет, мир! Грузовик прибудет завтра. ";
  char prefix[32];
  struct str_out o = str_out(prefix, sizeof prefix);
  str_puts(&o, "emgload #");
  str_put_dec(&o, seq, 10);
  str_put(&o, " ", 1);
  if (o.len != ld->body_after) {
    const char *filler = ld->opt.coding == SMS_TEXT_UCS2 ? ucs2_filler : gsm_filler;
    char utf8[4096];
    size_t chars = o.len, at = 0, f = 0;
    while (chars < ld->opt.length && at + 4 < sizeof utf8) {
      do   /* one UTF-8 character */
        utf8[at++] = filler[f++];
      while ((filler[f] & 0xC0) == 0x80);
      if (!filler[f])
        f = 0;
      chars++;
    }
    int len = text_encode(ld, ld->body, sizeof ld->body, utf8, at);
    ld->body_len = len > 0 ? (size_t)len : 0;
    ld->body_after = o.len;
  }
  int len = text_encode(ld, out, cap, prefix, o.len);
  if (len < 0 || (size_t)len + ld->body_len > cap)
    return 0;
  memcpy(out + len, ld->body, ld->body_len);
  return (size_t)len + ld->body_len;
}

static bool more_to_send(struct loader *ld)
{
  if (ld->resend_len)
    return true;
  if (ld->sending_done)
    return false;
  if (ld->opt.count && ld->next_seq >= ld->opt.count) {
    ld->sending_done = true;
    ld->send_end_ns = clock_now_ns();
    return false;
  }
  return true;
}

/* Message seq, payload in text. */
static void build_msg(struct loader *ld, uint64_t seq, struct msg *m, uint8_t *text, size_t cap)
{
  memset(m, 0, sizeof *m);
  /* HTTP templates carry the id (%I) into the receipt URL. */
  m->id = seq;
  /* Addresses come from the sequence number, so a resend repeats them. */
  uint64_t addr_rng = seq * 0x9E3779B97F4A7C15ull + 1;
  tool_addr_generate(&ld->opt.from, &addr_rng, m->src.addr);
  tool_addr_generate(&ld->opt.to, &addr_rng, m->dst.addr);
  m->src.ton = m->dst.ton = MSG_TON_INTERNATIONAL;
  m->src.npi = m->dst.npi = 1;
  m->coding = (uint8_t)ld->opt.coding;
  m->dcs = (uint8_t)ld->opt.coding;
  m->dlr_mask = ld->opt.dlr ? ld->opt.dlr_mask : 0;
  m->validity = ld->opt.validity_s ? time(NULL) + ld->opt.validity_s : 0;
  m->priority = (uint8_t)ld->opt.priority;
  m->deferred = ld->opt.deferred_s ? time(NULL) + ld->opt.deferred_s : 0;
  m->data_len = (uint32_t)build_text(ld, seq, text, cap);
  m->data = text;
  if (ld->opt.coding == SMS_TEXT_8BIT) {
    /* Binary goes with a UDH of its own: 16-bit application ports (WAP push). */
    static const uint8_t port_udh[] = { 0x06, 0x05, 0x04, 0x0B, 0x84, 0x23, 0xF0 };
    m->udh = port_udh;
    m->udh_len = sizeof port_udh;
  }
}

/* The next message to send: a resend first. */
static uint64_t next_to_send(const struct loader *ld)
{
  return ld->resend_len > 0 ? ld->resend[ld->resend_len - 1] : ld->next_seq;
}

/* seq (as next_to_send gave it) has gone out at now. */
static void mark_sent(struct loader *ld, uint64_t seq, struct load_msg *lm, uint64_t now)
{
  if (ld->resend_len > 0 && ld->resend[ld->resend_len - 1] == seq) {
    ld->resend_len--;
    lm->flags &= (uint8_t)~LOAD_PENDING_RESEND;
    ld->resubmits++;
  } else {
    ld->next_seq++;
  }
  lm->sent_ns = now;
  ld->sent++;
}

/* Sends the next message (a resend first) on c, or over HTTP when c is NULL;
 * its latency counts from now (the fill's start: what it queues is written
 * after the whole fill, so no later than that). */
static int send_one(struct loader *ld, struct load_conn *c, uint64_t now)
{
  static uint8_t text[4096];
  uint64_t seq = next_to_send(ld);
  struct load_msg *lm = msg_slot(ld, seq);
  if (!lm)
    return -1;
  if (c) {
    struct proto_pdu pdu;
    memset(&pdu, 0, sizeof pdu);
    pdu.op = PROTO_OP_SUBMIT;
    build_msg(ld, seq, &pdu.msg, text, sizeof text);
    if (session_request(c->session, &pdu, (void *)(uintptr_t)seq) == -1)
      return -1;
  } else {
    struct msg m;
    build_msg(ld, seq, &m, text, sizeof text);
    if (http_client_submit(ld->http, &m, NULL, (void *)(uintptr_t)seq) != 0)
      return -1;
  }
  mark_sent(ld, seq, lm, now);
  return 0;
}

/* HTTP JSON with --batch: up to `most` messages in one request; its cookie
 * lists their sequence numbers. Returns how many went, or -1. */
struct load_batch {
  size_t n;
  uint64_t seq[];
};

static long send_batch(struct loader *ld, uint64_t most, uint64_t now)
{
  static struct msg msgs[1000];
  static const struct msg *ptrs[1000];
  static uint8_t texts[1000][1024];
  size_t n = 0;
  struct load_batch *b = malloc(sizeof *b + most * sizeof b->seq[0]);
  if (!b)
    return -1;
  /* Chosen before any is marked sent: resends from the end of their list
   * (as mark_sent pops them, in this order), then new ones. */
  size_t resends = ld->resend_len;
  uint64_t next = ld->next_seq;
  while (n < most) {
    uint64_t seq;
    if (resends)
      seq = ld->resend[--resends];
    else if (ld->sending_done || (ld->opt.count && next >= ld->opt.count))
      break;
    else
      seq = next++;
    if (!msg_slot(ld, seq))
      break;
    build_msg(ld, seq, &msgs[n], texts[n], sizeof texts[n]);
    ptrs[n] = &msgs[n];
    b->seq[n++] = seq;
  }
  b->n = n;
  if (!n || http_client_submit_batch(ld->http, ptrs, n, b) != 0) {
    free(b);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    mark_sent(ld, b->seq[i], msg_slot(ld, b->seq[i]), now);
  return (long)n;
}

static uint64_t outstanding(const struct loader *ld)
{
  return ld->sent - ld->resubmits - ld->acked - ld->refused;
}

/* Sends on c, or over HTTP when c is NULL, as far as window and rate allow. */
static void fill(struct loader *ld, struct load_conn *c)
{
  uint64_t now = clock_now_ns();
  if (ld->stopping || (c && !c->bound) || (!c && now < ld->http_pause_until_ns))
    return;
  /* HTTP: the first request goes alone, so that wrong credentials cost
   * the gateway's guard one failed login, not a window of them. */
  bool first = !c && !ld->http_answered;
  if (first && outstanding(ld) > ld->resend_len)   /* in flight: not those waiting to go again */
    return;
  /* Asking until the session says no also tells it to call on_ready when
   * room opens again (HTTP: each answer calls fill). */
  unsigned room;
  if (!c && ld->opt.batch > 1) {
    /* The rate counts messages: a request takes as many as it carries. */
    while (http_client_room(ld->http) && more_to_send(ld)) {
      uint64_t n = ratelimit_take(&ld->rate, now, ld->opt.batch);
      if (!n || send_batch(ld, n, now) == -1 || first)
        return;
    }
    return;
  }
  while ((room = c ? session_can_send(c->session) : first ? 1 : http_client_room(ld->http)) &&
         more_to_send(ld)) {
    uint64_t n = ratelimit_take(&ld->rate, now, room);
    for (uint64_t i = 0; i < n; i++)
      if (!more_to_send(ld) || send_one(ld, c, now) == -1)
        return;
    if (n < room || first)
      return;
  }
}

static void fill_all(struct loader *ld)
{
  if (ld->http)
    fill(ld, NULL);
  for (unsigned i = 0; ld->conns && i < ld->conns_started; i++)
    fill(ld, &ld->conns[i]);
}

static void queue_resend(struct loader *ld, uint64_t seq)
{
  struct load_msg *lm = &ld->msgs[seq];
  if (lm->flags & (LOAD_ACKED | LOAD_PENDING_RESEND))
    return;
  if (ld->resend_len == ld->resend_cap) {
    size_t cap = ld->resend_cap ? ld->resend_cap * 2 : 1024;
    uint64_t *r = realloc(ld->resend, cap * sizeof *r);
    if (!r)
      return;
    ld->resend = r;
    ld->resend_cap = cap;
  }
  lm->flags |= LOAD_PENDING_RESEND;
  ld->resend[ld->resend_len++] = seq;
}

/* Marks message seq as having its receipt (in state). */
static void count_receipt(struct loader *ld, uint64_t seq, uint8_t state)
{
  struct load_msg *lm = &ld->msgs[seq];
  if (lm->flags & LOAD_RECEIPT) {
    ld->receipts_duplicate++;
    return;
  }
  lm->flags |= LOAD_RECEIPT;
  ld->receipts++;
  ld->last_progress_ns = clock_now_ns();
  if (state == MSG_STATE_DELIVERED)
    ld->receipts_delivered++;
  else if (state == MSG_STATE_UNDELIVERABLE)
    ld->receipts_undeliv++;
  else
    ld->receipts_other++;
  histogram_record(&ld->receipt_ms, (ld->last_progress_ns - lm->acked_ns) / 1000000);
}

/* One more message refused for why (the protocol's name for it). */
static void count_refusal(struct loader *ld, const char *why)
{
  for (unsigned i = 0; i < ld->n_refusals; i++)
    if (strcmp(ld->refusals[i].why, why) == 0) {
      ld->refusals[i].count++;
      return;
    }
  if (ld->n_refusals == REFUSAL_KINDS) {
    ld->refusals_other++;
    return;
  }
  str_copy(ld->refusals[ld->n_refusals].why, sizeof ld->refusals[0].why, why);
  ld->refusals[ld->n_refusals++].count = 1;
}

/* Why the run ends before every message went: the first cause given. */
static void stop_because(struct loader *ld, const char *why)
{
  if (!ld->stop_reason[0])
    str_copy(ld->stop_reason, sizeof ld->stop_reason, why);
}

/* No new messages from now on; the run ends once the outstanding ones are in. */
static void end_sending(struct loader *ld)
{
  if (!ld->sending_done) {
    ld->sending_done = true;
    ld->send_end_ns = clock_now_ns();
  }
  ld->resend_len = 0;
}

/* The answer to message seq: taken (with the id its receipt will carry) or
 * refused (why says why). */
static void record_answer(struct loader *ld, uint64_t seq, bool ok, const char *msgid, const char *why)
{
  struct load_msg *lm = &ld->msgs[seq];
  uint64_t now = clock_now_ns();
  if (lm->flags & (LOAD_ACKED | LOAD_REFUSED)) {
    ld->duplicate_acks++;
    return;
  }
  if (ok) {
    lm->flags |= LOAD_ACKED;
    lm->acked_ns = now;
    ld->acked++;
    ld->last_ack_ns = now;
    ld->last_progress_ns = now;
    uint64_t latency_us = (now - lm->sent_ns) / 1000;
    histogram_record(&ld->ack_us, latency_us);
    if (ld->latency_log)
      histogram_record(&ld->second_ack_us, latency_us);
    uint32_t state;
    if (ld->opt.dlr && msgid[0]) {
      if (ld->early_waiting && id_map_get(&ld->early, msgid, &state) == 0 &&
          state != EARLY_TAKEN) {
        id_map_put(&ld->early, msgid, EARLY_TAKEN);
        ld->early_waiting--;
        count_receipt(ld, seq, (uint8_t)state);
      } else {
        id_map_put(&ld->ids, msgid, (uint32_t)seq);
      }
    }
  } else {
    lm->flags |= LOAD_REFUSED;
    ld->refused++;
    ld->last_progress_ns = now;
    count_refusal(ld, why);
  }
}

static void on_response(struct session *s, void *cookie, const struct proto_pdu *resp)
{
  struct load_conn *c = session_app(s);
  char why[PROTO_DESCRIBE_LEN] = "";
  if (resp->status != PROTO_OK)
    proto_describe(c->ld->opt.proto, resp->op, resp->status, resp->raw_status, why, sizeof why);
  record_answer(c->ld, (uintptr_t)cookie, resp->status == PROTO_OK, resp->msgid, why);
}

/* A receipt for the message its receiver called id; one that beats the
 * answer to its submit (another bind, or the callback before the HTTP
 * answer) waits for it. */
static void receipt_arrived(struct loader *ld, const char *id, uint8_t state)
{
  uint32_t seq;
  if (id_map_get(&ld->ids, id, &seq) == 0) {
    count_receipt(ld, seq, state);
    return;
  }
  if (id_map_put(&ld->early, id, state) == 0)
    ld->early_waiting++;
  else
    ld->receipts_unknown++;
}

/* HTTP: 401 (the JSON API) or 403 (Kannel's sendsms) says the credentials
 * are wrong, which sending again will not mend: no more is sent, once said
 * why. True for such an answer. */
static bool http_login_refused(struct loader *ld, long http_status)
{
  if (http_status != 401 && http_status != 403)
    return false;
  if (!ld->conns_refused) {
    ld->conns_refused = ld->opt.connections;
    snprintf(ld->refusal_line, sizeof ld->refusal_line, "login refused by %s: HTTP %ld (%s)", ld->opt.connect,
             http_status, http_status == 401 ? "wrong or missing credentials" : "credentials refused");
    fprintf(stderr, "%semgload: %s; sending no more\n", tool_stderr_tty() ? "\n" : "", ld->refusal_line);
    stop_because(ld, "the login was refused");
    end_sending(ld);
  }
  return true;
}

/* HTTP: why a message was refused: the answer's status, and in a 207 the
 * message's own. */
static void http_why(char *why, size_t cap, const struct http_client_result *r, const char *status)
{
  char words[PROTO_DESCRIBE_LEN];
  if (status)
    snprintf(why, cap, "HTTP %ld: %s", r->http_status, status);
  else
    snprintf(why, cap, "HTTP %ld (%s)", r->http_status,
             proto_describe(NULL, PROTO_OP_SUBMIT_RESP, r->status, 0, words, sizeof words));
}

/* HTTP: a message's answer. Its id for receipts is its sequence number,
 * which the dlr-url carries back. */
/* A batch's answer: each message's status in the JSON answer's
 * "messages" (one per message here, each to one recipient). */
static void batch_done(struct loader *ld, struct load_batch *b, const struct http_client_result *r)
{
  char id[24], why[PROTO_DESCRIBE_LEN];
  json_t *answer = NULL, *list = NULL;
  if (r->http_status && !http_login_refused(ld, r->http_status))
    ld->http_answered = true;
  if (r->http_status == 207 && (answer = json_loadb(r->answer, r->answer_len, 0, NULL)))
    list = json_object_get(answer, "messages");
  for (size_t i = 0; i < b->n; i++) {
    if (r->http_status == 0) {
      queue_resend(ld, b->seq[i]);
      continue;
    }
    bool ok = r->status == PROTO_OK;
    const char *status = NULL;
    if (list) {
      status = json_string_value(json_object_get(json_array_get(list, i), "status"));
      ok = status && (strcmp(status, "accepted") == 0 || strcmp(status, "queued") == 0);
    }
    snprintf(id, sizeof id, "%" PRIu64, b->seq[i]);
    http_why(why, sizeof why, r, status);
    record_answer(ld, b->seq[i], ok, id, why);
  }
  json_decref(answer);
  if (r->http_status == 0)
    ld->http_pause_until_ns = clock_now_ns() + 100000000ull;
  free(b);
}

static void on_http_done(void *arg, void *cookie, const struct http_client_result *r)
{
  struct loader *ld = arg;
  uint64_t seq = (uintptr_t)cookie;
  char id[24], why[PROTO_DESCRIBE_LEN];
  if (ld->opt.batch > 1) {
    batch_done(ld, cookie, r);
    fill(ld, NULL);
    return;
  }
  if (r->http_status == 0) {
    /* No answer (connection refused, reset, time-out): send it again after
     * a pause, as after a lost response on a bind. */
    queue_resend(ld, seq);
    ld->http_pause_until_ns = clock_now_ns() + 100000000ull;
    return;
  }
  if (!http_login_refused(ld, r->http_status))
    ld->http_answered = true;
  snprintf(id, sizeof id, "%" PRIu64, seq);
  http_why(why, sizeof why, r, NULL);
  record_answer(ld, seq, r->status == PROTO_OK, id, why);
  fill(ld, NULL);
}

static void on_unanswered(struct session *s, void *cookie, enum session_loss why)
{
  struct load_conn *c = session_app(s);
  queue_resend(c->ld, (uintptr_t)cookie);
}

static void on_request(struct session *s, const struct proto_pdu *req)
{
  struct load_conn *c = session_app(s);
  struct loader *ld = c->ld;
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.ref = req->ref;
  resp.raw_status = req->raw_status;   /* UCP: the OT being answered */
  resp.op = req->op == PROTO_OP_DELIVER ? PROTO_OP_DELIVER_RESP : PROTO_OP_SUBMIT_RESP;
  resp.status = req->op == PROTO_OP_DELIVER ? PROTO_OK : PROTO_E_UNSUPPORTED;
  session_respond(s, &resp);
  if (req->op != PROTO_OP_DELIVER)
    return;
  if (!req->is_receipt) {
    ld->mo++;
    return;
  }
  receipt_arrived(ld, req->receipt.id, req->receipt.state);
}

static const struct session_handler load_handler;

/* The connections after the first: once it bound, so that wrong
 * credentials cost the gateway's guard one failed login, not one for each
 * connection. */
static void start_others(struct loader *ld)
{
  while (ld->conns_started < ld->opt.connections) {
    struct load_conn *c = &ld->conns[ld->conns_started];
    if (!(c->session = session_client_create(ld->loop, &ld->session_cfg, &load_handler, c))) {
      fprintf(stderr, "emgload: cannot create connection %u to %s\n", ld->conns_started + 1, ld->opt.connect);
      return;
    }
    ld->conns_started++;
  }
}

static void on_bound(struct session *s)
{
  struct load_conn *c = session_app(s);
  c->bound = true;
  c->bind_refusals = 0;
  start_others(c->ld);
  fill(c->ld, c);
}

static void on_ready(struct session *s)
{
  struct load_conn *c = session_app(s);
  fill(c->ld, c);
}

/* What a bind refusal says about the credentials. */
static const char *refusal_meaning(enum proto_status status)
{
  switch (status) {
  case PROTO_E_AUTH_PASSWORD: return "an invalid password";
  case PROTO_E_AUTH_ACCOUNT: return "an unknown account";
  default: return "twice in a row (wrong credentials, or the account may not bind now)";
  }
}

/* c's bind was refused for good: c stops (no reconnect), and says why,
 * --quiet or not (once for each reason). Once every connection has
 * stopped so, nothing more can be sent. */
static void conn_refused(struct loader *ld, struct load_conn *c, enum proto_status status, const char *why)
{
  char line[sizeof ld->refusal_line];
  c->refused = true;
  session_stop(c->session);   /* disconnected: closed at once, without a callback */
  ld->conns_refused++;
  snprintf(line, sizeof line, "bind refused by %s: %s, %s", ld->opt.connect, why, refusal_meaning(status));
  if (strcmp(line, ld->refusal_line) != 0) {
    fprintf(stderr, "%semgload: %s; not binding again\n", tool_stderr_tty() ? "\n" : "", line);
    str_copy(ld->refusal_line, sizeof ld->refusal_line, line);
  }
  /* The first connection alone was started: its refusal ends the run. */
  if (ld->conns_refused == ld->conns_started && !ld->stopping) {
    stop_because(ld, "no connection could bind");
    end_sending(ld);
  }
}

static void on_disconnect(struct session *s, const char *reason)
{
  struct load_conn *c = session_app(s);
  struct loader *ld = c->ld;
  bool was_bound = c->bound;
  c->bound = false;
  if (ld->stopping)
    return;
  /* A wrong password or an unknown account is final: binding again would
   * only count as another guess at the gateway (which blocks an address
   * after a few). A refusal that does not say which (SMPP ESME_RBINDFAIL,
   * UCP NACK 07, CIMD2 100: also an account that may not bind now, or
   * every instance busy a moment) is final the second time in a row. Any
   * other loss is reconnected after a back-off (100 ms, doubling to 2 s). */
  uint32_t raw;
  enum proto_status status = session_bind_refused(s, &raw);
  if (status == PROTO_E_AUTH || status == PROTO_E_AUTH_ACCOUNT || status == PROTO_E_AUTH_PASSWORD) {
    char why[PROTO_DESCRIBE_LEN];
    proto_describe(ld->opt.proto, PROTO_OP_BIND_RESP, status, raw, why, sizeof why);
    if (status == PROTO_E_AUTH && ++c->bind_refusals < 2) {
      if (!ld->opt.quiet)
        fprintf(stderr, "%semgload: bind refused by %s: %s; trying once more in %.1f s\n",
                tool_stderr_tty() ? "\n" : "", ld->opt.connect, why, (double)session_reconnect_in_ms(s) / 1000);
      return;
    }
    conn_refused(ld, c, status, why);
    return;
  }
  /* A gateway closes at once the connections of an address it blocks
   * after failed logins: say so, or the operator sees only resets. */
  if (was_bound)
    snprintf(ld->last_loss, sizeof ld->last_loss, "%s", reason);
  else
    snprintf(ld->last_loss, sizeof ld->last_loss,
             "%s before the bind was answered: the gateway may refuse this address after failed logins", reason);
  reason = ld->last_loss;
  if (!ld->opt.quiet)
    fprintf(stderr, "%semgload: connection to %s lost (%s), reconnecting in %.1f s\n",
            tool_stderr_tty() ? "\n" : "", ld->opt.connect, reason, (double)session_reconnect_in_ms(s) / 1000);
}

static const struct session_handler load_handler = {
  .on_bound = on_bound,
  .on_request = on_request,
  .on_response = on_response,
  .on_unanswered = on_unanswered,
  .on_ready = on_ready,
  .on_disconnect = on_disconnect,
};

/* ---- HTTP receipts: GET /dlr?seq=N&type=T, Kannel's DLR types ---- */

static void on_dlr_request(void *ctx, const struct http_request *rq, struct http_pending *p)
{
  struct loader *ld = ctx;
  struct http_codec_param params[8];
  const char *seq = NULL, *type = NULL;
  /* The query is the listener's during the call: decoded in place. */
  int n = http_codec_form_parse((char *)rq->query, strlen(rq->query), params, 8);
  for (int i = 0; i < n; i++) {
    if (strcmp(params[i].name, "seq") == 0)
      seq = params[i].value;
    else if (strcmp(params[i].name, "type") == 0)
      type = params[i].value;
  }
  /* 1 delivered, 2 failed; buffered and SMSC answers are not final. */
  uint8_t state = !type ? 0 : strcmp(type, "1") == 0 ? MSG_STATE_DELIVERED
                          : strcmp(type, "2") == 0 ? MSG_STATE_UNDELIVERABLE
                                                   : 0;
  if (seq && state)
    receipt_arrived(ld, seq, state);
  else if (!seq)
    ld->receipts_unknown++;
  http_answer(p, seq ? 200 : 400, "text/plain", "ok", 2, NULL, false);
}

/* The receipt listener, on this loop. Writes the base of the dlr-url
 * ("http://HOST:PORT/dlr") into base. */
static int dlr_listen(struct loader *ld, char *base, size_t cap)
{
  char err[NETUTIL_ERR_LEN], host[128];
  const char *colon = strrchr(ld->opt.dlr_listen, ':');
  struct http_listen_config lc = { .listen = ld->opt.dlr_listen, .connection_limit = 10000,
                                   .connections_per_ip = 10000, .idle_timeout_s = 120 };
  struct http_listen_handler h = { .on_request = on_dlr_request };
  if (!colon || !(ld->dlr_server = http_listen_create(&lc, &h, NULL, err, sizeof err)) ||
      !(ld->dlr_loop = http_listen_attach(ld->dlr_server, ld->loop, ld))) {
    fprintf(stderr, "emgload: cannot listen for receipts on %s: %s\n", ld->opt.dlr_listen,
            colon ? err : "HOST:PORT expected");
    return -1;
  }
  snprintf(host, sizeof host, "%.*s", (int)(colon - ld->opt.dlr_listen), ld->opt.dlr_listen);
  snprintf(base, cap, "http://%s:%d/dlr", host, http_listen_port(ld->dlr_server));
  return 0;
}

/* ---- HTTP submits ---- */

/* Appends s to a template, %-encoded, every '%' doubled so that the
 * template keeps it. */
static void tmpl_append_encoded(char *t, size_t cap, const char *s)
{
  size_t len = strlen(t);
  for (; *s && len + 7 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("-_.~", c))
      t[len++] = (char)c;
    else
      len += (size_t)snprintf(t + len, cap - len, "%%%%%02X", c);
  }
  t[len] = 0;
}

static void tmpl_append(char *t, size_t cap, const char *s)
{
  size_t len = strlen(t);
  snprintf(t + len, cap - len, "%s", s);
}

/* The HTTP client for the JSON API or Kannel's sendsms, with the receipt
 * listener's URL in every message when --dlr asks for receipts. */
static int http_setup(struct loader *ld)
{
  static char url[1024], body[1024];
  char base[256], num[32];
  struct load_options *o = &ld->opt;
  struct http_client_config cfg = {
    .url = url,
    .connections = o->connections,
    .window = o->connections * o->window,
    .pipeline = o->window,
    .timeout_ms = o->timeout_ms,
    .tls = { .ca = o->tls.ca, .cert = o->tls.cert, .key = o->tls.key },
  };
  const char *scheme = o->tls.on ? "https" : "http";
  if (o->dlr && dlr_listen(ld, base, sizeof base) == -1)
    return -1;
  if (!o->http_kannel) {
    snprintf(url, sizeof url, "%s://%s/api/v1/messages", scheme, o->connect);
    cfg.method = HTTP_CLIENT_POST_JSON;
    cfg.body = body;
    cfg.user = o->user;
    cfg.password = o->password;
    snprintf(body, sizeof body, "{\"from\":\"%%P\",\"to\":\"%%p\",%s",
             o->coding == SMS_TEXT_8BIT ? "\"hex\":\"%h\",\"udh\":\"%u\",\"coding\":\"binary\""
                                        : "\"text\":\"%b\"");
    if (o->dlr) {
      /* %%d stays %d for the gateway to fill in. */
      snprintf(num, sizeof num, ",\"dlr_mask\":%u,\"dlr_url\":\"", o->dlr_mask);
      tmpl_append(body, sizeof body, num);
      tmpl_append(body, sizeof body, base);
      tmpl_append(body, sizeof body, "?seq=%I&type=%%d\"");
    }
    if (o->validity_s) {
      snprintf(num, sizeof num, ",\"validity\":%u", o->validity_s);
      tmpl_append(body, sizeof body, num);
    }
    if (o->priority) {
      snprintf(num, sizeof num, ",\"priority\":%u", o->priority);
      tmpl_append(body, sizeof body, num);
    }
    if (o->deferred_s) {
      snprintf(num, sizeof num, ",\"deferred\":%u", o->deferred_s);
      tmpl_append(body, sizeof body, num);
    }
    tmpl_append(body, sizeof body, "}");
  } else {
    snprintf(url, sizeof url, "%s://%s/cgi-bin/sendsms?username=", scheme, o->connect);
    tmpl_append_encoded(url, sizeof url, o->user ? o->user : "");
    tmpl_append(url, sizeof url, "&password=");
    tmpl_append_encoded(url, sizeof url, o->password ? o->password : "");
    tmpl_append(url, sizeof url, "&from=%P&to=%p&text=%b");
    if (o->coding == SMS_TEXT_8BIT)
      tmpl_append(url, sizeof url, "&coding=1&udh=%u");
    else if (o->coding == SMS_TEXT_UCS2)
      tmpl_append(url, sizeof url, "&coding=2&charset=UTF-8");
    if (o->dlr) {
      tmpl_append(url, sizeof url, "&dlr-mask=3&dlr-url=");
      tmpl_append_encoded(url, sizeof url, base);
      tmpl_append_encoded(url, sizeof url, "?seq=");
      tmpl_append(url, sizeof url, "%I");
      tmpl_append_encoded(url, sizeof url, "&type=%d");
    }
    if (o->validity_s) {
      snprintf(num, sizeof num, "&validity=%u", (o->validity_s + 59) / 60);
      tmpl_append(url, sizeof url, num);
    }
    if (o->priority) {
      snprintf(num, sizeof num, "&priority=%u", o->priority);
      tmpl_append(url, sizeof url, num);
    }
    if (o->deferred_s) {   /* Kannel's deferred is in minutes */
      snprintf(num, sizeof num, "&deferred=%u", (o->deferred_s + 59) / 60);
      tmpl_append(url, sizeof url, num);
    }
  }
  char why[TLS_ERR_LEN];
  if (!(ld->http = http_client_create(ld->loop, &cfg, on_http_done, ld, why, sizeof why))) {
    fprintf(stderr, "emgload: cannot set up the HTTP client: %s\n", why);
    return -1;
  }
  return 0;
}

static void http_teardown(struct loader *ld)
{
  http_client_destroy(ld->http);
  ld->http = NULL;
  http_listen_detach(ld->dlr_loop);
  http_listen_free(ld->dlr_server);
  ld->dlr_loop = NULL;
  ld->dlr_server = NULL;
}

static void begin_stop(struct loader *ld)
{
  if (ld->stopping)
    return;
  ld->stopping = true;
  ld->stop_deadline_ns = clock_now_ns() + 3000000000ull;
  for (unsigned i = 0; ld->conns && i < ld->conns_started; i++)
    session_stop(ld->conns[i].session);
}

static void print_progress(struct loader *ld, uint64_t now)
{
  double secs = (double)(now - ld->last_status_ns) / 1e9;
  fprintf(stderr,
          "\remgload: sent %" PRIu64 ", acked %" PRIu64 ", refused %" PRIu64 ", receipts %" PRIu64
          ", %.0f msgs/s   ",
          ld->sent, ld->acked, ld->refused, ld->receipts,
          secs > 0 ? (double)(ld->acked - ld->last_acked) / secs : 0.0);
  ld->last_acked = ld->acked;
  ld->last_status_ns = now;
}

static void on_signal(int signo, void *arg)
{
  struct loader *ld = arg;
  if (signo == SIGHUP)
    return;
  stop_because(ld, "stopped by a signal");
  if (!ld->sending_done) {
    ld->sending_done = true;
    ld->send_end_ns = clock_now_ns();
  }
  ld->opt.wait_dlr_s = 0;
  begin_stop(ld);
}

static double ms(uint64_t us)
{
  return (double)us / 1000.0;
}

/* --latency-log: one line per second, so that a tail can be placed in time. */
static void log_latency_second(struct loader *ld, uint64_t now)
{
  if (!ld->latency_log || now - ld->latency_second_ns < 1000000000ull)
    return;
  const struct histogram *h = &ld->second_ack_us;
  fprintf(ld->latency_log, "%.0f\t%" PRIu64 "\t%.2f\t%.2f\t%.2f\n",
          (double)(now - ld->start_ns) / 1e9, h->count, ms(histogram_percentile(h, 50)),
          ms(histogram_percentile(h, 99)), ms(h->max));
  histogram_init(&ld->second_ack_us);
  ld->latency_second_ns = now;
}

static void on_tick(struct evloop *loop, void *arg)
{
  struct loader *ld = arg;
  uint64_t now = clock_now_ns();
  if (!ld->opt.count && !ld->sending_done &&
      (double)(now - ld->start_ns) / 1e9 >= ld->opt.duration_s) {
    ld->sending_done = true;
    ld->send_end_ns = now;
  }
  if (ld->stopping) {
    unsigned open = 0;
    for (unsigned i = 0; ld->conns && i < ld->conns_started; i++)
      open += session_state(ld->conns[i].session) != SESSION_CLOSED;
    if (ld->http)
      open += http_client_room(ld->http) < ld->opt.connections * ld->opt.window;
    if (open == 0 || now > ld->stop_deadline_ns)
      evloop_stop(loop);
    return;
  }
  fill_all(ld);
  log_latency_second(ld, now);
  if (!ld->opt.quiet && tool_stderr_tty() && now - ld->last_status_ns >= 1000000000ull)
    print_progress(ld, now);
  /* Done when every message is answered and, with --dlr, every receipt is
   * in or --wait-dlr has passed since the last ack. */
  if ((double)(now - ld->last_progress_ns) / 1e9 >= ld->opt.give_up_s) {
    char why[sizeof ld->stop_reason];
    snprintf(why, sizeof why, "no progress for %.0f s, gave up%s%s", ld->opt.give_up_s,
             ld->last_loss[0] ? "; the last connection lost: " : "", ld->last_loss);
    if (!ld->opt.quiet)
      fprintf(stderr, "emgload: %s\n", why);
    stop_because(ld, why);
    on_signal(SIGTERM, ld);
    return;
  }
  if (ld->sending_done && ld->resend_len == 0 && outstanding(ld) == 0) {
    /* With K receipts a message the others arrive as duplicates; with one,
     * a duplicate (a receipt sent again after a crash) must not stand in
     * for one still missing. */
    uint64_t heard = ld->receipts + (ld->opt.receipts_each > 1 ? ld->receipts_duplicate : 0);
    bool receipts_done = !ld->opt.dlr || heard >= ld->acked * ld->opt.receipts_each ||
                         (double)(now - ld->last_ack_ns) / 1e9 >= ld->opt.wait_dlr_s;
    if (receipts_done)
      begin_stop(ld);
  }
}

static int report(struct loader *ld)
{
  uint64_t end = ld->send_end_ns ? ld->send_end_ns : clock_now_ns();
  if (ld->last_ack_ns > end)
    end = ld->last_ack_ns;
  double elapsed = (double)(end - ld->start_ns) / 1e9;
  double rate = elapsed > 0 ? (double)ld->acked / elapsed : 0;
  uint64_t missing = ld->opt.dlr && ld->acked > ld->receipts ? ld->acked - ld->receipts : 0;
  if (ld->latency_log)
    fclose(ld->latency_log);
  if (ld->opt.missing_path) {
    FILE *f = fopen(ld->opt.missing_path, "w");
    for (uint64_t seq = 0; f && seq < ld->next_seq; seq++)
      if ((ld->msgs[seq].flags & LOAD_ACKED) && !(ld->msgs[seq].flags & LOAD_RECEIPT))
        fprintf(f, "%" PRIu64 "\n", seq);
    if (f)
      fclose(f);
  }
  ld->receipts_unknown += ld->early_waiting;
  uint64_t unanswered = ld->sent - ld->resubmits - ld->acked - ld->refused;
  /* With --count, messages never sent (the run gave up) are a failure too. */
  uint64_t unsent = ld->opt.count > ld->next_seq ? ld->opt.count - ld->next_seq : 0;
  if (ld->opt.json) {
    json_t *j = json_pack(
      "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f,"
      " s:{s:f, s:f, s:f, s:f}, s:{s:f, s:f, s:f}}",
      "protocol", ld->opt.protocol, "connections", (json_int_t)ld->opt.connections,
      "window", (json_int_t)ld->opt.window, "sent", (json_int_t)ld->sent,
      "acked", (json_int_t)ld->acked, "refused", (json_int_t)ld->refused,
      "unanswered", (json_int_t)unanswered, "unsent", (json_int_t)unsent,
      "resubmits", (json_int_t)ld->resubmits,
      "duplicate_acks", (json_int_t)ld->duplicate_acks, "receipts", (json_int_t)ld->receipts,
      "receipts_delivered", (json_int_t)ld->receipts_delivered,
      "receipts_undeliverable", (json_int_t)ld->receipts_undeliv,
      "receipts_other", (json_int_t)ld->receipts_other, "mo", (json_int_t)ld->mo,
      "receipts_unknown", (json_int_t)ld->receipts_unknown,
      "receipts_duplicate", (json_int_t)ld->receipts_duplicate,
      "receipts_missing", (json_int_t)missing, "elapsed_s", elapsed, "msgs_per_s", rate,
      "ack_latency_ms", "p50", ms(histogram_percentile(&ld->ack_us, 50)), "p90",
      ms(histogram_percentile(&ld->ack_us, 90)), "p99", ms(histogram_percentile(&ld->ack_us, 99)),
      "max", ms(ld->ack_us.max == 0 ? 0 : ld->ack_us.max), "receipt_latency_ms", "p50",
      (double)histogram_percentile(&ld->receipt_ms, 50), "p99",
      (double)histogram_percentile(&ld->receipt_ms, 99), "max", (double)ld->receipt_ms.max);
    if (j) {
      json_t *refusals = json_object();
      for (unsigned i = 0; refusals && i < ld->n_refusals; i++)
        json_object_set_new(refusals, ld->refusals[i].why, json_integer((json_int_t)ld->refusals[i].count));
      if (refusals && ld->refusals_other)
        json_object_set_new(refusals, "other", json_integer((json_int_t)ld->refusals_other));
      json_object_set_new(j, "refusals", refusals ? refusals : json_null());
      json_object_set_new(j, "connections_refused", json_integer(ld->conns_refused));
      json_object_set_new(j, "refusal", ld->refusal_line[0] ? json_string(ld->refusal_line) : json_null());
      json_object_set_new(j, "unsent_reason", unsent && ld->stop_reason[0] ? json_string(ld->stop_reason) : json_null());
      json_dumpf(j, stdout, JSON_COMPACT);
      fputc('\n', stdout);
      json_decref(j);
    }
  } else {
    printf("emgload: %s%s to %s, %u connections x window %u\n", ld->opt.protocol,
           ld->opt.proto ? "" : ld->opt.http_kannel ? " (kannel)" : " (json)", ld->opt.connect,
           ld->opt.connections, ld->opt.window);
    printf("  sent       %12" PRIu64 "  (resubmits %" PRIu64 ")\n", ld->sent, ld->resubmits);
    printf("  acked      %12" PRIu64 "\n", ld->acked);
    printf("  refused    %12" PRIu64, ld->refused);
    for (unsigned i = 0; i < ld->n_refusals; i++)
      printf("%s%" PRIu64 " %s", i ? ", " : "  (", ld->refusals[i].count, ld->refusals[i].why);
    if (ld->refusals_other)
      printf(", %" PRIu64 " for other reasons", ld->refusals_other);
    printf("%s\n", ld->n_refusals ? ")" : "");
    printf("  unanswered %12" PRIu64 "\n", unanswered);
    if (unsent)
      printf("  unsent     %12" PRIu64 "%s%s%s\n", unsent, ld->stop_reason[0] ? "  (" : "", ld->stop_reason,
             ld->stop_reason[0] ? ")" : "");
    unsigned opened = ld->opt.proto ? ld->conns_started : ld->opt.connections;
    if (ld->conns_refused && opened < ld->opt.connections)
      printf("  stopped    %12u  connections, %u not opened: %s\n", ld->conns_refused,
             ld->opt.connections - opened, ld->refusal_line);
    else if (ld->conns_refused)
      printf("  stopped    %12u  connections: %s\n", ld->conns_refused, ld->refusal_line);
    if (ld->opt.dlr)
      printf("  receipts   %12" PRIu64 "  (delivered %" PRIu64 ", undeliverable %" PRIu64
             ", other %" PRIu64 "; missing %" PRIu64 ", unknown %" PRIu64 ", duplicate %" PRIu64
             ")\n",
             ld->receipts, ld->receipts_delivered, ld->receipts_undeliv, ld->receipts_other,
             missing, ld->receipts_unknown, ld->receipts_duplicate);
    printf("  elapsed    %12.2f s\n", elapsed);
    printf("  throughput %12.0f msgs/s\n", rate);
    printf("  ack latency      p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
           ms(histogram_percentile(&ld->ack_us, 50)), ms(histogram_percentile(&ld->ack_us, 90)),
           ms(histogram_percentile(&ld->ack_us, 99)), ms(ld->ack_us.max));
    if (ld->opt.dlr)
      printf("  receipt latency  p50 %" PRIu64 " ms, p99 %" PRIu64 " ms, max %" PRIu64 " ms\n",
             histogram_percentile(&ld->receipt_ms, 50), histogram_percentile(&ld->receipt_ms, 99),
             ld->receipt_ms.count ? ld->receipt_ms.max : 0);
  }
  fflush(stdout);
  return ld->refused || unanswered || unsent || missing || ld->conns_refused ? TOOL_EXIT_FAILED : TOOL_EXIT_OK;
}

static void usage(FILE *out)
{
  fprintf(out,
          "usage: emgload --protocol smpp|ucp|cimd2|http --connect HOST:PORT [options]\n"
          "  --user U --password P   bind/login credentials (HTTP: Basic, or Kannel's parameters)\n"
          "  --connections N         binds (HTTP: kept-alive connections), each with its own window (default 1)\n"
          "  --window W              outstanding submits per connection (default 10; HTTP: pipelined,\n"
          "                          W requests in flight on each kept-alive connection)\n"
          "  --http-api json|kannel  HTTP: POST /api/v1/messages or GET /cgi-bin/sendsms (default json)\n"
          "  --batch N               HTTP JSON: N messages a request, as one array (default 1)\n"
          "  --dlr-listen HOST:PORT  HTTP: where receipts are called back (default 127.0.0.1:0)\n"
          "  --count N | --duration S  how many messages, or for how long (default --count 1000)\n"
          "  --rate MPS              global, smooth rate limit (default none)\n"
          "  --dlr                   request receipts and wait for them\n"
          "  --wait-dlr S            seconds to wait for receipts after the last ack (default 30)\n"
          "  --receipts-each K       wait for K receipts a message (a long message whose parts each\n"
          "                          report; the others count as duplicates; default 1)\n"
          "  --dlr-mask N            with receipts, the ones asked for: 1 delivered, 2 failed, 4 buffered\n"
          "                          (intermediate), summed (default 3; implies --dlr)\n"
          "  --length L              characters per text (default 145)\n"
          "  --encoding gsm|ucs2|binary  text coding (default gsm); binary: 8-bit data with a port UDH\n"
          "  --from PREFIX:LEN       source addresses (default 4917000:13)\n"
          "  --to PREFIX:LEN         destination addresses (default 4917100:13); a '+' first is\n"
          "                          sent as it is (\"+4917:14\")\n"
          "  --timeout MS            response time-out before a resubmit (default 30000)\n"
          "  --give-up S             end the run after S seconds without progress (default 60)\n"
          "  --validity S            ask for the message to expire S seconds after submission\n"
          "  --priority N            ask for priority level N (0-3; UCP: any above 0 is priority)\n"
          "  --deferred S            ask for delivery S seconds after submission (Kannel's API: minutes)\n"
          "  --missing FILE          list the sequence numbers acked but left without a receipt\n"
          "  --latency-log FILE      each second, a line: seconds since the start, acks, and their\n"
          "                          latency p50, p99 and max in ms (tab-separated)\n"
          "  --tls                   over TLS; the server's certificate and name are verified\n"
          "  --ca FILE               CAs it must chain to (default the system's)\n"
          "  --cert FILE --key FILE  a client certificate to present\n"
          "  --json                  print the summary as one JSON object\n"
          "  --quiet                 no progress line, nor a line for each lost connection (a bind\n"
          "                          or login refused for good is still said)\n"
          "  --version               print the version and exit\n"
          "  -h, --help              print this and exit\n");
}

int main(int argc, char **argv)
{
  static struct loader ld;
  static const struct option longopts[] = {
    { "protocol", required_argument, 0, 'p' }, { "connect", required_argument, 0, 'c' },
    { "user", required_argument, 0, 'u' },     { "password", required_argument, 0, 'P' },
    { "connections", required_argument, 0, 'n' }, { "window", required_argument, 0, 'w' },
    { "count", required_argument, 0, 'N' },    { "duration", required_argument, 0, 'D' },
    { "rate", required_argument, 0, 'r' },     { "dlr", no_argument, 0, 'd' },
    { "wait-dlr", required_argument, 0, 'W' }, { "receipts-each", required_argument, 0, 'E' }, { "length", required_argument, 0, 'L' },
    { "encoding", required_argument, 0, 'e' }, { "from", required_argument, 0, 'f' },
    { "to", required_argument, 0, 't' },       { "timeout", required_argument, 0, 'T' },
    { "json", no_argument, 0, 'j' },           { "quiet", no_argument, 0, 'q' },
    { "give-up", required_argument, 0, 'G' },   { "validity", required_argument, 0, 'V' },
    { "priority", required_argument, 0, 'Y' }, { "deferred", required_argument, 0, 'Z' },
    { "missing", required_argument, 0, 'M' },  { "dlr-mask", required_argument, 0, 'K' },
    { "http-api", required_argument, 0, 'A' }, { "dlr-listen", required_argument, 0, 'R' },
    { "latency-log", required_argument, 0, 'l' }, { "batch", required_argument, 0, 'B' }, TOOL_TLS_LONGOPTS,
    { "version", no_argument, 0, 'v' }, { "help", no_argument, 0, 'h' },           { 0, 0, 0, 0 }
  };
  struct load_options *o = &ld.opt;
  uint64_t v;
  o->connections = 1;
  o->window = 10;
  o->count = 1000;
  o->wait_dlr_s = 30;
  o->receipts_each = 1;
  o->length = 145;
  o->coding = SMS_TEXT_GSM7;
  o->timeout_ms = 30000;
  o->give_up_s = 60;
  o->dlr_listen = "127.0.0.1:0";
  o->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  tool_parse_addr_pattern("4917000:13", &o->from);
  tool_parse_addr_pattern("4917100:13", &o->to);
  int ch;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    const char *bad = NULL;
    if (tool_tls_option(&o->tls, ch, optarg))
      continue;
    switch (ch) {
    case 'p':
      o->protocol = optarg;
      if (strcmp(optarg, "http") != 0 && !(o->proto = proto_find(optarg)))
        bad = "--protocol (smpp, ucp, cimd2 or http)";
      break;
    case 'A':
      if (strcmp(optarg, "json") != 0 && strcmp(optarg, "kannel") != 0)
        bad = "--http-api (json or kannel)";
      o->http_kannel = strcmp(optarg, "kannel") == 0;
      break;
    case 'R': o->dlr_listen = optarg; break;
    case 'B':
      if (tool_parse_count(optarg, &v) == -1 || v < 1 || v > 1000)
        bad = "1..1000 messages a request";
      o->batch = (unsigned)v;
      break;
    case 'Y':
      if (tool_parse_count(optarg, &v) == -1 || v > 3)
        bad = "--priority (0-3)";
      o->priority = (unsigned)v;
      break;
    case 'c': o->connect = optarg; break;
    case 'u': o->user = optarg; break;
    case 'P': o->password = optarg; break;
    case 'n':
    case 'w':
    case 'N':
    case 'L':
    case 'V':
    case 'Z':
    case 'T':
      if (tool_parse_count(optarg, &v) == -1 || v > 100000000ull) {
        bad = "number";
        break;
      }
      if (ch == 'n') o->connections = (unsigned)v;
      else if (ch == 'w') o->window = (unsigned)v;
      else if (ch == 'N') { o->count = v; o->duration_s = 0; }
      else if (ch == 'L') o->length = (unsigned)v;
      else if (ch == 'V') o->validity_s = (unsigned)v;
      else if (ch == 'Z') o->deferred_s = (unsigned)v;
      else o->timeout_ms = (unsigned)v;
      break;
    case 'D':
    case 'r':
    case 'G':
    case 'W': {
      char *end;
      double d = strtod(optarg, &end);
      if (end == optarg || *end || d < 0 || !isfinite(d)) {
        bad = "number of seconds or a rate";
        break;
      }
      if (ch == 'D') { o->duration_s = d; o->count = 0; }
      else if (ch == 'r') o->rate = d;
      else if (ch == 'G') o->give_up_s = d;
      else o->wait_dlr_s = d;
      break;
    }
    case 'd': o->dlr = true; break;
    case 'E':
      if (tool_parse_count(optarg, &v) == -1 || v < 1 || v > 255) {
        bad = "receipts a message 1..255";
        break;
      }
      o->dlr = true;
      o->receipts_each = (unsigned)v;
      break;
    case 'K':
      if (tool_parse_count(optarg, &v) == -1 || v < 1 || v > 7) {
        bad = "receipt mask 1..7 (1 delivered, 2 failed, 4 buffered)";
        break;
      }
      o->dlr = true;
      o->dlr_mask = (uint8_t)v;
      break;
    case 'e':
      if (strcmp(optarg, "gsm") == 0) o->coding = SMS_TEXT_GSM7;
      else if (strcmp(optarg, "ucs2") == 0) o->coding = SMS_TEXT_UCS2;
      else if (strcmp(optarg, "binary") == 0) o->coding = SMS_TEXT_8BIT;
      else bad = "--encoding (gsm, ucs2 or binary)";
      break;
    case 'f':
    case 't':
      if (tool_parse_addr_pattern(optarg, ch == 'f' ? &o->from : &o->to) == -1)
        bad = "address pattern PREFIX:LENGTH (digits, '+' allowed first, length up to 20)";
      break;
    case 'j': o->json = true; break;
    case 'M': o->missing_path = optarg; break;
    case 'l': o->latency_path = optarg; break;
    case 'q': o->quiet = true; break;
    case 'h': usage(stdout); return TOOL_EXIT_OK;
    case 'v': printf("emgload %s\n", EMG_VERSION); return TOOL_EXIT_OK;
    default: usage(stderr); return TOOL_EXIT_USAGE;
    }
    if (bad) {
      fprintf(stderr, "emgload: bad value '%s': expected %s\n", optarg, bad);
      return TOOL_EXIT_USAGE;
    }
  }
  if (!o->protocol || !o->connect || optind < argc || o->connections == 0 || o->window == 0 ||
      (o->count == 0 && o->duration_s <= 0)) {
    usage(stderr);
    return TOOL_EXIT_USAGE;
  }
  if (o->length > 1000) {
    fprintf(stderr, "emgload: --length: at most 1000 characters\n");
    return TOOL_EXIT_USAGE;
  }
  if (o->batch > 1 && (o->proto || o->http_kannel)) {
    fprintf(stderr, "emgload: --batch: only with --protocol http and the JSON API\n");
    return TOOL_EXIT_USAGE;
  }

  ld.loop = evloop_create(5);
  if (!ld.loop || tool_signals(ld.loop, on_signal, &ld) == -1) {
    fprintf(stderr, "emgload: cannot set up the event loop\n");
    return TOOL_EXIT_SETUP;
  }
  histogram_init(&ld.ack_us);
  histogram_init(&ld.receipt_ms);
  histogram_init(&ld.second_ack_us);
  if (o->latency_path && !(ld.latency_log = fopen(o->latency_path, "w"))) {
    fprintf(stderr, "emgload: --latency-log %s: %s\n", o->latency_path, strerror(errno));
    return TOOL_EXIT_SETUP;
  }
  ld.session_cfg = (struct session_config){
    .proto = o->proto,
    .role = SESSION_CLIENT,
    .connect = o->connect,
    .bind_mode = PROTO_BIND_TRX,
    .user = o->user ? o->user : "",
    .password = o->password ? o->password : "",
    .window = o->window,
    .response_timeout_ms = o->timeout_ms,
    .keepalive_ms = 30000,
    .reconnect_min_ms = 100,
    .reconnect_max_ms = 2000,
  };
  bool tls_failed;
  if (o->proto && !(ld.session_cfg.tls = tool_tls_ctx(&o->tls, false, "emgload", &tls_failed)) && tls_failed)
    return TOOL_EXIT_SETUP;
  if (!msg_slot(&ld, o->count ? o->count : 1) ||
      (o->dlr && o->count && id_map_reserve(&ld.ids, o->count) == -1)) {
    fprintf(stderr, "emgload: out of memory\n");
    return TOOL_EXIT_SETUP;
  }
  /* The clock starts once the tables are set up. */
  ld.start_ns = ld.last_status_ns = ld.last_progress_ns = ld.latency_second_ns = clock_now_ns();
  /* A burst of 10 ms worth keeps the rate smooth. */
  ratelimit_init(&ld.rate, o->rate, o->rate > 0 ? fmax(1, o->rate / 100) : 1, ld.start_ns);
  if (!o->proto) {
    if (http_setup(&ld) == -1)
      return TOOL_EXIT_SETUP;
    evloop_tick(ld.loop, on_tick, &ld);
    evloop_run(ld.loop);
    http_teardown(&ld);
    if (!o->quiet && tool_stderr_tty())
      fputc('\n', stderr);
    return report(&ld);
  }
  ld.conns = calloc(o->connections, sizeof *ld.conns);
  if (!ld.conns) {
    fprintf(stderr, "emgload: out of memory\n");
    return TOOL_EXIT_SETUP;
  }
  for (unsigned i = 0; i < o->connections; i++)
    ld.conns[i].ld = &ld;
  /* The first alone: the others once it has bound (start_others). */
  if (!(ld.conns[0].session = session_client_create(ld.loop, &ld.session_cfg, &load_handler, &ld.conns[0]))) {
    fprintf(stderr, "emgload: cannot create connection 1 to %s\n", o->connect);
    return TOOL_EXIT_SETUP;
  }
  ld.conns_started = 1;
  evloop_tick(ld.loop, on_tick, &ld);
  evloop_run(ld.loop);
  if (!o->quiet && tool_stderr_tty())
    fputc('\n', stderr);
  return report(&ld);
}
