/* emgsink.c - an SMSC that accepts every message and sends receipts, and
 * on request mobile-originated messages of its own (--mo).
 *
 * Speaks SMPP (binds of any mode) or UCP (op 60 logins, op 51 submits) on
 * one event loop, through the same connector runtime emgd uses. Each submit
 * gets a unique message id; where a receipt was asked for, it goes out after
 * a random delay, from one timer heap that holds every pending receipt.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "bigmem.h"
#include "clock.h"
#include "hexutil.h"
#include "netutil.h"
#include "session.h"
#include "sms_text.h"
#include "strutil.h"
#include "timerwheel.h"
#include "tool_util.h"
#include "scts.h"

struct sink_options {
  const struct proto_ops *proto;
  struct tool_tls tls;
  const char *listen;
  const char *user;               /* when set, binds must match */
  const char *password;
  uint64_t dlr_min_ms, dlr_max_ms;
  double fail_rate;
  double reject_rate;
  double undeliv_rate;
  double enroute_rate;            /* receipts that an ENROUTE one precedes, asked for or not */
  const char *record_path;
  const char *summary_path;
  const char *port_file;          /* where to write the port listened on (for --listen HOST:0) */
  uint64_t rebind_wait_ms;        /* how long a receipt waits for its account to bind again */
  uint64_t max_pending;           /* receipts held at once */
  unsigned window;                /* receipts outstanding per session */
  uint64_t mo_count;              /* MO messages to send */
  unsigned mo_parts;              /* each in this many concatenated parts; 1 = whole */
  double mo_rate;                 /* a second */
  const char *mo_from, *mo_to;
  bool quiet;
};

struct sink_counts {
  uint64_t submits, accepted, refused, rejected;
  uint64_t receipts_scheduled, receipts_sent, receipts_acked, receipts_nacked;
  uint64_t receipts_rerouted, receipts_waited, receipts_dropped, receipts_unwanted;
  uint64_t receipts_undeliv, receipts_enroute;
  uint64_t connections, binds, binds_refused;
  uint64_t mo_sent, mo_acked, mo_resent;
  uint64_t queries, cancels, replaces, about_refused;
};

struct sink;

/* One accepted connection. */
struct sink_conn {
  struct sink *sink;
  struct session *session;
  struct sink_conn *prev, *next;
  bool bound;
};

/* A receipt waiting for its time, or for a bind of its account; or an MO
 * (mo_seq > 0) waiting for a bound session. */
struct pending_receipt {
  struct timerwheel_node due;          /* first: the wheel hands back this */
  uint64_t mo_seq;
  unsigned mo_part;                    /* of a concatenated MO: its part number, from 1 */
  struct msg_receipt receipt;
  char user[MSG_USER_LEN];
  uint64_t first_due_ms;
  struct pending_receipt *next_free;   /* in the sink's free list */
};

/* Pending receipts come from blocks of one huge page and go back to a free
 * list: hundreds of thousands are held at once and one is taken and given
 * back for every message, which malloc did at a cost the sink felt, and
 * they are read in due order, not the order they were written, so with
 * 4 KiB pages most reads also missed the TLB. */
#define RECEIPT_BLOCK_BYTES ((size_t)2 << 20)

/* What the sink remembers of the last SINK_MEMORY messages it accepted, to
 * answer query_sm, cancel_sm and replace_sm as an SMSC would: the fate it
 * gave each (the state its receipt reports, and when). SMPP ids are
 * sequential, so the slot is the id modulo the size. */
#define SINK_MEMORY 65536
struct remembered {
  uint64_t id;                    /* 0 = empty */
  int64_t accepted_s;
  uint64_t due_ms;                /* when it reaches its final state */
  uint32_t delay_ms;
  uint8_t state;                  /* the final one */
  bool cancelled;
};

struct sink {
  struct sink_options opt;
  struct evloop *loop;
  struct session_config session_cfg;
  int listen_fd;
  struct sink_conn *conns;
  struct sink_conn *cursor;       /* where the receipt round robin goes on */
  struct timerwheel pending;
  struct pending_receipt *free_receipts;
  uint64_t next_id;               /* SMPP message ids */
  struct remembered *memory;      /* SMPP: SINK_MEMORY slots */
  struct scts_alloc *scts;        /* UCP, CIMD2: unique recipient:stamp ids */
  uint64_t rng;
  FILE *record;
  struct sink_counts n, last;     /* last: at the previous status line */
  uint64_t last_status_ms;
  unsigned sessions_alive;
  uint64_t mo_started_ms;         /* when the first session bound: MOs are paced from then */
  uint64_t mo_queued;
};

