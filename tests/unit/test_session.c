/* test_session.c - the connector runtime over loopback TCP with the real
 * SMPP and UCP adapters: binds, refusals and back-off, the window, time-outs,
 * lost connections and reconnects, keep-alives, the rate limit, stop and
 * unbind, the answers the runtime gives by itself (before bind, second
 * bind, unsupported and unreadable input), and the same over TLS: handed
 * over at a gate, writes batched into records, plain text and silence at a
 * TLS port.
 *
 * Client and server sessions share one loop in this thread. Where a test
 * needs a peer that misbehaves, a "raw" peer speaks the protocol through the
 * adapter directly. Every run of the loop is bounded (run_until).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "clock.h"
#include "evloop.h"
#include "iobuf.h"
#include "netutil.h"
#include "session.h"
#include "testutil.h"
#include "tls_certs.h"

#define TICK_MS 5
#define MAX_HELD 64
#define MAX_SEEN 64
#define PASSWORD "secret"

static const struct proto_options defaults;

struct fixture;

/* The application on one side: what it saw, and how it behaves. */
struct side {
  struct fixture *f;
  struct session *s;
  bool hold;                       /* server: keep requests to answer later */
  bool refill;                     /* client: send until refused, again on_ready */
  bool destroy_on_response;
  unsigned hold_input_ms;          /* server: hold the input after the first request */
  uint64_t request_at_ms[MAX_SEEN];
  int binds, bound, requests, responses, readies, disconnects, sent;
  int unanswered[2];               /* by enum session_loss */
  uint64_t bound_at_ms;
  char reason[NETUTIL_ERR_LEN];
  char bound_password[MSG_USER_LEN];
  struct proto_pdu held[MAX_HELD]; /* requests kept by a holding server */
  int held_count;
  int cookies[MAX_SEEN];           /* responses in arrival order */
  char msgids[MAX_SEEN][MSG_ID_LEN];
  enum proto_status statuses[MAX_SEEN];
};

/* A peer that speaks through the adapter, without the runtime. */
struct raw {
  int fd;
  bool answer_bind;                /* as a server: accept any bind, ignore the rest */
  bool eof;
  int accepts;
  struct iobuf in;
  uint8_t *scratch;
  int count;                       /* PDUs received */
  struct proto_pdu pdus[MAX_SEEN];
};

struct fixture {
  struct evloop *loop;
  const struct proto_ops *proto;
  int listen_fd;
  char addr[64];
  bool raw_server;                 /* accepted connections go to raw, not a session */
  bool gate;                       /* accepted connections bind at a gate that hands them over */
  int handed;                      /* connections the gate handed over */
  struct session_config client_cfg;
  struct session_config server_cfg;
  struct side client;
  struct side server;
  struct raw raw;
  bool (*cond)(struct fixture *f);
  uint64_t deadline_ms;
};

/* ---- the application's handler, one for both sides ---- */

static enum proto_status app_on_bind(struct session *s, const struct proto_pdu *bind)
{
  struct side *d = session_app(s);
  d->binds++;
  snprintf(d->bound_password, sizeof d->bound_password, "%s", bind->password);
  return strcmp(bind->password, PASSWORD) == 0 ? PROTO_OK : PROTO_E_AUTH;
}

static void app_on_bound(struct session *s)
{
  struct side *d = session_app(s);
  d->bound++;
  d->bound_at_ms = clock_now_ms();
}

static void answer_request(struct session *s, const struct proto_pdu *req)
{
  struct proto_pdu resp = { .op = req->op == PROTO_OP_SUBMIT  ? PROTO_OP_SUBMIT_RESP
                                 : req->op == PROTO_OP_QUERY ? PROTO_OP_QUERY_RESP
                                                             : PROTO_OP_DELIVER_RESP,
                            .ref = req->ref, .raw_status = req->raw_status };
  /* The destination is the id: the client can tell which request this answers. */
  snprintf(resp.msgid, sizeof resp.msgid, "%s", req->msg.dst.addr);
  CU_ASSERT_EQUAL(session_respond(s, &resp), 0);
}

static void app_on_request(struct session *s, const struct proto_pdu *req)
{
  struct side *d = session_app(s);
  if (d->requests < MAX_SEEN)
    d->request_at_ms[d->requests] = clock_now_ms();
  d->requests++;
  if (d->hold_input_ms && d->requests == 1)
    session_hold_input(s, d->hold_input_ms);
  if (d->hold && d->held_count < MAX_HELD)
    d->held[d->held_count++] = *req;
  else
    answer_request(s, req);
}

static void app_on_response(struct session *s, void *cookie, const struct proto_pdu *resp)
{
  struct side *d = session_app(s);
  if (d->responses < MAX_SEEN) {
    d->cookies[d->responses] = (int)(intptr_t)cookie;
    snprintf(d->msgids[d->responses], MSG_ID_LEN, "%s", resp->msgid);
    d->statuses[d->responses] = resp->status;
  }
  d->responses++;
  if (d->destroy_on_response) {
    session_destroy(s);
    d->s = NULL;
  }
}

static void app_on_unanswered(struct session *s, void *cookie, enum session_loss why)
{
  struct side *d = session_app(s);
  d->unanswered[why]++;
}

/* A submit of "hi" to 4900<index>: the destination tells the answers apart. */
static void submit_fill(struct proto_pdu *req, int index)
{
  static const uint8_t text[] = { 'h', 'i' };
  req->op = PROTO_OP_SUBMIT;
  snprintf(req->msg.src.addr, sizeof req->msg.src.addr, "4911");
  snprintf(req->msg.dst.addr, sizeof req->msg.dst.addr, "4900%d", index);
  req->msg.src.ton = req->msg.dst.ton = MSG_TON_INTERNATIONAL;
  req->msg.src.npi = req->msg.dst.npi = 1;
  req->msg.data = text;
  req->msg.data_len = sizeof text;
}

static int submit(struct side *d, int index)
{
  struct proto_pdu req = { 0 };
  submit_fill(&req, index);
  int rc = session_request(d->s, &req, (void *)(intptr_t)index);
  if (rc == 0)
    d->sent++;
  return rc;
}

static void app_on_ready(struct session *s)
{
  struct side *d = session_app(s);
  d->readies++;
  while (d->refill && submit(d, d->sent) == 0)
    ;
}

static void app_on_disconnect(struct session *s, const char *reason)
{
  struct side *d = session_app(s);
  d->disconnects++;
  snprintf(d->reason, sizeof d->reason, "%s", reason);
  /* A server session lives for one connection. */
  if (d == &d->f->server) {
    session_destroy(s);
    d->s = NULL;
  }
}

static const struct session_handler handler = {
  .on_bind = app_on_bind,
  .on_bound = app_on_bound,
  .on_request = app_on_request,
  .on_response = app_on_response,
  .on_unanswered = app_on_unanswered,
  .on_ready = app_on_ready,
  .on_disconnect = app_on_disconnect,
};

/* ---- the raw peer ---- */

static void raw_send(struct fixture *f, const struct proto_pdu *pdu)
{
  struct iobuf out;
  iobuf_init(&out);
  CU_ASSERT_FATAL(f->proto->encode(pdu, &out, &defaults) > 0);
  size_t len = iobuf_len(&out);
  CU_ASSERT_EQUAL(iobuf_write_fd(&out, f->raw.fd), (ssize_t)len);
  iobuf_destroy(&out);
}