static const char *receipt_id_of(struct sink *sk, const struct msg *m, char *id, size_t cap)
{
  struct str_out o = str_out(id, cap);
  if (sk->scts) {
    char scts[13];
    scts_next(sk->scts, m->dst.addr, time(NULL), scts);
    str_puts(&o, m->dst.addr);
    str_put(&o, ":", 1);
    str_puts(&o, scts);
  } else {
    str_put_dec(&o, sk->next_id++, 1);
  }
  return id;
}

/* The memory of message id (SMPP's decimal text), or NULL. */
static struct remembered *remembered(struct sink *sk, const char *id)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(id, &end, 10);
  if (!sk->memory || !*id || *end || errno)
    return NULL;
  struct remembered *r = &sk->memory[v % SINK_MEMORY];
  return r->id == v ? r : NULL;
}

static struct pending_receipt *receipt_take(struct sink *sk)
{
  if (!sk->free_receipts) {
    struct pending_receipt *block = bigmem_alloc(RECEIPT_BLOCK_BYTES);
    if (!block)
      return NULL;
    for (size_t i = 0; i < RECEIPT_BLOCK_BYTES / sizeof *block; i++) {
      block[i].next_free = sk->free_receipts;
      sk->free_receipts = &block[i];
    }
  }
  struct pending_receipt *p = sk->free_receipts;
  sk->free_receipts = p->next_free;
  return p;
}

static void receipt_give_back(struct sink *sk, struct pending_receipt *p)
{
  p->next_free = sk->free_receipts;
  sk->free_receipts = p;
}

static void record_message(struct sink *sk, const struct msg *m)
{
  static char text[4 * 65536];
  if (!sk->record)
    return;
  static char udh[2 * 256 + 1];
  tool_payload_utf8(m, text, sizeof text);
  udh[hex_encode(udh, m->udh ? m->udh : (const uint8_t *)"", m->udh_len)] = 0;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  fprintf(sk->record, "%s\t%s\t%s\t%lld.%03ld\t%s\n", m->src.addr, m->dst.addr, text,
          (long long)tv.tv_sec, (long)(tv.tv_usec / 1000), udh);
}

/* Queues a receipt in `state` for message m (SMSC id `id`) due after delay_ms. */
static bool push_receipt(struct sink *sk, struct sink_conn *c, const struct msg *m, const char *id,
                         uint8_t state, uint64_t delay_ms)
{
  if (timerwheel_count(&sk->pending) >= sk->opt.max_pending) {
    sk->n.receipts_dropped++;
    return false;
  }
  struct pending_receipt *p = receipt_take(sk);
  if (!p) {
    sk->n.receipts_dropped++;
    return false;
  }
  memset(&p->receipt, 0, sizeof p->receipt);
  p->mo_seq = 0;
  str_copy(p->receipt.id, sizeof p->receipt.id, id);
  p->receipt.state = state;
  p->receipt.err = state == MSG_STATE_UNDELIVERABLE ? 1 : 0;
  p->receipt.submit_time = p->receipt.done_time = time(NULL);
  p->receipt.src = m->src;
  p->receipt.dst = m->dst;
  str_copy(p->user, sizeof p->user, session_user(c->session));
  p->first_due_ms = evloop_now_ms(sk->loop) + delay_ms;
  if (timerwheel_push(&sk->pending, &p->due, p->first_due_ms) == -1) {
    receipt_give_back(sk, p);
    sk->n.receipts_dropped++;
    return false;
  }
  sk->n.receipts_scheduled++;
  return true;
}

/* A message's fate: delivered (or, at --undeliv-rate, not) after a delay
 * within --dlr-delay; remembered (SMPP), and reported by a receipt when
 * one was asked for. */
static void decide_fate(struct sink *sk, struct sink_conn *c, const struct msg *m, const char *id)
{
  bool undeliv = sk->opt.undeliv_rate > 0 && tool_rand_unit(&sk->rng) < sk->opt.undeliv_rate;
  uint8_t state = undeliv ? MSG_STATE_UNDELIVERABLE : MSG_STATE_DELIVERED;
  uint64_t span = sk->opt.dlr_max_ms - sk->opt.dlr_min_ms;
  uint64_t delay = sk->opt.dlr_min_ms + (span ? tool_rand(&sk->rng) % (span + 1) : 0);
  if (sk->memory) {
    uint64_t v = sk->next_id - 1;   /* id, as receipt_id_of just gave it */
    sk->memory[v % SINK_MEMORY] = (struct remembered){ .id = v, .accepted_s = time(NULL),
                                                       .due_ms = evloop_now_ms(sk->loop) + delay,
                                                       .delay_ms = (uint32_t)delay, .state = state };
  }
  if (!m->dlr_mask)
    return;
  if (!msg_receipt_wanted(m->dlr_mask, state)) {
    sk->n.receipts_unwanted++;
    return;
  }
  /* Some SMSCs report ENROUTE first whatever was asked for: half way there. */
  if (sk->opt.enroute_rate > 0 && tool_rand_unit(&sk->rng) < sk->opt.enroute_rate &&
      push_receipt(sk, c, m, id, MSG_STATE_ENROUTE, delay / 2))
    sk->n.receipts_enroute++;
  if (push_receipt(sk, c, m, id, state, delay))
    sk->n.receipts_undeliv += undeliv;
}