static void raw_readable(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct fixture *f = arg;
  struct raw *r = &f->raw;
  ssize_t n = iobuf_read_fd(&r->in, fd, 65536);
  if (n < 0 && errno == EAGAIN)
    return;
  if (n <= 0) {
    r->eof = true;
    evloop_remove(loop, fd);
    return;
  }
  for (;;) {
    size_t skip = 0;
    int len = f->proto->split(iobuf_head(&r->in), iobuf_len(&r->in), &defaults, &skip);
    if (len <= 0)
      break;
    struct proto_pdu *p = &r->pdus[r->count < MAX_SEEN ? r->count : MAX_SEEN - 1];
    f->proto->decode(p, iobuf_head(&r->in), (size_t)len, r->scratch, &defaults);
    iobuf_consume(&r->in, (size_t)len);
    r->count++;
    if (r->answer_bind && p->op == PROTO_OP_BIND) {
      struct proto_pdu resp = { .op = PROTO_OP_BIND_RESP, .ref = p->ref,
                                .bind_mode = p->bind_mode, .raw_status = p->raw_status };
      raw_send(f, &resp);
    }
  }
}

static void raw_attach(struct fixture *f, int fd)
{
  f->raw.fd = fd;
  f->raw.eof = false;
  CU_ASSERT_EQUAL(evloop_add(f->loop, fd, EVLOOP_READ, raw_readable, f), 0);
}

static void raw_connect(struct fixture *f)
{
  char err[NETUTIL_ERR_LEN];
  int fd = net_connect(f->addr, 1000, err, sizeof err);
  CU_ASSERT_FATAL(fd >= 0);
  raw_attach(f, fd);
}

static void raw_send_bytes(struct fixture *f, const void *bytes, size_t len)
{
  CU_ASSERT_EQUAL(write(f->raw.fd, bytes, len), (ssize_t)len);
}

/* A gate (an emgd listener) takes the bind, then hands the connection to
 * the server side's own session, which handles the bind and what follows. */
static enum proto_status gate_on_bind(struct session *s, const struct proto_pdu *bind)
{
  struct fixture *f = session_app(s);
  int fd;
  struct tls_conn *tls;
  uint8_t *input;
  size_t len;
  (void)bind;
  char peer[64];
  snprintf(peer, sizeof peer, "%s", session_peer(s));
  CU_ASSERT_FATAL(session_hand_over(s, &fd, &tls, &input, &len) == 0);
  f->handed++;
  f->server.s = session_server_adopt(f->loop, fd, tls, peer, &f->server_cfg, &handler, &f->server, input, len);
  CU_ASSERT_PTR_NOT_NULL(f->server.s);
  CU_ASSERT_EQUAL(f->server.binds, 0);   /* handled later in the iteration, not inside the adopt */
  free(input);
  return PROTO_OK;
}

static const struct session_handler gate_handler = { .on_bind = gate_on_bind };

/* ---- fixture ---- */

static void on_accept(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct fixture *f = arg;
  char peer[64];
  int conn = net_accept(fd, peer, sizeof peer);
  if (conn < 0)
    return;
  if (f->raw_server) {
    f->raw.accepts++;
    if (f->raw.fd >= 0) {
      evloop_remove(loop, f->raw.fd);
      close(f->raw.fd);
    }
    raw_attach(f, conn);
    return;
  }
  CU_ASSERT_PTR_NULL(f->server.s); /* one connection at a time in these tests */
  if (f->gate) {
    CU_ASSERT_PTR_NOT_NULL(session_server_create(loop, conn, peer, &f->server_cfg, &gate_handler, f));
    return;
  }
  f->server.s = session_server_create(loop, conn, peer, &f->server_cfg, &handler, &f->server);
  CU_ASSERT_PTR_NOT_NULL(f->server.s);
}

static struct fixture *fixture_create(const struct proto_ops *proto)
{
  char err[NETUTIL_ERR_LEN];
  struct fixture *f = calloc(1, sizeof *f);
  signal(SIGPIPE, SIG_IGN);
  f->loop = evloop_create(TICK_MS);
  f->proto = proto;
  f->client.f = f->server.f = f;
  f->raw.fd = -1;
  f->raw.scratch = malloc(PROTO_SCRATCH_LEN);
  iobuf_init(&f->raw.in);
  f->listen_fd = net_listen("127.0.0.1:0", err, sizeof err);
  snprintf(f->addr, sizeof f->addr, "127.0.0.1:%d", net_local_port(f->listen_fd));
  evloop_add(f->loop, f->listen_fd, EVLOOP_READ, on_accept, f);
  f->client_cfg = (struct session_config){
    .proto = proto, .role = SESSION_CLIENT, .connect = f->addr, .bind_mode = PROTO_BIND_TRX,
    .user = "load", .password = PASSWORD, .window = 10, .response_timeout_ms = 1000,
    .keepalive_ms = 5000, .bind_timeout_ms = 500, .reconnect_min_ms = 20,
    .reconnect_max_ms = 200,
  };
  f->server_cfg = (struct session_config){
    .proto = proto, .role = SESSION_SERVER, .window = 10, .response_timeout_ms = 1000,
    .keepalive_ms = 5000, .bind_timeout_ms = 500,
  };
  return f;
}

static void start_client(struct fixture *f)
{
  f->client.s = session_client_create(f->loop, &f->client_cfg, &handler, &f->client);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f->client.s);
}

static void fixture_destroy(struct fixture *f)
{
  session_destroy(f->client.s);
  session_destroy(f->server.s);
  if (f->raw.fd >= 0) {
    evloop_remove(f->loop, f->raw.fd);
    close(f->raw.fd);
  }
  if (f->listen_fd >= 0) {
    evloop_remove(f->loop, f->listen_fd);
    close(f->listen_fd);
  }
  evloop_destroy(f->loop); /* runs the sessions' deferred frees */
  iobuf_destroy(&f->raw.in);
  free(f->raw.scratch);
  free(f);
}

static void check_tick(struct evloop *loop, void *arg)
{
  struct fixture *f = arg;
  if ((f->cond && f->cond(f)) || clock_now_ms() >= f->deadline_ms)
    evloop_stop(loop);
}

/* A condition waited for returns as soon as it holds: its max_ms is a hang
 * guard, which a slow machine (sanitizers, a busy CI host) must not reach,
 * so it is at least this. */
#define COND_GUARD_MS 10000

/* Runs the loop until cond holds (checked every tick) or max_ms pass (for a
 * cond, COND_GUARD_MS at least); cond NULL runs the full max_ms. Returns
 * whether cond holds. */
static bool run_until(struct fixture *f, bool (*cond)(struct fixture *f), unsigned max_ms)
{
  f->cond = cond;
  f->deadline_ms = clock_now_ms() + (cond && max_ms < COND_GUARD_MS ? COND_GUARD_MS : max_ms);
  evloop_tick(f->loop, check_tick, f);
  CU_ASSERT_EQUAL(evloop_run(f->loop), 0);
  evloop_untick(f->loop, check_tick, f);
  return cond ? cond(f) : true;
}

static bool client_bound(struct fixture *f)
{
  return f->client.bound >= 1;
}

static bool server_bound(struct fixture *f)
{
  return f->server.bound >= 1;
}

static bool both_bound(struct fixture *f)
{
  return f->client.bound >= 1 && f->server.bound >= 1;
}

static bool client_disconnected(struct fixture *f)
{
  return f->client.disconnects >= 1;
}

static bool server_disconnected(struct fixture *f)
{
  return f->server.disconnects >= 1;
}

static bool server_holds_all(struct fixture *f)
{
  return f->server.held_count > 0 && f->server.held_count == f->client.sent;
}

static bool client_has_all_responses(struct fixture *f)
{
  return f->client.responses == f->client.sent;
}

static bool raw_eof(struct fixture *f)
{
  return f->raw.eof;
}

/* The server answers what it holds, last first. */
static void answer_held_reversed(struct side *d)
{
  while (d->held_count > 0)
    answer_request(d->s, &d->held[--d->held_count]);
}