/* query_sm, cancel_sm and replace_sm, answered from the memory: a message
 * before its final state can be cancelled (its receipt then says DELETED)
 * or replaced; after it, neither. */
static void about_message(struct sink *sk, const struct proto_pdu *req, struct proto_pdu *resp)
{
  struct remembered *r = remembered(sk, req->msgid);
  bool open = r && !r->cancelled && evloop_now_ms(sk->loop) < r->due_ms;
  resp->op = req->op == PROTO_OP_QUERY ? PROTO_OP_QUERY_RESP
             : req->op == PROTO_OP_CANCEL ? PROTO_OP_CANCEL_RESP : PROTO_OP_REPLACE_RESP;
  str_copy(resp->msgid, sizeof resp->msgid, req->msgid);
  resp->status = !r ? PROTO_E_NO_MESSAGE : open || req->op == PROTO_OP_QUERY ? PROTO_OK : PROTO_E_MESSAGE_STATE;
  if (resp->status != PROTO_OK) {
    sk->n.about_refused++;
    return;
  }
  switch (req->op) {
  case PROTO_OP_QUERY:
    sk->n.queries++;
    resp->receipt.state = r->cancelled ? MSG_STATE_DELETED : open ? MSG_STATE_ENROUTE : r->state;
    resp->receipt.err = resp->receipt.state == MSG_STATE_UNDELIVERABLE ? 1 : 0;
    if (!open)
      resp->receipt.done_time = r->accepted_s + r->delay_ms / 1000;
    break;
  case PROTO_OP_CANCEL:
    sk->n.cancels++;
    r->cancelled = true;
    break;
  default:
    sk->n.replaces++;
    break;
  }
}

static void on_request(struct session *s, const struct proto_pdu *req)
{
  struct sink_conn *c = session_app(s);
  struct sink *sk = c->sink;
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.ref = req->ref;
  resp.raw_status = req->raw_status;   /* UCP: the OT being answered */
  if (req->op == PROTO_OP_QUERY || req->op == PROTO_OP_CANCEL || req->op == PROTO_OP_REPLACE) {
    about_message(sk, req, &resp);
    session_respond(s, &resp);
    return;
  }
  if (req->op != PROTO_OP_SUBMIT) {
    /* An SMSC does not take deliveries from its clients. */
    resp.op = req->op == PROTO_OP_DELIVER ? PROTO_OP_DELIVER_RESP : PROTO_OP_NACK;
    resp.status = PROTO_E_UNSUPPORTED;
    session_respond(s, &resp);
    return;
  }
  sk->n.submits++;
  resp.op = PROTO_OP_SUBMIT_RESP;
  if (sk->opt.fail_rate > 0 && tool_rand_unit(&sk->rng) < sk->opt.fail_rate) {
    resp.status = PROTO_E_THROTTLED;
    sk->n.refused++;
    session_respond(s, &resp);
    return;
  }
  if (sk->opt.reject_rate > 0 && tool_rand_unit(&sk->rng) < sk->opt.reject_rate) {
    resp.status = PROTO_E_PERMANENT;
    sk->n.rejected++;
    session_respond(s, &resp);
    return;
  }
  receipt_id_of(sk, &req->msg, resp.msgid, sizeof resp.msgid);
  resp.status = PROTO_OK;
  if (session_respond(s, &resp) == 0) {
    sk->n.accepted++;
    record_message(sk, &req->msg);
    decide_fate(sk, c, &req->msg, resp.msgid);
  }
}

/* MO number seq: from --mo-from to --mo-to, the text "mo SEQ" (GSM
 * characters as they are in ASCII), in the caller's text; with --mo-parts,
 * part i of them with the text "mo SEQ/i " and a concatenation IE (the
 * 8-bit reference SEQ's low octet) in udh. */