/* A fixture with the client bound to a session server. */
static struct fixture *bound_pair(const struct proto_ops *proto, unsigned window)
{
  struct fixture *f = fixture_create(proto);
  f->client_cfg.window = window;
  start_client(f);
  CU_ASSERT(run_until(f, both_bound, 1000));
  return f;
}

/* ---- tests ---- */

static void bind_ok(const struct proto_ops *proto)
{
  struct fixture *f = bound_pair(proto, 10);
  CU_ASSERT_EQUAL(f->server.binds, 1);
  CU_ASSERT_STRING_EQUAL(f->server.bound_password, PASSWORD);
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_BOUND);
  CU_ASSERT_EQUAL(session_state(f->server.s), SESSION_BOUND);
  CU_ASSERT_STRING_EQUAL(session_user(f->server.s), "load");
  CU_ASSERT_STRING_EQUAL(session_user(f->client.s), "load");
  CU_ASSERT_STRING_EQUAL(session_peer(f->client.s), f->addr);
  CU_ASSERT_EQUAL(session_bind_mode(f->server.s), PROTO_BIND_TRX);
  CU_ASSERT_EQUAL(session_can_send(f->client.s), 10);
  CU_ASSERT_PTR_EQUAL(session_app(f->client.s), &f->client);
  const struct session_stats *cs = session_stats(f->client.s);
  CU_ASSERT_EQUAL(cs->requests_sent, 1);
  CU_ASSERT_EQUAL(cs->responses_received, 1);
  CU_ASSERT_EQUAL(cs->reconnects, 0);
  CU_ASSERT(cs->bytes_out > 0 && cs->bytes_in > 0);
  CU_ASSERT_EQUAL(session_stats(f->server.s)->requests_received, 1);
  CU_ASSERT_EQUAL(session_stats(f->server.s)->responses_sent, 1);
  CU_ASSERT_EQUAL(f->client.disconnects, 0);
  fixture_destroy(f);
}

static void test_bind_smpp(void) { bind_ok(&smpp_proto_ops); }
static void test_bind_ucp(void) { bind_ok(&ucp_proto_ops); }

static bool three_refusals(struct fixture *f)
{
  return f->client.disconnects >= 3;
}

static bool four_refusals(struct fixture *f)
{
  return f->client.disconnects >= 4;
}

static void bind_refused(const struct proto_ops *proto)
{
  struct fixture *f = fixture_create(proto);
  f->client_cfg.password = "wrong";
  f->client_cfg.reconnect_min_ms = 40;
  f->client_cfg.reconnect_max_ms = 160;
  start_client(f);
  uint64_t start = clock_now_ms();
  CU_ASSERT(run_until(f, three_refusals, 1500));
  uint64_t elapsed = clock_now_ms() - start;
  /* in the protocol's own terms */
  CU_ASSERT_STRING_EQUAL(f->client.reason, proto == &smpp_proto_ops ? "bind refused: ESME_RBINDFAIL (0x0d)"
                                                                    : "bind refused: EC 07 Authentication failure");
  CU_ASSERT_EQUAL(f->client.bound, 0);
  CU_ASSERT_EQUAL(f->server.bound, 0);
  CU_ASSERT_STRING_EQUAL(f->server.bound_password, "wrong");
  /* back-off after each refusal: at least 20 + 40 ms (half of 40, then of 80)
   * before the third, where retrying at once would take a few ms */
  CU_ASSERT(elapsed >= 60);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->reconnects, 2);
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_DISCONNECTED);
  /* the doubling goes on: over the next 300 ms at most three more tries
   * (back-offs of 80-160, then 80-160 again); a busy machine makes fewer,
   * so the fourth is waited for, not expected by a time */
  run_until(f, NULL, 300);
  CU_ASSERT(f->client.disconnects <= 6);
  CU_ASSERT(run_until(f, four_refusals, 2000));
  fixture_destroy(f);
}

static void test_refused_smpp(void) { bind_refused(&smpp_proto_ops); }
static void test_refused_ucp(void) { bind_refused(&ucp_proto_ops); }

static void window_out_of_order(const struct proto_ops *proto)
{
  enum { W = 8 };
  struct fixture *f = bound_pair(proto, W);
  f->server.hold = true;
  for (int i = 0; i < W; i++)
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
  CU_ASSERT_EQUAL(session_outstanding(f->client.s), W);
  CU_ASSERT_EQUAL(session_can_send(f->client.s), 0);
  CU_ASSERT_EQUAL(submit(&f->client, W), -1); /* full */
  CU_ASSERT(run_until(f, server_holds_all, 1000));
  answer_held_reversed(&f->server);
  CU_ASSERT(run_until(f, client_has_all_responses, 1000));
  /* answered last first; each response found its own request by ref */
  for (int i = 0; i < W; i++) {
    char want[MSG_ID_LEN];
    CU_ASSERT_EQUAL(f->client.cookies[i], W - 1 - i);
    snprintf(want, sizeof want, "4900%d", f->client.cookies[i]);
    CU_ASSERT_STRING_EQUAL(f->client.msgids[i], want);
    CU_ASSERT_EQUAL(f->client.statuses[i], PROTO_OK);
  }
  CU_ASSERT_EQUAL(session_outstanding(f->client.s), 0);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->responses_received, W + 1);
  CU_ASSERT_EQUAL(session_stats(f->server.s)->requests_received, W + 1);
  fixture_destroy(f);
}

static bool server_has_one(struct fixture *f)
{
  return f->server.requests >= 1;
}

/* A held server reads and handles nothing more until the hold ends; then
 * the requests that waited are handled in order, none lost. */
static void input_held(const struct proto_ops *proto)
{
  enum { N = 5, HOLD_MS = 300 };
  struct fixture *f = fixture_create(proto);
  f->client_cfg.window = N;
  f->client_cfg.response_timeout_ms = SESSION_HOLD_MAX_MS + 10000;   /* outlasts the longest hold */
  start_client(f);
  CU_ASSERT(run_until(f, both_bound, 1000));
  f->server.hold_input_ms = HOLD_MS;
  for (int i = 0; i < N; i++)
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
  CU_ASSERT(run_until(f, server_has_one, 1000));
  CU_ASSERT(session_held(f->server.s));
  run_until(f, NULL, HOLD_MS / 3);
  /* Still held, when a busy machine has not let the hold run out meanwhile
   * (the bound on request_at_ms below holds either way). */
  if (clock_now_ms() - f->server.request_at_ms[0] < HOLD_MS - TICK_MS) {
    CU_ASSERT_EQUAL(f->server.requests, 1);
    CU_ASSERT_EQUAL(f->client.responses, 1);
  }
  CU_ASSERT(run_until(f, client_has_all_responses, 10000));
  CU_ASSERT_FALSE(session_held(f->server.s));
  CU_ASSERT_EQUAL(f->server.requests, N);
  /* Not before the hold's end: a lower bound, which no slow machine breaks. */
  CU_ASSERT(f->server.request_at_ms[1] - f->server.request_at_ms[0] >= HOLD_MS - TICK_MS);
  for (int i = 0; i < N; i++)
    CU_ASSERT_EQUAL(f->client.cookies[i], i);
  /* Holds are bounded: a longer one is cut to SESSION_HOLD_MAX_MS. */
  f->server.hold_input_ms = 0;
  session_hold_input(f->server.s, 60000);
  CU_ASSERT(session_held(f->server.s));
  CU_ASSERT_EQUAL(submit(&f->client, N), 0);
  CU_ASSERT(run_until(f, client_has_all_responses, SESSION_HOLD_MAX_MS + 10000));
  CU_ASSERT_EQUAL(f->server.requests, N + 1);
  fixture_destroy(f);
}

static void test_held_smpp(void) { input_held(&smpp_proto_ops); }
static void test_held_ucp(void) { input_held(&ucp_proto_ops); }