static void mo_fill(struct sink *sk, const struct pending_receipt *p, struct msg *m, char *text, size_t cap,
                    uint8_t *udh, size_t udh_cap)
{
  msg_addr_set(&m->src, sk->opt.mo_from, strlen(sk->opt.mo_from), MSG_TON_INTERNATIONAL, 1);
  msg_addr_set(&m->dst, sk->opt.mo_to, strlen(sk->opt.mo_to), MSG_TON_UNKNOWN, 1);
  m->coding = SMS_TEXT_GSM7;
  m->data = (const uint8_t *)text;
  if (!p->mo_part) {
    m->data_len = (uint32_t)snprintf(text, cap, "mo %" PRIu64, p->mo_seq);
    return;
  }
  struct sms_text_concat c = { SMS_TEXT_REF8, (uint16_t)(p->mo_seq & 0xFF), (uint8_t)sk->opt.mo_parts,
                               (uint8_t)p->mo_part };
  int n = sms_text_udh_build(udh, udh_cap, &c, NULL, 0);
  m->udh = udh;
  m->udh_len = n > 0 ? (uint16_t)n : 0;
  m->data_len = (uint32_t)snprintf(text, cap, "mo %" PRIu64 "/%u ", p->mo_seq, p->mo_part);
}

/* Queues the MOs due by now at --mo-rate, counted from the first bind. */
static void mo_schedule(struct sink *sk, uint64_t now)
{
  if (sk->mo_queued >= sk->opt.mo_count || !sk->mo_started_ms)
    return;
  uint64_t due = (uint64_t)((double)(now - sk->mo_started_ms) * sk->opt.mo_rate / 1000.0) + 1;
  while (sk->mo_queued < sk->opt.mo_count && sk->mo_queued < due) {
    struct pending_receipt *p = receipt_take(sk);
    if (!p)
      return;
    memset(p, 0, sizeof *p);
    p->mo_seq = ++sk->mo_queued;
    p->first_due_ms = now;
    timerwheel_push(&sk->pending, &p->due, now);
    /* The further parts of a concatenated MO, 300 ms apart, as a handset's
     * parts come: a gateway holds some of them at any time. */
    for (unsigned part = 2; sk->opt.mo_parts > 1 && part <= sk->opt.mo_parts; part++) {
      struct pending_receipt *q = receipt_take(sk);
      if (!q)
        break;
      *q = *p;
      q->mo_part = part;
      timerwheel_push(&sk->pending, &q->due, now + 300 * (part - 1));
    }
    if (sk->opt.mo_parts > 1)
      p->mo_part = 1;
  }
}

/* A bound session of the account that can take a receipt now, round robin. */
static struct sink_conn *receipt_route(struct sink *sk, const char *user, bool *any_bound)
{
  *any_bound = false;
  struct sink_conn *start = sk->cursor ? sk->cursor : sk->conns;
  if (!start)
    return NULL;
  struct sink_conn *c = start;
  do {
    if (c->bound && (session_bind_mode(c->session) & PROTO_BIND_RX) &&
        (!user || strcmp(session_user(c->session), user) == 0)) {
      *any_bound = true;
      if (session_can_send(c->session)) {
        sk->cursor = c->next ? c->next : sk->conns;
        return c;
      }
    }
    c = c->next ? c->next : sk->conns;
  } while (c != start);
  return NULL;
}

/* Sends what is due; stops at the first receipt whose account has binds but no room. */
static void dispatch_receipts(struct sink *sk)
{
  uint64_t now = evloop_now_ms(sk->loop);
  struct timerwheel_node *due;
  /* Peek by popping; a receipt that cannot go yet is pushed back. */
  while ((due = timerwheel_pop_due(&sk->pending, now))) {
    struct pending_receipt *p = (struct pending_receipt *)due;
    bool any_bound;
    struct sink_conn *c = receipt_route(sk, p->mo_seq ? NULL : p->user, &any_bound);
    if (!c) {
      if (!p->mo_seq && !any_bound && now - p->first_due_ms > sk->opt.rebind_wait_ms) {
        sk->n.receipts_dropped++;
        receipt_give_back(sk, p);
        continue;
      }
      if (!any_bound)
        sk->n.receipts_waited++;
      /* Wait for a bind (or for room) a little, then try again. */
      timerwheel_push(&sk->pending, &p->due, now + (any_bound ? 1 : 100));
      if (any_bound)
        return;
      continue;
    }
    struct proto_pdu req;
    memset(&req, 0, sizeof req);
    req.op = PROTO_OP_DELIVER;
    char text[32];
    uint8_t udh[16];
    if (p->mo_seq) {
      mo_fill(sk, p, &req.msg, text, sizeof text, udh, sizeof udh);
    } else {
      req.is_receipt = true;
      req.receipt = p->receipt;
      struct remembered *r = sk->n.cancels ? remembered(sk, p->receipt.id) : NULL;
      if (r && r->cancelled && msg_state_final(req.receipt.state))
        req.receipt.state = MSG_STATE_DELETED;
    }
    if (session_request(c->session, &req, p) == -1) {
      timerwheel_push(&sk->pending, &p->due, now + 1);
      return;
    }
    if (p->mo_seq)
      sk->n.mo_sent++;
    else
      sk->n.receipts_sent++;
  }
}

static void on_response(struct session *s, void *cookie, const struct proto_pdu *resp)
{
  struct sink_conn *c = session_app(s);
  struct pending_receipt *p = cookie;
  if (resp->status == PROTO_OK) {
    if (p->mo_seq)
      c->sink->n.mo_acked++;
    else
      c->sink->n.receipts_acked++;
    receipt_give_back(c->sink, p);
    return;
  }
  /* Refused for now: try again later, possibly through another bind. */
  if (p->mo_seq)
    c->sink->n.mo_resent++;
  else
    c->sink->n.receipts_nacked++;
  timerwheel_push(&c->sink->pending, &p->due, evloop_now_ms(c->sink->loop) + 1000);
}

static void on_unanswered(struct session *s, void *cookie, enum session_loss why)
{
  struct sink_conn *c = session_app(s);
  struct pending_receipt *p = cookie;
  if (p->mo_seq)
    c->sink->n.mo_resent++;   /* it may have arrived: the gateway sees it twice */
  else
    c->sink->n.receipts_rerouted++;
  timerwheel_push(&c->sink->pending, &p->due, evloop_now_ms(c->sink->loop));
}

static enum proto_status on_bind(struct session *s, const struct proto_pdu *bind)
{
  struct sink_conn *c = session_app(s);
  struct sink *sk = c->sink;
  if (sk->opt.user && (strcmp(bind->user, sk->opt.user) != 0 ||
                       strcmp(bind->password, sk->opt.password ? sk->opt.password : "") != 0)) {
    sk->n.binds_refused++;
    return PROTO_E_AUTH;
  }
  return PROTO_OK;
}

static void on_bound(struct session *s)
{
  struct sink_conn *c = session_app(s);
  c->bound = true;
  c->sink->n.binds++;
  if (!c->sink->mo_started_ms)
    c->sink->mo_started_ms = evloop_now_ms(c->sink->loop);
}

static void on_ready(struct session *s)
{
  struct sink_conn *c = session_app(s);
  dispatch_receipts(c->sink);
}

/* Freed after the iteration: the runtime may still report this session's
 * unanswered receipts to us in it. */
static void free_conn(struct evloop *loop, void *arg)
{
  free(arg);
}

static void on_disconnect(struct session *s, const char *reason)
{
  struct sink_conn *c = session_app(s);
  struct sink *sk = c->sink;
  if (sk->cursor == c)
    sk->cursor = c->next;
  if (c->prev)
    c->prev->next = c->next;
  else
    sk->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->bound = false;
  sk->sessions_alive--;
  session_destroy(s);
  evloop_defer(sk->loop, free_conn, c);
}

static const struct session_handler sink_handler = {
  .on_bind = on_bind,
  .on_bound = on_bound,
  .on_request = on_request,
  .on_response = on_response,
  .on_unanswered = on_unanswered,
  .on_ready = on_ready,
  .on_disconnect = on_disconnect,
};

static void on_accept(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct sink *sk = arg;
  char peer[64];
  int cfd;
  while ((cfd = net_accept(fd, peer, sizeof peer)) != -1) {
    struct sink_conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(cfd);
      continue;
    }
    c->sink = sk;
    c->session = session_server_create(loop, cfd, peer, &sk->session_cfg, &sink_handler, c);
    if (!c->session) {
      free(c);
      continue;
    }
    c->next = sk->conns;
    if (sk->conns)
      sk->conns->prev = c;
    sk->conns = c;
    sk->n.connections++;
    sk->sessions_alive++;
  }
}