static void test_window_smpp(void) { window_out_of_order(&smpp_proto_ops); }
static void test_window_ucp(void) { window_out_of_order(&ucp_proto_ops); }

static bool client_ready(struct fixture *f)
{
  return f->client.readies >= 1;
}

static void window_full_ready(const struct proto_ops *proto)
{
  struct fixture *f = bound_pair(proto, 3);
  f->server.hold = true;
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
  CU_ASSERT_EQUAL(submit(&f->client, 3), -1);
  CU_ASSERT(run_until(f, server_holds_all, 1000));
  CU_ASSERT_EQUAL(f->client.readies, 0);
  /* one answer opens one slot */
  answer_request(f->server.s, &f->server.held[0]);
  CU_ASSERT(run_until(f, client_ready, 1000));
  CU_ASSERT_EQUAL(f->client.readies, 1);
  CU_ASSERT_EQUAL(f->client.responses, 1);
  CU_ASSERT_EQUAL(session_can_send(f->client.s), 1);
  CU_ASSERT_EQUAL(submit(&f->client, 3), 0);
  CU_ASSERT_EQUAL(submit(&f->client, 4), -1);
  fixture_destroy(f);
}

static void test_ready_smpp(void) { window_full_ready(&smpp_proto_ops); }
static void test_ready_ucp(void) { window_full_ready(&ucp_proto_ops); }

static bool three_timeouts(struct fixture *f)
{
  return f->client.unanswered[SESSION_LOST_TIMEOUT] >= 3;
}

static bool one_unknown_response(struct fixture *f)
{
  return session_stats(f->client.s)->unknown_responses >= 1;
}

static void response_timeout(const struct proto_ops *proto)
{
  struct fixture *f = fixture_create(proto);
  f->client_cfg.response_timeout_ms = 100;
  start_client(f);
  CU_ASSERT_FATAL(run_until(f, both_bound, 1000));
  f->server.hold = true; /* and never answers */
  uint64_t start = clock_now_ms();
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
  CU_ASSERT(run_until(f, three_timeouts, 1000));
  uint64_t elapsed = clock_now_ms() - start;
  /* not before the 100 ms; after it, a time-out checked as coarsely as once
   * a second would show, a busy machine's delay of some 100 ms not */
  CU_ASSERT(elapsed >= 95 && elapsed < 1000);
  CU_ASSERT_EQUAL(f->client.unanswered[SESSION_LOST_CLOSED], 0);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->timeouts, 3);
  CU_ASSERT_EQUAL(session_outstanding(f->client.s), 0);
  /* a late answer matches nothing now: counted and ignored */
  answer_request(f->server.s, &f->server.held[0]);
  CU_ASSERT(run_until(f, one_unknown_response, 1000));
  run_until(f, NULL, 20);
  CU_ASSERT_EQUAL(f->client.responses, 0);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->unknown_responses, 1);
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_BOUND);
  fixture_destroy(f);
}

static void test_timeout_smpp(void) { response_timeout(&smpp_proto_ops); }
static void test_timeout_ucp(void) { response_timeout(&ucp_proto_ops); }

static bool rebound(struct fixture *f)
{
  return f->client.bound >= 2 && f->server.bound >= 1;
}

static void server_drops(const struct proto_ops *proto)
{
  struct fixture *f = bound_pair(proto, 4);
  f->server.hold = true;
  for (int i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
  CU_ASSERT(run_until(f, server_holds_all, 1000));
  session_destroy(f->server.s);
  f->server.s = NULL;
  f->server.bound = 0;
  CU_ASSERT(run_until(f, client_disconnected, 1000));
  CU_ASSERT_EQUAL(f->client.unanswered[SESSION_LOST_CLOSED], 4);
  CU_ASSERT_EQUAL(f->client.responses, 0);
  CU_ASSERT_STRING_EQUAL(f->client.reason, "connection closed by peer");
  CU_ASSERT_EQUAL(session_outstanding(f->client.s), 0);
  CU_ASSERT_EQUAL(session_can_send(f->client.s), 0);
  CU_ASSERT_EQUAL(submit(&f->client, 9), -1);
  /* back by itself, bound again, and usable */
  CU_ASSERT(run_until(f, rebound, 1000));
  CU_ASSERT_EQUAL(f->client.disconnects, 1);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->reconnects, 1);
  f->server.hold = false;
  f->client.sent = f->client.responses = 0;
  CU_ASSERT_EQUAL(submit(&f->client, 0), 0);
  CU_ASSERT(run_until(f, client_has_all_responses, 1000));
  fixture_destroy(f);
}

static void test_drop_smpp(void) { server_drops(&smpp_proto_ops); }
static void test_drop_ucp(void) { server_drops(&ucp_proto_ops); }

static bool three_keepalives(struct fixture *f)
{
  return session_stats(f->client.s)->keepalives_sent >= 3;
}

/* Each keep-alive sent has its answer, and the bind its own. */
static bool keepalives_answered(struct fixture *f)
{
  const struct session_stats *cs = session_stats(f->client.s);
  return cs->responses_received == 1 + cs->keepalives_sent;
}

static void keepalive(const struct proto_ops *proto)
{
  struct fixture *f = fixture_create(proto);
  f->client_cfg.keepalive_ms = 40;
  start_client(f);
  CU_ASSERT_FATAL(run_until(f, both_bound, 1000));
  uint64_t start = clock_now_ms();
  CU_ASSERT(run_until(f, three_keepalives, 1000));
  CU_ASSERT(clock_now_ms() - start >= 100);
  CU_ASSERT(run_until(f, keepalives_answered, 1000)); /* the last answer arrives */
  const struct session_stats *cs = session_stats(f->client.s);
  /* each answered by the server's runtime: bind + keep-alives */
  CU_ASSERT_EQUAL(session_stats(f->server.s)->requests_received, 1 + cs->keepalives_sent);
  CU_ASSERT_EQUAL(cs->responses_received, 1 + cs->keepalives_sent);
  CU_ASSERT_EQUAL(f->client.requests + f->server.requests, 0); /* not the application's */
  CU_ASSERT_EQUAL(f->client.disconnects, 0);
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_BOUND);
  /* traffic keeps it quiet: while we send, no keep-alive is needed. One
   * may be due as the traffic starts, and one each time a busy machine
   * left the session idle for keepalive_ms between two submits. */
  uint64_t before = cs->keepalives_sent, last = clock_now_ms();
  unsigned idle = 0;
  for (int i = 0; i < 6; i++) {
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
    run_until(f, NULL, 15);
    uint64_t now = clock_now_ms();
    idle += now - last >= 40;
    last = now;
  }
  CU_ASSERT(run_until(f, client_has_all_responses, 1000));
  CU_ASSERT_EQUAL(f->client.responses, 6);
  CU_ASSERT(cs->keepalives_sent <= before + 1 + idle);
  fixture_destroy(f);
}

static void test_keepalive_smpp(void) { keepalive(&smpp_proto_ops); }
static void test_keepalive_ucp(void) { keepalive(&ucp_proto_ops); }

static bool raw_accepted_twice(struct fixture *f)
{
  return f->raw.accepts >= 2;
}

/* A server that answers the bind and nothing else: the keep-alive goes
 * unanswered, the client closes and comes back. */
static void test_keepalive_lost(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  f->raw_server = true;
  f->raw.answer_bind = true;
  f->client_cfg.keepalive_ms = 30;
  f->client_cfg.response_timeout_ms = 80;
  start_client(f);
  CU_ASSERT(run_until(f, client_disconnected, 1000));
  CU_ASSERT_EQUAL(f->client.bound, 1);
  CU_ASSERT_STRING_EQUAL(f->client.reason, "keep-alive not answered");
  CU_ASSERT_EQUAL(session_stats(f->client.s)->keepalives_sent, 1);
  /* it was an enquire_link, and the only thing after the bind */
  CU_ASSERT(f->raw.count >= 2);
  CU_ASSERT_EQUAL(f->raw.pdus[1].op, PROTO_OP_KEEPALIVE);
  CU_ASSERT(run_until(f, raw_accepted_twice, 1000));
  fixture_destroy(f);
}