static void print_status(struct sink *sk, uint64_t now)
{
  double secs = (double)(now - sk->last_status_ms) / 1000.0;
  if (secs <= 0)
    secs = 1;
  fprintf(stderr,
          "%semgsink: %" PRIu64 " submits (%.0f/s), %" PRIu64 " accepted, %" PRIu64
          " refused; receipts %" PRIu64 " sent (%.0f/s), %" PRIu64 " acked, %zu pending; %u sessions%s",
          tool_stderr_tty() ? "\r" : "", sk->n.submits,
          (double)(sk->n.submits - sk->last.submits) / secs, sk->n.accepted, sk->n.refused,
          sk->n.receipts_sent, (double)(sk->n.receipts_sent - sk->last.receipts_sent) / secs,
          sk->n.receipts_acked, timerwheel_count(&sk->pending), sk->sessions_alive,
          tool_stderr_tty() ? "   " : "\n");
  sk->last = sk->n;
  sk->last_status_ms = now;
}

static void on_tick(struct evloop *loop, void *arg)
{
  struct sink *sk = arg;
  mo_schedule(sk, evloop_now_ms(loop));
  dispatch_receipts(sk);
  /* Written in large blocks, but never more than a tick behind: a test may
   * read the record while the sink runs. */
  if (sk->record)
    fflush(sk->record);
  uint64_t now = evloop_now_ms(loop);
  if (!sk->opt.quiet && now - sk->last_status_ms >= 1000)
    print_status(sk, now);
}

static int write_summary(struct sink *sk)
{
  json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                        " s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                        "protocol", sk->opt.proto->name,
                        "submits", (json_int_t)sk->n.submits,
                        "accepted", (json_int_t)sk->n.accepted,
                        "refused", (json_int_t)sk->n.refused,
                        "rejected", (json_int_t)sk->n.rejected,
                        "receipts_scheduled", (json_int_t)sk->n.receipts_scheduled,
                        "receipts_undeliverable", (json_int_t)sk->n.receipts_undeliv,
                        "receipts_enroute", (json_int_t)sk->n.receipts_enroute,
                        "receipts_sent", (json_int_t)sk->n.receipts_sent,
                        "receipts_acked", (json_int_t)sk->n.receipts_acked,
                        "receipts_nacked", (json_int_t)sk->n.receipts_nacked,
                        "receipts_rerouted", (json_int_t)sk->n.receipts_rerouted,
                        "receipts_waited_for_bind", (json_int_t)sk->n.receipts_waited,
                        "receipts_dropped", (json_int_t)sk->n.receipts_dropped,
                        "receipts_pending", (json_int_t)timerwheel_count(&sk->pending),
                        "connections", (json_int_t)sk->n.connections,
                        "binds", (json_int_t)sk->n.binds,
                        "binds_refused", (json_int_t)sk->n.binds_refused,
                        "receipts_not_requested", (json_int_t)sk->n.receipts_unwanted,
                        "mo_sent", (json_int_t)sk->n.mo_sent, "mo_acked", (json_int_t)sk->n.mo_acked,
                        "mo_resent", (json_int_t)sk->n.mo_resent, "queries", (json_int_t)sk->n.queries,
                        "cancels", (json_int_t)sk->n.cancels, "replaces", (json_int_t)sk->n.replaces,
                        "about_refused", (json_int_t)sk->n.about_refused);
  if (!j)
    return -1;
  int rc = json_dump_file(j, sk->opt.summary_path, JSON_INDENT(2));
  json_decref(j);
  if (rc != 0)
    fprintf(stderr, "emgsink: cannot write summary %s\n", sk->opt.summary_path);
  return rc;
}

static void on_signal(int signo, void *arg)
{
  struct sink *sk = arg;
  if (signo == SIGHUP)
    return;
  evloop_stop(sk->loop);
}

static void usage(FILE *out)
{
  fprintf(out,
          "usage: emgsink --protocol smpp|ucp|cimd2 --listen HOST:PORT [options]\n"
          "  --user U --password P   accept only binds/logins with these credentials\n"
          "  --dlr-delay MIN-MAX     receipt delay in ms (default 0-1000)\n"
          "  --fail-rate F           answer this fraction of submits with a temporary error\n"
          "  --reject-rate F         answer this fraction of submits with a permanent error\n"
          "  --undeliv-rate F        make this fraction of receipts UNDELIV\n"
          "  --enroute-rate F        send an ENROUTE receipt before the final one for this fraction,\n"
          "                          asked for or not (as some SMSCs do)\n"
          "  --record FILE           one line per accepted message: source, destination, text\n"
          "                          (UTF-8; 8-bit data in hex), time, UDH in hex\n"
          "  --summary FILE          JSON counts written on SIGTERM/SIGINT\n"
          "  --port-file FILE        write the port listened on (useful with port 0)\n"
          "  --window N              receipts outstanding per session (default 100)\n"
          "  --rebind-wait MS        how long a receipt waits for its account to bind (default 60000)\n"
          "  --max-pending N         receipts held at once (default 5000000)\n"
          "  --mo N                  send N mobile-originated messages (\"mo 1\", \"mo 2\", ...) to bound\n"
          "                          receiver sessions, from the first bind on; each until it is acked\n"
          "  --mo-rate MPS           MOs a second (default 100)\n"
          "  --mo-parts K            each MO in K concatenated parts, 300 ms apart (\"mo N/1 \", ...; default 1)\n"
          "  --mo-from ADDR --mo-to ADDR  their sender (default 4915550000) and recipient (default 1234)\n"
          "  --tls --cert FILE [--key FILE]  over TLS, with this certificate\n"
          "  --ca FILE               with --tls: require client certificates from these CAs\n"
          "  --quiet                 no status line\n"
          "  --version               print the version and exit\n"
          "  -h, --help              print this and exit\n");
}