static bool rate_window_over(struct fixture *f)
{
  return f->client.bound_at_ms && clock_now_ms() - f->client.bound_at_ms >= 500;
}

static void test_rate_limit(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  f->client_cfg.max_rate = 200;
  f->client_cfg.window = 100;
  f->client.refill = true;
  start_client(f);
  CU_ASSERT_FATAL(run_until(f, both_bound, 1000));
  app_on_ready(f->client.s); /* start sending */
  CU_ASSERT(run_until(f, rate_window_over, 1500));
  /* 200/s for 0.5 s, plus a burst of 4: never more (on any machine); at
   * least a good part of it, as a busy machine that stalls the loop loses
   * tokens (the burst caps what it saves up) */
  CU_ASSERT(f->client.sent >= 40 && f->client.sent <= 115);
  CU_ASSERT(f->client.readies > 20); /* each token came back through on_ready */
  CU_ASSERT(f->server.requests >= f->client.sent - 5);
  fixture_destroy(f);
}

static bool client_closed(struct fixture *f)
{
  return f->client.s && session_state(f->client.s) == SESSION_CLOSED;
}

static void test_stop_smpp(void)
{
  struct fixture *f = bound_pair(&smpp_proto_ops, 4);
  f->server.hold = true;
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
  CU_ASSERT(run_until(f, server_holds_all, 1000));
  session_stop(f->client.s);
  CU_ASSERT_EQUAL(submit(&f->client, 3), -1);
  CU_ASSERT_EQUAL(session_can_send(f->client.s), 0);
  /* no unbind while requests are outstanding */
  run_until(f, NULL, 30);
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_BOUND);
  CU_ASSERT_EQUAL(f->server.disconnects, 0);
  answer_held_reversed(&f->server);
  CU_ASSERT(run_until(f, client_closed, 1000));
  CU_ASSERT_EQUAL(f->client.responses, 3);
  CU_ASSERT_EQUAL(f->client.unanswered[SESSION_LOST_CLOSED], 0);
  CU_ASSERT_EQUAL(f->client.disconnects, 1);
  CU_ASSERT_STRING_EQUAL(f->client.reason, "unbound");
  CU_ASSERT(run_until(f, server_disconnected, 1000));
  CU_ASSERT_STRING_EQUAL(f->server.reason, "unbound by peer");
  /* stopped for good: no reconnect */
  run_until(f, NULL, 100);
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_CLOSED);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->reconnects, 0);
  CU_ASSERT_EQUAL(f->client.disconnects, 1);
  fixture_destroy(f);
}

/* UCP has no unbind: stopping closes once drained. */
static void test_stop_ucp(void)
{
  struct fixture *f = bound_pair(&ucp_proto_ops, 4);
  session_stop(f->client.s);
  CU_ASSERT(run_until(f, client_closed, 1000));
  CU_ASSERT_EQUAL(f->client.disconnects, 1);
  CU_ASSERT_STRING_EQUAL(f->client.reason, "stopped");
  CU_ASSERT(run_until(f, server_disconnected, 1000));
  run_until(f, NULL, 60);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->reconnects, 0);
  fixture_destroy(f);
}

/* A stopped client that is not connected just ends. */
static void test_stop_disconnected(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  f->client_cfg.password = "wrong";
  f->client_cfg.reconnect_min_ms = 200;
  start_client(f);
  CU_ASSERT(run_until(f, client_disconnected, 1000));
  session_stop(f->client.s);
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_CLOSED);
  run_until(f, NULL, 250);
  CU_ASSERT_EQUAL(f->client.disconnects, 1);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->reconnects, 0);
  fixture_destroy(f);
}

static bool raw_got(struct fixture *f, int n)
{
  return f->raw.count >= n;
}

static bool raw_got_1(struct fixture *f) { return raw_got(f, 1); }
static bool raw_got_2(struct fixture *f) { return raw_got(f, 2); }
static bool raw_got_3(struct fixture *f) { return raw_got(f, 3); }
static bool raw_got_4(struct fixture *f) { return raw_got(f, 4); }

static bool two_unknown_responses(struct fixture *f)
{
  return session_stats(f->client.s)->unknown_responses >= 2;
}

/* A response nobody asked for, or of the wrong kind, is counted and ignored. */
static void test_unknown_response(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  f->raw_server = true;
  f->raw.answer_bind = true;
  start_client(f);
  CU_ASSERT_FATAL(run_until(f, client_bound, 1000));
  CU_ASSERT_EQUAL(submit(&f->client, 0), 0);
  CU_ASSERT_FATAL(run_until(f, raw_got_2, 1000));
  const struct proto_pdu *req = &f->raw.pdus[1];
  CU_ASSERT_EQUAL_FATAL(req->op, PROTO_OP_SUBMIT);
  struct proto_pdu resp = { .op = PROTO_OP_SUBMIT_RESP, .ref = 4242 };
  snprintf(resp.msgid, sizeof resp.msgid, "x");
  raw_send(f, &resp);                  /* a ref never sent */
  struct proto_pdu wrong_kind = { .op = PROTO_OP_KEEPALIVE_RESP, .ref = req->ref };
  raw_send(f, &wrong_kind);            /* the right ref, but no submit_sm_resp */
  CU_ASSERT(run_until(f, two_unknown_responses, 1000));
  run_until(f, NULL, 20);
  CU_ASSERT_EQUAL(session_stats(f->client.s)->unknown_responses, 2);
  CU_ASSERT_EQUAL(f->client.responses, 0);
  CU_ASSERT_EQUAL(session_outstanding(f->client.s), 1);
  resp.ref = req->ref;                 /* and now the real answer */
  raw_send(f, &resp);
  CU_ASSERT(run_until(f, client_has_all_responses, 1000));
  CU_ASSERT_STRING_EQUAL(f->client.msgids[0], "x");
  CU_ASSERT_EQUAL(f->client.disconnects, 0);
  fixture_destroy(f);
}