int main(int argc, char **argv)
{
  static struct sink sk;
  static const struct option longopts[] = {
    { "protocol", required_argument, 0, 'p' }, { "listen", required_argument, 0, 'l' },
    { "user", required_argument, 0, 'u' },     { "password", required_argument, 0, 'P' },
    { "dlr-delay", required_argument, 0, 'd' }, { "fail-rate", required_argument, 0, 'f' },
    { "undeliv-rate", required_argument, 0, 'U' }, { "enroute-rate", required_argument, 0, 'E' }, { "record", required_argument, 0, 'r' },
    { "summary", required_argument, 0, 's' },  { "window", required_argument, 0, 'w' },
    { "rebind-wait", required_argument, 0, 'R' }, { "max-pending", required_argument, 0, 'm' },
    { "quiet", no_argument, 0, 'q' },          { "version", no_argument, 0, 'v' }, { "help", no_argument, 0, 'h' },
    { "port-file", required_argument, 0, 'F' }, { "reject-rate", required_argument, 0, 'j' },
    { "mo", required_argument, 0, 'M' },       { "mo-rate", required_argument, 0, 'O' },
    { "mo-parts", required_argument, 0, 'K' },
    { "mo-from", required_argument, 0, 'A' },  { "mo-to", required_argument, 0, 'B' },
    TOOL_TLS_LONGOPTS, { 0, 0, 0, 0 }
  };
  struct sink_options *o = &sk.opt;
  uint64_t v;
  o->dlr_max_ms = 1000;
  o->rebind_wait_ms = 60000;
  o->max_pending = 5000000;
  o->window = 100;
  o->mo_rate = 100;
  o->mo_parts = 1;
  o->mo_from = "4915550000";
  o->mo_to = "1234";
  int ch;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (tool_tls_option(&o->tls, ch, optarg))
      continue;
    switch (ch) {
    case 'p':
      if (!(o->proto = proto_find(optarg))) {
        fprintf(stderr, "emgsink: --protocol: unknown protocol '%s' (smpp, ucp or cimd2)\n", optarg);
        return TOOL_EXIT_USAGE;
      }
      break;
    case 'l': o->listen = optarg; break;
    case 'u': o->user = optarg; break;
    case 'P': o->password = optarg; break;
    case 'd':
      if (tool_parse_range(optarg, &o->dlr_min_ms, &o->dlr_max_ms) == -1) {
        fprintf(stderr, "emgsink: --dlr-delay: expected MIN-MAX in ms, got '%s'\n", optarg);
        return TOOL_EXIT_USAGE;
      }
      break;
    case 'f':
    case 'j':
    case 'U':
    case 'E':
      if (tool_parse_fraction(optarg, ch == 'f' ? &o->fail_rate
                                      : ch == 'j' ? &o->reject_rate
                                      : ch == 'E' ? &o->enroute_rate : &o->undeliv_rate) == -1) {
        fprintf(stderr, "emgsink: --%s: expected a fraction 0..1, got '%s'\n",
                ch == 'f' ? "fail-rate" : ch == 'j' ? "reject-rate" : ch == 'E' ? "enroute-rate" : "undeliv-rate",
                optarg);
        return TOOL_EXIT_USAGE;
      }
      break;
    case 'O':
      if (tool_parse_count(optarg, &v) == -1 || v == 0) {
        fprintf(stderr, "emgsink: --mo-rate: expected messages a second, got '%s'\n", optarg);
        return TOOL_EXIT_USAGE;
      }
      o->mo_rate = (double)v;
      break;
    case 'K':
      if (tool_parse_count(optarg, &v) == -1 || v == 0 || v > 255) {
        fprintf(stderr, "emgsink: --mo-parts: expected 1..255 parts, got '%s'\n", optarg);
        return TOOL_EXIT_USAGE;
      }
      o->mo_parts = (unsigned)v;
      break;
    case 'A': o->mo_from = optarg; break;
    case 'B': o->mo_to = optarg; break;
    case 'r': o->record_path = optarg; break;
    case 's': o->summary_path = optarg; break;
    case 'F': o->port_file = optarg; break;
    case 'w':
    case 'R':
    case 'm':
    case 'M':
      if (tool_parse_count(optarg, &v) == -1) {
        fprintf(stderr, "emgsink: bad number '%s'\n", optarg);
        return TOOL_EXIT_USAGE;
      }
      if (ch == 'w')
        o->window = (unsigned)v;
      else if (ch == 'R')
        o->rebind_wait_ms = v;
      else if (ch == 'M')
        o->mo_count = v;
      else
        o->max_pending = v;
      break;
    case 'q': o->quiet = true; break;
    case 'h': usage(stdout); return TOOL_EXIT_OK;
    case 'v': printf("emgsink %s\n", EMG_VERSION); return TOOL_EXIT_OK;
    default: usage(stderr); return TOOL_EXIT_USAGE;
    }
  }
  if (!o->proto || !o->listen || optind < argc) {
    usage(stderr);
    return TOOL_EXIT_USAGE;
  }

  char err[NETUTIL_ERR_LEN];
  sk.listen_fd = net_listen(o->listen, err, sizeof err);
  if (sk.listen_fd == -1) {
    fprintf(stderr, "emgsink: %s\n", err);
    return TOOL_EXIT_SETUP;
  }
  if (o->port_file) {
    FILE *pf = fopen(o->port_file, "w");
    if (!pf || fprintf(pf, "%d\n", net_local_port(sk.listen_fd)) < 0 || fclose(pf) != 0) {
      perror(o->port_file);
      return TOOL_EXIT_SETUP;
    }
  }
  if (o->record_path) {
    sk.record = fopen(o->record_path, "w");
    if (!sk.record) {
      perror(o->record_path);
      return TOOL_EXIT_SETUP;
    }
    setvbuf(sk.record, NULL, _IOFBF, 1 << 20);
  }
  sk.loop = evloop_create(10);
  if (!sk.loop || tool_signals(sk.loop, on_signal, &sk) == -1) {
    fprintf(stderr, "emgsink: cannot set up the event loop\n");
    return TOOL_EXIT_SETUP;
  }
  sk.session_cfg = (struct session_config){
    .proto = o->proto,
    .role = SESSION_SERVER,
    .window = o->window,
    .response_timeout_ms = 30000,
    .keepalive_ms = 60000,
    .bind_timeout_ms = 30000,
  };
  bool tls_failed;
  if (!(sk.session_cfg.tls = tool_tls_ctx(&o->tls, true, "emgsink", &tls_failed)) && tls_failed)
    return TOOL_EXIT_SETUP;
  /* Slots for 16 s ahead: receipts due later wait in the wheel's heap. */
  if (timerwheel_init(&sk.pending, 14, evloop_now_ms(sk.loop)) == -1) {
    fprintf(stderr, "emgsink: out of memory\n");
    return TOOL_EXIT_SETUP;
  }
  sk.rng = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
  /* Ids unique across restarts: the start time in the high digits. */
  sk.next_id = (uint64_t)time(NULL) * 1000000ull;
  if (strcmp(o->proto->name, "smpp") == 0 && !(sk.memory = calloc(SINK_MEMORY, sizeof *sk.memory))) {
    fprintf(stderr, "emgsink: out of memory\n");
    return TOOL_EXIT_SETUP;
  }
  if (o->proto->msgid_scts && !(sk.scts = scts_alloc_create(1 << 20, o->proto->msgid_scts))) {
    fprintf(stderr, "emgsink: out of memory\n");
    return TOOL_EXIT_SETUP;
  }
  evloop_add(sk.loop, sk.listen_fd, EVLOOP_READ, on_accept, &sk);
  evloop_tick(sk.loop, on_tick, &sk);
  sk.last_status_ms = evloop_now_ms(sk.loop);
  if (!o->quiet)
    fprintf(stderr, "emgsink: %s on %s\n", o->proto->name, o->listen);

  evloop_run(sk.loop);

  if (!o->quiet) {
    print_status(&sk, evloop_now_ms(sk.loop) + 1);
    if (tool_stderr_tty())
      fputc('\n', stderr);
  }
  if (sk.record)
    fclose(sk.record);
  int rc = o->summary_path && write_summary(&sk) != 0 ? TOOL_EXIT_SETUP : TOOL_EXIT_OK;
  free(sk.memory);
  return rc;
}