static void before_bind(const struct proto_ops *proto)
{
  struct fixture *f = fixture_create(proto);
  static const uint8_t text[] = { 'h', 'i' };
  f->server_cfg.user = "smsc";
  raw_connect(f);
  struct proto_pdu req = { .op = PROTO_OP_SUBMIT, .ref = 7 };
  snprintf(req.msg.dst.addr, sizeof req.msg.dst.addr, "491234");
  snprintf(req.msg.src.addr, sizeof req.msg.src.addr, "4911");
  req.msg.data = text;
  req.msg.data_len = sizeof text;
  raw_send(f, &req);
  CU_ASSERT_FATAL(run_until(f, raw_got_1, 1000));
  CU_ASSERT_EQUAL(f->raw.pdus[0].op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(f->raw.pdus[0].ref, 7);
  CU_ASSERT_EQUAL(f->raw.pdus[0].status, PROTO_E_BIND_STATE);
  CU_ASSERT_EQUAL(f->server.requests, 0);
  /* bind, then bind again */
  struct proto_pdu bind = { .op = PROTO_OP_BIND, .ref = 8, .bind_mode = PROTO_BIND_TRX };
  snprintf(bind.user, sizeof bind.user, "load");
  snprintf(bind.password, sizeof bind.password, PASSWORD);
  raw_send(f, &bind);
  CU_ASSERT_FATAL(run_until(f, raw_got_2, 1000));
  CU_ASSERT_EQUAL(f->raw.pdus[1].op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(f->raw.pdus[1].ref, 8);
  CU_ASSERT_EQUAL(f->raw.pdus[1].status, PROTO_OK);
  if (proto == &smpp_proto_ops) /* UCP's op 60 result names nobody */
    CU_ASSERT_STRING_EQUAL(f->raw.pdus[1].user, "smsc");
  CU_ASSERT_STRING_EQUAL(session_user(f->server.s), "load");
  bind.ref = 9;
  raw_send(f, &bind);
  CU_ASSERT_FATAL(run_until(f, raw_got_3, 1000));
  CU_ASSERT_EQUAL(f->raw.pdus[2].op, PROTO_OP_BIND_RESP);
  /* UCP has one EC (04) for both: it reads back as BIND_STATE */
  CU_ASSERT_EQUAL(f->raw.pdus[2].status,
                  proto == &ucp_proto_ops ? PROTO_E_BIND_STATE : PROTO_E_ALREADY_BOUND);
  CU_ASSERT_EQUAL(f->server.binds, 1);
  /* now the submit goes through */
  req.ref = 10;
  raw_send(f, &req);
  CU_ASSERT_FATAL(run_until(f, raw_got_4, 1000));
  CU_ASSERT_EQUAL(f->raw.pdus[3].op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(f->raw.pdus[3].status, PROTO_OK);
  CU_ASSERT_STRING_EQUAL(f->raw.pdus[3].msgid, "491234");
  CU_ASSERT_EQUAL(f->server.requests, 1);
  fixture_destroy(f);
}

static void test_before_bind_smpp(void) { before_bind(&smpp_proto_ops); }
static void test_before_bind_ucp(void) { before_bind(&ucp_proto_ops); }

static bool refused_and_closed(struct fixture *f)
{
  return f->raw.eof && f->server.disconnects >= 1;
}

/* After a refused bind the server closes once the refusal is written,
 * whether or not the peer closes or sends on: the peer reads the refusal,
 * then the end; what it sent after the bind is not answered, and what it
 * sends afterwards meets a closed socket (a reset), not one that reads
 * and drops it for the response time-out. */
static void test_refusal_closes(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  /* Longer than the wait's guard: a lingering close would not end in it. */
  f->server_cfg.response_timeout_ms = 60000;
  raw_connect(f);
  struct proto_pdu bind = { .op = PROTO_OP_BIND, .ref = 3, .bind_mode = PROTO_BIND_TX };
  snprintf(bind.user, sizeof bind.user, "load");
  snprintf(bind.password, sizeof bind.password, "wrong");
  struct proto_pdu keepalive = { .op = PROTO_OP_KEEPALIVE, .ref = 4 };
  raw_send(f, &bind);
  raw_send(f, &keepalive);
  CU_ASSERT(run_until(f, refused_and_closed, 1000));
  CU_ASSERT_EQUAL(f->raw.count, 1);
  CU_ASSERT_EQUAL(f->raw.pdus[0].op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(f->raw.pdus[0].status, PROTO_E_AUTH);
  CU_ASSERT_STRING_EQUAL(f->server.reason, "bind refused: ESME_RBINDFAIL (0x0d)");
  /* The socket is closed: a send meets a reset, so the next one fails
   * (bounded: a reset takes microseconds on loopback). */
  bool reset = false;
  for (int i = 0; i < 100 && !reset; i++) {
    reset = send(f->raw.fd, "x", 1, MSG_NOSIGNAL) < 0;
    if (!reset)
      run_until(f, NULL, 10);
  }
  CU_ASSERT(reset);
  close(f->raw.fd);
  f->raw.fd = -1;
  fixture_destroy(f);
}

/* A peer that sends keep-alives as fast as it can and never reads the
 * answers: the server stops reading from it once SESSION_OUTPUT_MAX of
 * answers is unsent, then drops it when none of that output has been
 * written for the response time-out. */
static void test_peer_not_reading(void)
{
  char err[NETUTIL_ERR_LEN];
  struct fixture *f = fixture_create(&smpp_proto_ops);
  f->raw.fd = net_connect(f->addr, 1000, err, sizeof err);   /* never watched: never read */
  CU_ASSERT_FATAL(f->raw.fd >= 0);
  int small = 4096;
  setsockopt(f->raw.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  struct proto_pdu bind = { .op = PROTO_OP_BIND, .ref = 1, .bind_mode = PROTO_BIND_TRX };
  snprintf(bind.user, sizeof bind.user, "load");
  snprintf(bind.password, sizeof bind.password, PASSWORD);
  raw_send(f, &bind);
  CU_ASSERT_FATAL(run_until(f, server_bound, 1000));

  struct iobuf batch;
  iobuf_init(&batch);
  for (uint32_t i = 0; i < 4096; i++) {
    struct proto_pdu ka = { .op = PROTO_OP_KEEPALIVE, .ref = 2 + i };
    CU_ASSERT_FATAL(f->proto->encode(&ka, &batch, &defaults) > 0);
  }
  /* Whole batches only, so the stream stays in frames. */
  const struct session_stats *st = session_stats(f->server.s);
  uint64_t in_before = 0;
  int still = 0, rounds = 0;
  size_t off = 0;
  while (still < 20 && rounds++ < 500 && f->server.s) {
    ssize_t n = write(f->raw.fd, iobuf_head(&batch) + off, iobuf_len(&batch) - off);
    if (n > 0)
      off = (off + (size_t)n) % iobuf_len(&batch);
    run_until(f, NULL, 10);
    if (!f->server.s)
      break;
    still = st->bytes_in == in_before ? still + 1 : 0;
    in_before = st->bytes_in;
  }
  CU_ASSERT_FATAL(f->server.s != NULL);
  CU_ASSERT(still >= 20);                           /* input paused */
  /* keep-alive and its answer are the same size: what came in and did not
   * go out is what the session holds */
  uint64_t held = st->bytes_in - st->bytes_out;
  CU_ASSERT(held >= SESSION_OUTPUT_MAX / 2);
  CU_ASSERT(held <= SESSION_OUTPUT_MAX + 4 * 65536 + 64);
  CU_ASSERT_EQUAL(f->server.disconnects, 0);
  uint64_t start = clock_now_ms();
  CU_ASSERT(run_until(f, server_disconnected, 2000));
  /* response_timeout_ms 1000, counted from before start; the margin is a
   * busy machine's, a time-out never taken would be the guard's 10 s */
  CU_ASSERT(clock_now_ms() - start <= 2500);
  CU_ASSERT_PTR_NOT_NULL(strstr(f->server.reason, "peer not reading"));
  iobuf_destroy(&batch);
  fixture_destroy(f);
}

/* A receiver may not submit: the server refuses with BIND_STATE. */
static void test_rx_bind_submit(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  f->client_cfg.bind_mode = PROTO_BIND_RX;
  start_client(f);
  CU_ASSERT_FATAL(run_until(f, both_bound, 1000));
  CU_ASSERT_EQUAL(session_bind_mode(f->server.s), PROTO_BIND_RX);
  CU_ASSERT_EQUAL(submit(&f->client, 0), 0);
  CU_ASSERT(run_until(f, client_has_all_responses, 1000));
  CU_ASSERT_EQUAL(f->client.statuses[0], PROTO_E_BIND_STATE);
  CU_ASSERT_EQUAL(f->server.requests, 0);
  fixture_destroy(f);
}

/* A query about a message goes from a client to its server (from a
 * transmitter; a receiver is refused), and its answer comes back. */
static void test_query(void)
{
  for (int rx = 0; rx < 2; rx++) {
    struct fixture *f = fixture_create(&smpp_proto_ops);
    f->client_cfg.bind_mode = rx ? PROTO_BIND_RX : PROTO_BIND_TX;
    start_client(f);
    CU_ASSERT_FATAL(run_until(f, both_bound, 1000));
    struct proto_pdu req = { .op = PROTO_OP_QUERY };
    snprintf(req.msgid, sizeof req.msgid, "42");
    snprintf(req.msg.src.addr, sizeof req.msg.src.addr, "4911");
    CU_ASSERT_EQUAL(session_request(f->client.s, &req, (void *)(intptr_t)7), 0);
    f->client.sent++;
    CU_ASSERT(run_until(f, client_has_all_responses, 1000));
    CU_ASSERT_EQUAL(f->client.statuses[0], rx ? PROTO_E_BIND_STATE : PROTO_OK);
    CU_ASSERT_EQUAL(f->client.cookies[0], 7);
    CU_ASSERT_EQUAL(f->server.requests, rx ? 0 : 1);
    fixture_destroy(f);
  }
}

/* Unknown commands get "not supported"; the connection stays. Then a
 * command_length that loses the framing: generic_nack, then the close. */
static void test_unsupported_and_unreadable(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  raw_connect(f);
  static const uint8_t unknown[16] = { 0, 0, 0, 16, 0, 0, 0, 0x99, 0, 0, 0, 0, 0, 0, 0, 5 };
  raw_send_bytes(f, unknown, sizeof unknown);
  CU_ASSERT_FATAL(run_until(f, raw_got_1, 1000));
  CU_ASSERT_EQUAL(f->raw.pdus[0].op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(f->raw.pdus[0].ref, 5);
  CU_ASSERT_EQUAL(f->raw.pdus[0].status, PROTO_E_UNSUPPORTED);
  CU_ASSERT_FALSE(f->raw.eof);
  CU_ASSERT_EQUAL(f->server.disconnects, 0);
  static const uint8_t short_len[16] = { 0, 0, 0, 8, 0, 0, 0, 0x15, 0, 0, 0, 0, 0, 0, 0, 6 };
  raw_send_bytes(f, short_len, sizeof short_len);
  CU_ASSERT(run_until(f, raw_eof, 1000));
  CU_ASSERT_EQUAL(f->raw.count, 2);
  CU_ASSERT_EQUAL(f->raw.pdus[1].op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(f->raw.pdus[1].status, PROTO_E_CMD_LEN);
  CU_ASSERT_EQUAL(f->raw.pdus[1].ref, 6);
  /* the server closes once the raw peer has read the answer and closed too */
  close(f->raw.fd);
  f->raw.fd = -1;
  CU_ASSERT(run_until(f, server_disconnected, 1000));
  CU_ASSERT_STRING_EQUAL(f->server.reason, "unreadable input");
  fixture_destroy(f);
}

/* A connection that never binds is dropped after bind_timeout_ms. */
static void test_server_bind_timeout(void)
{
  struct fixture *f = fixture_create(&ucp_proto_ops);
  f->server_cfg.bind_timeout_ms = 60;
  raw_connect(f);
  uint64_t start = clock_now_ms();
  CU_ASSERT(run_until(f, server_disconnected, 1000));
  CU_ASSERT(clock_now_ms() - start >= 55);
  CU_ASSERT_STRING_EQUAL(f->server.reason, "no bind received");
  CU_ASSERT(run_until(f, raw_eof, 1000));
  fixture_destroy(f);
}

/* A server that never answers the bind: the client gives up after
 * bind_timeout_ms; the bind was the runtime's, not the application's. */
static void test_client_bind_timeout(void)
{
  struct fixture *f = fixture_create(&ucp_proto_ops);
  f->raw_server = true;
  f->client_cfg.bind_timeout_ms = 60;
  start_client(f);
  uint64_t start = clock_now_ms();
  CU_ASSERT(run_until(f, client_disconnected, 1000));
  CU_ASSERT(clock_now_ms() - start >= 55);
  CU_ASSERT_STRING_EQUAL(f->client.reason, "bind not answered");
  CU_ASSERT_EQUAL(f->raw.count, 1);
  CU_ASSERT_EQUAL(f->raw.pdus[0].op, PROTO_OP_BIND);
  CU_ASSERT_STRING_EQUAL(f->raw.pdus[0].user, "load");
  CU_ASSERT_EQUAL(f->client.unanswered[SESSION_LOST_CLOSED], 0);
  CU_ASSERT_EQUAL(f->client.unanswered[SESSION_LOST_TIMEOUT], 0);
  fixture_destroy(f);
}

/* The application destroys the session inside on_response: the answers
 * still in the same read are not handled, and the requests left are
 * reported as lost. */
static void test_destroy_in_callback(void)
{
  struct fixture *f = bound_pair(&smpp_proto_ops, 4);
  f->server.hold = true;
  for (int i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(submit(&f->client, i), 0);
  CU_ASSERT(run_until(f, server_holds_all, 1000));
  f->client.destroy_on_response = true;
  answer_held_reversed(&f->server);
  CU_ASSERT(run_until(f, server_disconnected, 1000));
  CU_ASSERT_PTR_NULL(f->client.s);
  CU_ASSERT_EQUAL(f->client.responses, 1);
  CU_ASSERT_EQUAL(f->client.unanswered[SESSION_LOST_CLOSED], 3);
  CU_ASSERT_EQUAL(f->client.disconnects, 0); /* destroy reports no disconnect */
  fixture_destroy(f);
}

static bool raw_has_four(struct fixture *f)
{
  return f->raw.count >= 4;
}

/* A bind and three submits in one write: the gate hands the connection
 * over at the bind, and the adopting session answers all four in order. */
static void hand_over(const struct proto_ops *proto)
{
  struct fixture *f = fixture_create(proto);
  f->gate = true;
  raw_connect(f);
  struct iobuf out;
  iobuf_init(&out);
  struct proto_pdu bind = { .op = PROTO_OP_BIND, .ref = 1, .bind_mode = PROTO_BIND_TRX };
  snprintf(bind.user, sizeof bind.user, "load");
  snprintf(bind.password, sizeof bind.password, PASSWORD);
  CU_ASSERT_FATAL(proto->encode(&bind, &out, &defaults) > 0);
  for (int i = 0; i < 3; i++) {
    struct proto_pdu req = { .ref = 2 + (uint32_t)i };
    submit_fill(&req, i);
    CU_ASSERT_FATAL(proto->encode(&req, &out, &defaults) > 0);
  }
  raw_send_bytes(f, iobuf_head(&out), iobuf_len(&out));
  iobuf_destroy(&out);
  CU_ASSERT(run_until(f, raw_has_four, 1000));
  CU_ASSERT_EQUAL(f->handed, 1);
  CU_ASSERT_EQUAL(f->server.binds, 1);
  CU_ASSERT_EQUAL(f->server.requests, 3);
  CU_ASSERT_EQUAL_FATAL(f->raw.count, 4);
  CU_ASSERT_EQUAL(f->raw.pdus[0].op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(f->raw.pdus[0].status, PROTO_OK);
  for (int i = 1; i < 4; i++) {
    CU_ASSERT_EQUAL(f->raw.pdus[i].op, PROTO_OP_SUBMIT_RESP);
    CU_ASSERT_EQUAL(f->raw.pdus[i].ref, (uint32_t)(1 + i));
  }
  CU_ASSERT_EQUAL(session_state(f->server.s), SESSION_BOUND);
  fixture_destroy(f);
}

static void test_hand_over_smpp(void) { hand_over(&smpp_proto_ops); }
static void test_hand_over_ucp(void) { hand_over(&ucp_proto_ops); }

/* ---- TLS ---- */

/* Certificates made for the test; the contexts the fixture's sessions use. */
static void use_tls(struct fixture *f)
{
  char err[TLS_ERR_LEN];
  make_certs();
  f->server_cfg.tls = tls_ctx_create(&(struct tls_settings){ .cert = file("server.pem"), .key = file("server.key") },
                                     true, err, sizeof err);
  f->client_cfg.tls = tls_ctx_create(&(struct tls_settings){ .ca = file("ca.pem"), .verify_peer = true },
                                     false, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f->server_cfg.tls);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f->client_cfg.tls);
}

/* The fixture's contexts let go (the sessions had their own references). */
static void tls_fixture_destroy(struct fixture *f)
{
  struct tls_ctx *ctx[2] = { f->server_cfg.tls, f->client_cfg.tls };
  fixture_destroy(f);
  tls_ctx_unref(ctx[0]);
  tls_ctx_unref(ctx[1]);
  remove_certs();
}

static bool server_has_3000(struct fixture *f)
{
  return f->client.responses >= 3000;
}

/* A client that verifies the server (by the address it connects to) binds
 * at a gate over TLS; the gate hands the connection over with its TLS; a
 * window of 100 flows, each write carrying many PDUs in its records. */
static void tls_hand_over(const struct proto_ops *proto)
{
  struct fixture *f = fixture_create(proto);
  use_tls(f);
  f->gate = true;
  f->client_cfg.window = 100;
  start_client(f);
  CU_ASSERT_FATAL(run_until(f, both_bound, 2000));
  CU_ASSERT_EQUAL(f->handed, 1);
  CU_ASSERT_PTR_NOT_NULL(session_tls(f->client.s));
  CU_ASSERT_PTR_NOT_NULL(session_tls(f->server.s));
  CU_ASSERT_EQUAL(session_stats(f->client.s)->tls_handshakes, 1);
  f->client.refill = true;
  app_on_ready(f->client.s);
  CU_ASSERT(run_until(f, server_has_3000, 5000));
  f->client.refill = false;
  const struct session_stats *cs = session_stats(f->client.s), *ss = session_stats(f->server.s);
  /* Under load a write carries far more than one PDU (about 40 bytes). */
  CU_ASSERT(cs->writes > 0 && cs->bytes_out / cs->writes >= 200);
  CU_ASSERT(ss->writes > 0 && ss->bytes_out / ss->writes >= 200);
  CU_ASSERT_EQUAL(f->client.disconnects, 0);
  tls_fixture_destroy(f);
}

static void test_tls_hand_over_smpp(void) { tls_hand_over(&smpp_proto_ops); }
static void test_tls_hand_over_ucp(void) { tls_hand_over(&ucp_proto_ops); }

/* Plain SMPP sent to a TLS port: the server closes, saying why; a TLS
 * client whose CA does not know the server refuses it, saying why. */
static void test_tls_refusals(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  use_tls(f);
  struct tls_ctx *client_tls = f->client_cfg.tls;
  f->client_cfg.tls = NULL;
  start_client(f);
  CU_ASSERT(run_until(f, server_disconnected, 2000));
  CU_ASSERT_PTR_NOT_NULL(strstr(f->server.reason, "TLS handshake: "));
  CU_ASSERT_PTR_NOT_NULL(strstr(f->server.reason, "not TLS"));
  session_destroy(f->client.s);
  f->client.s = NULL;
  f->client_cfg.tls = client_tls;
  tls_fixture_destroy(f);

  f = fixture_create(&smpp_proto_ops);
  use_tls(f);
  char err[TLS_ERR_LEN];
  tls_ctx_unref(f->client_cfg.tls);
  f->client_cfg.tls = tls_ctx_create(&(struct tls_settings){ .ca = file("other-ca.pem"), .verify_peer = true },
                                     false, err, sizeof err);
  start_client(f);
  CU_ASSERT(run_until(f, client_disconnected, 2000));
  CU_ASSERT_PTR_NOT_NULL(strstr(f->client.reason, "TLS handshake: certificate verify failed"));
  tls_fixture_destroy(f);
}

/* A connection that never starts its handshake is closed at the bind
 * time-out, as one that never binds. */
static void test_tls_handshake_timeout(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  use_tls(f);
  f->server_cfg.bind_timeout_ms = 60;
  raw_connect(f);
  CU_ASSERT(run_until(f, server_disconnected, 1000));
  CU_ASSERT_STRING_EQUAL(f->server.reason, "TLS handshake timed out");
  tls_fixture_destroy(f);
}

/* Connecting to a port nobody listens on: each failure is one loss. */
static void test_connect_refused(void)
{
  struct fixture *f = fixture_create(&smpp_proto_ops);
  /* f->addr names a port nobody listens on any more */
  evloop_remove(f->loop, f->listen_fd);
  close(f->listen_fd);
  f->listen_fd = -1;
  start_client(f);
  CU_ASSERT(run_until(f, client_disconnected, 1000));
  CU_ASSERT_PTR_NOT_NULL(strstr(f->client.reason, "connect to"));
  CU_ASSERT_EQUAL(session_state(f->client.s), SESSION_DISCONNECTED);
  fixture_destroy(f);
}

void suite_session(void);
void suite_session(void)
{
  static const struct test_case cases[] = {
    { "bind (SMPP)", test_bind_smpp },
    { "bind (UCP)", test_bind_ucp },
    { "bad password: refused, back-off (SMPP)", test_refused_smpp },
    { "bad password: refused, back-off (UCP)", test_refused_ucp },
    { "window, answers out of order (SMPP)", test_window_smpp },
    { "window, answers out of order (UCP)", test_window_ucp },
    { "input held, then handled in order (SMPP)", test_held_smpp },
    { "input held, then handled in order (UCP)", test_held_ucp },
    { "window full, then on_ready (SMPP)", test_ready_smpp },
    { "window full, then on_ready (UCP)", test_ready_ucp },
    { "response time-out (SMPP)", test_timeout_smpp },
    { "response time-out (UCP)", test_timeout_ucp },
    { "server drops: lost, reconnect, rebind (SMPP)", test_drop_smpp },
    { "server drops: lost, reconnect, rebind (UCP)", test_drop_ucp },
    { "keep-alive on idle (SMPP)", test_keepalive_smpp },
    { "keep-alive on idle (UCP)", test_keepalive_ucp },
    { "keep-alive unanswered: close, reconnect", test_keepalive_lost },
    { "unknown responses ignored", test_unknown_response },
    { "rate limit", test_rate_limit },
    { "stop unbinds (SMPP)", test_stop_smpp },
    { "stop closes (UCP)", test_stop_ucp },
    { "stop while disconnected", test_stop_disconnected },
    { "before bind and second bind (SMPP)", test_before_bind_smpp },
    { "before bind and second bind (UCP)", test_before_bind_ucp },
    { "refused bind: closed once the refusal is written", test_refusal_closes },
    { "peer not reading: input paused, then dropped", test_peer_not_reading },
    { "submit on a receiver bind", test_rx_bind_submit },
    { "query_sm: transmitter asks, receiver may not", test_query },
    { "unsupported and unreadable input", test_unsupported_and_unreadable },
    { "server bind time-out", test_server_bind_timeout },
    { "client bind time-out", test_client_bind_timeout },
    { "destroy inside a callback", test_destroy_in_callback },
    { "connect refused", test_connect_refused },
    { "bind at a gate, handed over with what follows (SMPP)", test_hand_over_smpp },
    { "bind at a gate, handed over with what follows (UCP)", test_hand_over_ucp },
    { "TLS: handed over at a gate, writes batched (SMPP)", test_tls_hand_over_smpp },
    { "TLS: handed over at a gate, writes batched (UCP)", test_tls_hand_over_ucp },
    { "TLS: plain text at a TLS port, an unknown CA", test_tls_refusals },
    { "TLS: handshake time-out", test_tls_handshake_timeout },
    { NULL, NULL },
  };
  test_add_suite("session", cases);
}
