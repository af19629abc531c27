/* session.c - the connector runtime: one connection of any protocol.
 *
 * Decisions worth knowing before reading the code:
 *
 * - Input is read in 64 KiB chunks, at most READ_CALLS_MAX per iteration so
 *   one busy session cannot starve the others of the loop, and every complete
 *   frame is split and decoded at once into one reused struct proto_pdu and
 *   one scratch buffer. Output is encoded into one buffer and written once
 *   per loop iteration by a deferred flush; EVLOOP_WRITE is watched only
 *   while the socket is full. Nothing is allocated per PDU.
 *
 * - Backpressure: a peer that does not read its answers is not read either.
 *   Once the unsent output reaches SESSION_OUTPUT_MAX the session stops
 *   watching the socket for input, and watches it again when the output is
 *   down to half that; a peer therefore makes us hold at most about that
 *   much (plus one read chunk's answers). Output that has not moved (no byte
 *   written) for response_timeout_ms closes the session. Both checks compare
 *   a length kept anyway, once per read chunk and once per write batch.
 *
 * - A held session (session_hold_input: a client sending into a limit it
 *   has reached) is neither read nor has its buffered frames handled until
 *   the hold ends, at the first tick after it. Its requests wait in the
 *   socket instead of being refused one by one, as fast as it can send
 *   them: a refusal costs the peer one round trip and us one decode, so a
 *   flood of them costs a core on both sides.
 *
 * - The keep-alive timer counts bytes written to the socket, not PDUs
 *   queued: answers piling up for a peer that does not read do not make it
 *   look alive.
 *
 * - The window holds one slot more than the application may use. That slot
 *   is the runtime's: bind, keep-alive and unbind always find room, so a full
 *   window never starves the keep-alive. The application window is therefore
 *   capped at window_max - 1 (99 for UCP, whose 100 TRNs are the limit).
 *   Entries are tagged with their op; the application's carry TAG_APP.
 *
 * - Clients connect without blocking: connect(2) on a non-blocking socket,
 *   completion seen as EVLOOP_WRITE, and bind_timeout_ms covering the
 *   connect and the bind answer together. Only the address lookup
 *   (net_parse_addr) may block, and not for numeric addresses.
 *
 * - Every answer the runtime makes itself copies ref and raw_status from
 *   the request: adapters note there what the answer must echo (UCP: the
 *   OT; SMPP: the response command_id, so data_sm gets data_sm_resp).
 *   A request decoded as PROTO_OP_OTHER is answered with op PROTO_OP_OTHER
 *   and status PROTO_E_UNSUPPORTED: the adapter turns that into the
 *   protocol's "not supported" (SMPP: the command's own response or
 *   generic_nack ESME_RINVCMDID, and nothing for PDUs SMPP never answers;
 *   UCP: R/<OT> NACK EC 03). A NACK answering one of our requests reaches
 *   on_response with op PROTO_OP_NACK (its status says why).
 *
 * - When the splitter finds an error with nothing to skip (the stream cannot
 *   be resynchronised), the unsplittable bytes are handed to decode, which
 *   returns <0 and the answer to send (SMPP: generic_nack ESME_RINVCMDLEN);
 *   that answer is flushed and the connection closed.
 *
 * - Closing after a last answer (unbind answered, a UCP stop) is a
 *   lingering close: flush, shutdown(SHUT_WR), discard input until the
 *   peer closes too (or response_timeout_ms passes), so the peer reads our
 *   answer instead of a reset. A refused bind is closed at once instead,
 *   once its answer is written: a peer that keeps sending after it would
 *   otherwise hold the connection for response_timeout_ms. What it sent
 *   already is read first, so that close(2) sends a FIN rather than a reset
 *   unless it sends more.
 *
 * - Application callbacks may call any session function, session_destroy
 *   included; after each callback the code checks whether the session is
 *   gone before going on. Callbacks run only from the loop's own callbacks
 *   (I/O, tick, deferred flush), never from inside session_* calls except
 *   session_destroy's on_unanswered reports, as session.h says.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "clock.h"
#include "iobuf.h"
#include "netutil.h"
#include "ratelimit.h"
#include "session.h"
#include "window.h"

#define READ_CHUNK 65536
#define READ_CALLS_MAX 4
#define TAG_APP 0x100u            /* window tag bit: a request of the application */
#define REASON_LEN NETUTIL_ERR_LEN
#define PEER_LEN 256

struct session {
  struct evloop *loop;
  const struct proto_ops *proto;
  struct session_config cfg;        /* defaults filled in; the strings are not kept */
  const struct session_handler *h;
  void *app;

  enum session_state state;
  enum proto_bind_mode bind_mode;
  int fd;
  bool connecting;                  /* client: connect(2) in progress (state DISCONNECTED) */
  bool write_armed;                 /* EVLOOP_WRITE watched: the socket was full */
  bool flush_scheduled;
  bool closing;                     /* answering done: flush, then lingering close */
  bool shut;                        /* closing: our side is shut down */
  bool close_at_once;               /* closing: no lingering once the output is written */
  bool stopping;                    /* session_stop: no reconnect */
  bool destroyed;                   /* memory freed at the end of the iteration */
  bool ready_wanted;                /* the application was refused: on_ready owed */
  bool keepalive_outstanding;
  bool read_paused;                 /* backpressure: input not watched (see the top) */
  bool held;                        /* session_hold_input: input neither read nor handled */
  bool handshaking;                 /* TLS: the handshake is under way */
  bool tls_write_wants_read;        /* TLS: a write waits for input (post-handshake messages) */

  unsigned app_window;              /* requests the application may have outstanding */
  unsigned app_outstanding;
  struct window *window;
  struct ratelimit rate;

  uint64_t since_ms;                /* connect started, state entered, closing began */
  uint64_t last_sent_ms;            /* a byte last written to the socket */
  uint64_t out_moved_ms;            /* output last written from, or filled when empty */
  uint64_t reconnect_at_ms;
  uint64_t held_until_ms;
  unsigned backoff_ms;
  unsigned connect_attempts;
  enum proto_status bind_refusal;   /* client: how the peer refused this connection's bind */
  uint32_t bind_refusal_raw;        /* ... in its own code */
  uint64_t jitter_state;

  struct iobuf in;
  struct iobuf out;
  uint8_t *scratch;                 /* PROTO_SCRATCH_LEN: decoded text of s->pdu */
  struct proto_pdu pdu;             /* the PDU just decoded */
  struct session_stats stats;

  char user[MSG_USER_LEN];          /* configured; a server's becomes the bound account */
  char password[MSG_USER_LEN];
  char peer[PEER_LEN];              /* the connect address, or the accepted peer's */
  char close_reason[REASON_LEN];
  struct tls_ctx *tls_ctx;          /* a reference: each connection's TLS begins with it */
  struct tls_conn *tls;             /* the connection's, or NULL (plain TCP) */
  char server_name[PEER_LEN];       /* client TLS: SNI and the name verified */
  char io_error[REASON_LEN];        /* why the last TLS read or write failed */
};

static void on_io(struct evloop *loop, int fd, unsigned events, void *arg);
static void lost(struct session *s, const char *reason);
static void read_input(struct session *s);
static void start_bind(struct session *s);
static void handshake_step(struct session *s);

static uint64_t now_ms(const struct session *s)
{
  return evloop_now_ms(s->loop);
}

/* The connection this processing step started on is gone (or the session). */
static bool gone(const struct session *s)
{
  return s->destroyed || s->fd < 0;
}

/* ---- output ---- */

static void update_interest(struct session *s)
{
  if (s->fd >= 0 && !s->connecting && !s->handshaking)
    evloop_modify(s->loop, s->fd, (s->read_paused || s->held ? 0u : EVLOOP_READ) |
                                  (s->write_armed ? EVLOOP_WRITE : 0u));
}

/* Whether input must pause (or may resume) for the output's length. */
static bool output_pauses(const struct session *s)
{
  size_t len = iobuf_len(&s->out);
  return s->read_paused ? len > SESSION_OUTPUT_MAX / 2 : len >= SESSION_OUTPUT_MAX;
}

/* Writes what the output holds, through TLS when the connection has it
 * (records of up to 16 KB, each one write(2), as much as a plain write
 * would take): the bytes taken, 0 when the socket is full, or -1 with the
 * reason in io_error. */
static ssize_t write_out(struct session *s)
{
  if (!s->tls) {
    ssize_t n = iobuf_write_fd(&s->out, s->fd);
    if (n < 0)
      snprintf(s->io_error, sizeof s->io_error, "write: %s", strerror(errno));
    return n;
  }
  return tls_write_from(s->tls, &s->out, &s->tls_write_wants_read, s->io_error, sizeof s->io_error);
}

static void flush(struct session *s)
{
  ssize_t written = write_out(s);
  if (written < 0) {
    lost(s, s->io_error);
    return;
  }
  if (written > 0) {
    s->stats.writes++;
    s->stats.bytes_out += (uint64_t)written;
    s->last_sent_ms = s->out_moved_ms = now_ms(s);
  }
  bool full = iobuf_len(&s->out) > 0 && !s->tls_write_wants_read;
  bool paused = output_pauses(s);
  if (full != s->write_armed || paused != s->read_paused) {
    s->write_armed = full;
    s->read_paused = paused;
    update_interest(s);
  }
  if (!iobuf_len(&s->out) && s->closing && !s->shut) {
    if (s->tls)
      tls_close(s->tls);
    shutdown(s->fd, SHUT_WR);
    s->shut = true;
    if (s->close_at_once) {
      net_drop_pending_input(s->fd);
      lost(s, s->close_reason);
    }
  }
}

static void flush_deferred(struct evloop *loop, void *arg)
{
  struct session *s = arg;
  s->flush_scheduled = false;
  if (!gone(s) && !s->connecting)
    flush(s);
}

static void schedule_flush(struct session *s)
{
  if (s->flush_scheduled || s->write_armed)
    return;
  if (evloop_defer(s->loop, flush_deferred, s) == 0) {
    s->flush_scheduled = true;
  } else {
    /* No memory for the deferral: let the loop call us when writable. */
    s->write_armed = true;
    update_interest(s);
  }
}

/* Appends pdu to the output; returns the bytes added (0: the protocol
 * sends nothing for it) or -1. An encoder may have appended part of a frame
 * before failing: that part is cut off again. */
static int encode(struct session *s, const struct proto_pdu *pdu)
{
  size_t before = iobuf_len(&s->out);
  int len = s->proto->encode(pdu, &s->out, &s->cfg.proto_options);
  if (len < 0) {
    s->out.end = s->out.start + before;
    return -1;
  }
  if (len > 0) {
    if (before == 0)
      s->out_moved_ms = now_ms(s);
    schedule_flush(s);
  }
  return len;
}

static int send_response(struct session *s, const struct proto_pdu *resp)
{
  int len = encode(s, resp);
  if (len < 0)
    return -1;
  if (len > 0)
    s->stats.responses_sent++;
  return 0;
}

/* The runtime's own answer to req: op with status. */
static void answer(struct session *s, const struct proto_pdu *req, enum proto_op op,
                   enum proto_status status)
{
  /* raw_status goes back: it holds what the answer must echo (UCP: the OT). */
  struct proto_pdu resp = { .op = op, .ref = req->ref, .status = status,
                            .raw_status = req->raw_status, .bind_mode = req->bind_mode };
  memcpy(resp.user, s->user, sizeof resp.user);
  send_response(s, &resp);
}

/* Takes a window slot for req (its ref is set) and encodes it. */
static int send_request(struct session *s, struct proto_pdu *req, void *cookie, unsigned tag)
{
  if (window_alloc(s->window, cookie, tag, now_ms(s), &req->ref) != 0)
    return -1;
  if (encode(s, req) <= 0) {
    window_answer(s->window, req->ref, NULL);
    return -1;
  }
  s->stats.requests_sent++;
  return 0;
}

/* Bind, keep-alive or unbind: always has the window's reserved slot. */
static int runtime_request(struct session *s, enum proto_op op)
{
  struct proto_pdu req = { .op = op, .bind_mode = s->bind_mode };
  memcpy(req.user, s->user, sizeof req.user);
  if (op == PROTO_OP_BIND)
    memcpy(req.password, s->password, sizeof req.password);
  return send_request(s, &req, NULL, op);
}

/* Answers what is still to be sent, then closes (see the top of the file):
 * at once when at_once, else lingering. */
static void set_closing(struct session *s, const char *reason, bool at_once)
{
  if (s->closing)
    return;
  s->closing = true;
  s->close_at_once = at_once;
  s->since_ms = now_ms(s);
  snprintf(s->close_reason, sizeof s->close_reason, "%s", reason);
  schedule_flush(s);
}

/* ---- losing the connection ---- */

/* Every request still outstanding will get no answer. Stops by itself when a
 * callback destroys the session: session_destroy drains the window too. */
static void report_outstanding(struct session *s)
{
  const struct window_entry *oldest;
  struct window_entry e;
  while ((oldest = window_oldest(s->window))) {
    window_answer(s->window, oldest->ref, &e);
    if (!(e.tag & TAG_APP))
      continue;
    s->app_outstanding--;
    if (s->h->on_unanswered)
      s->h->on_unanswered(s, e.cookie, SESSION_LOST_CLOSED);
  }
  window_reset(s->window);
}

static void close_socket(struct session *s)
{
  if (s->fd >= 0) {
    evloop_remove(s->loop, s->fd);
    close(s->fd);
    s->fd = -1;
  }
  tls_conn_free(s->tls);
  s->tls = NULL;
  s->handshaking = s->tls_write_wants_read = false;
  s->connecting = s->write_armed = s->closing = s->shut = s->close_at_once = s->read_paused = s->held = false;
  s->keepalive_outstanding = false;
  iobuf_consume(&s->in, iobuf_len(&s->in));
  iobuf_consume(&s->out, iobuf_len(&s->out));
}

/* Equal jitter: half the back-off fixed, half random, so that many clients
 * that lost the same server do not come back in step. */
static void schedule_reconnect(struct session *s)
{
  uint64_t x = s->jitter_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  s->jitter_state = x;
  unsigned half = s->backoff_ms / 2;
  s->reconnect_at_ms = now_ms(s) + half + x % (s->backoff_ms - half + 1);
  s->backoff_ms = s->backoff_ms > s->cfg.reconnect_max_ms / 2 ? s->cfg.reconnect_max_ms
                                                                : s->backoff_ms * 2;
}

/* The connection (or the attempt to make one) is gone: one on_disconnect. */
static void lost(struct session *s, const char *reason)
{
  close_socket(s);
  s->state = s->stopping ? SESSION_CLOSED : SESSION_DISCONNECTED;
  if (s->cfg.role == SESSION_CLIENT && !s->stopping)
    schedule_reconnect(s);
  report_outstanding(s);
  if (!s->destroyed && s->h->on_disconnect)
    s->h->on_disconnect(s, reason);
}

/* ---- connecting and binding ---- */

static void start_connect(struct session *s)
{
  char err[NETUTIL_ERR_LEN];
  struct sockaddr_storage addr;
  socklen_t addr_len;
  if (s->connect_attempts++)
    s->stats.reconnects++;
  s->since_ms = now_ms(s);
  s->bind_refusal = PROTO_OK;
  s->bind_refusal_raw = 0;
  if (net_parse_addr(s->peer, &addr, &addr_len, err, sizeof err) == -1) {
    lost(s, err);
    return;
  }
  s->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd == -1) {
    snprintf(err, sizeof err, "socket: %s", strerror(errno));
    lost(s, err);
    return;
  }
  /* Whether it completes at once or later, the socket turns writable. */
  if ((connect(s->fd, (struct sockaddr *)&addr, addr_len) == -1 && errno != EINPROGRESS) ||
      evloop_add(s->loop, s->fd, EVLOOP_WRITE, on_io, s) == -1) {
    snprintf(err, sizeof err, "connect to %.128s: %s", s->peer, strerror(errno));
    close(s->fd);
    s->fd = -1;
    lost(s, err);
    return;
  }
  s->connecting = true;
}

static void connect_done(struct session *s)
{
  char reason[REASON_LEN];
  int error = 0, one = 1;
  socklen_t len = sizeof error;
  if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &error, &len) == -1)
    error = errno;
  if (error) {
    snprintf(reason, sizeof reason, "connect to %.128s: %s", s->peer, strerror(error));
    lost(s, reason);
    return;
  }
  s->connecting = false;
  setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (s->tls_ctx) {
    if (!(s->tls = tls_conn_create(s->tls_ctx, s->fd, false, s->server_name))) {
      lost(s, "TLS: out of memory");
      return;
    }
    s->handshaking = true;
    s->state = SESSION_OPEN;
    s->since_ms = now_ms(s);
    handshake_step(s);
    return;
  }
  update_interest(s);
  start_bind(s);
}

static void start_bind(struct session *s)
{
  s->state = SESSION_BINDING;
  s->since_ms = now_ms(s);
  if (runtime_request(s, PROTO_OP_BIND) == -1)
    lost(s, "bind cannot be encoded");
}

/* TLS: moves the handshake on, watching what it waits for; once done, the
 * connection goes on as a plain one would (a client binds; a server reads
 * what the client sent along with its last handshake flight). */
static void handshake_step(struct session *s)
{
  enum tls_status st = tls_handshake(s->tls);
  if (st == TLS_WANT_READ || st == TLS_WANT_WRITE) {
    evloop_modify(s->loop, s->fd, st == TLS_WANT_READ ? EVLOOP_READ : EVLOOP_WRITE);
    return;
  }
  if (st != TLS_OK) {
    char reason[REASON_LEN];
    snprintf(reason, sizeof reason, "TLS handshake: %s", tls_conn_error(s->tls));
    lost(s, reason);
    return;
  }
  s->handshaking = false;
  s->stats.tls_handshakes++;
  update_interest(s);
  if (s->cfg.role == SESSION_CLIENT)
    start_bind(s);
  else
    read_input(s);
}

static void bound(struct session *s)
{
  s->state = SESSION_BOUND;
  s->backoff_ms = s->cfg.reconnect_min_ms;
  if (s->h->on_bound)
    s->h->on_bound(s);
}

/* Client: the answer to our bind. */
static void bind_answered(struct session *s, const struct proto_pdu *resp)
{
  if (resp->status != PROTO_OK) {
    char reason[REASON_LEN], why[PROTO_DESCRIBE_LEN];
    /* A peer without windowing: every bind from now on asks for none, and
     * the session keeps one request outstanding. */
    bool unwindowed = resp->status == PROTO_E_WINDOW && s->cfg.proto_options.window > 1;
    if (unwindowed)
      s->cfg.proto_options.window = s->app_window = 1;
    s->bind_refusal = resp->status;
    s->bind_refusal_raw = resp->raw_status;
    snprintf(reason, sizeof reason, "bind refused: %s%s",
             proto_describe(s->proto, PROTO_OP_BIND_RESP, resp->status, resp->raw_status, why, sizeof why),
             unwindowed ? "; binding again with a window of 1" : "");
    lost(s, reason);
    return;
  }
  bound(s);
}

/* Server: a bind from the peer. */
static void peer_bind(struct session *s, const struct proto_pdu *req)
{
  if (s->cfg.role == SESSION_CLIENT) {
    answer(s, req, PROTO_OP_BIND_RESP, PROTO_E_BIND_STATE);
    return;
  }
  if (s->state != SESSION_OPEN) {
    answer(s, req, PROTO_OP_BIND_RESP, PROTO_E_ALREADY_BOUND);
    return;
  }
  enum proto_status status = s->h->on_bind ? s->h->on_bind(s, req) : PROTO_OK;
  if (gone(s))
    return;
  if (status != PROTO_OK) {
    char reason[REASON_LEN], why[PROTO_DESCRIBE_LEN];
    answer(s, req, PROTO_OP_BIND_RESP, status);
    snprintf(reason, sizeof reason, "bind refused: %s",
             proto_describe(s->proto, PROTO_OP_BIND_RESP, status, 0, why, sizeof why));
    set_closing(s, reason, true);
    return;
  }
  /* The answer (with our own name) goes out before anything on_bound sends. */
  answer(s, req, PROTO_OP_BIND_RESP, PROTO_OK);
  s->bind_mode = req->bind_mode;
  memcpy(s->user, req->user, sizeof s->user);
  bound(s);
}

/* ---- the peer's PDUs ---- */

/* Whether this bind lets the peer send op: a server takes submits (and
 * queries, cancels and replaces of what was submitted) only from a
 * transmitter, a client deliveries only as a receiver, and only a server
 * is asked about messages. */
static bool allowed(const struct session *s, enum proto_op op)
{
  bool about_message = op == PROTO_OP_QUERY || op == PROTO_OP_CANCEL || op == PROTO_OP_REPLACE;
  if (about_message && s->cfg.role != SESSION_SERVER)
    return false;
  if (s->cfg.role == SESSION_SERVER && (op == PROTO_OP_SUBMIT || about_message))
    return (s->bind_mode & PROTO_BIND_TX) != 0;
  if (s->cfg.role == SESSION_CLIENT && op == PROTO_OP_DELIVER)
    return (s->bind_mode & PROTO_BIND_RX) != 0;
  return true;
}

static void peer_request(struct session *s, const struct proto_pdu *req)
{
  if (s->state != SESSION_BOUND || !allowed(s, req->op)) {
    answer(s, req, proto_response_op(req->op), PROTO_E_BIND_STATE);
    return;
  }
  if (s->h->on_request)
    s->h->on_request(s, req);
}

/* A response: it must answer a request of ours with that ref, by its own
 * response op or by a NACK. */
static void peer_response(struct session *s, const struct proto_pdu *resp)
{
  const struct window_entry *e = window_find(s->window, resp->ref);
  if (!e || (resp->op != PROTO_OP_NACK && resp->op != proto_response_op(e->tag & ~TAG_APP))) {
    s->stats.unknown_responses++;
    return;
  }
  struct window_entry req;
  window_answer(s->window, resp->ref, &req);
  s->stats.responses_received++;
  if (req.tag & TAG_APP) {
    s->app_outstanding--;
    if (s->h->on_response)
      s->h->on_response(s, req.cookie, resp);
    return;
  }
  switch (req.tag) {
  case PROTO_OP_BIND:
    bind_answered(s, resp);
    break;
  case PROTO_OP_KEEPALIVE:
    s->keepalive_outstanding = false;
    break;
  case PROTO_OP_UNBIND:
    lost(s, "unbound");
    break;
  default:
    break;
  }
}

static void dispatch(struct session *s, struct proto_pdu *pdu)
{
  switch (pdu->op) {
  case PROTO_OP_BIND:
    s->stats.requests_received++;
    peer_bind(s, pdu);
    break;
  case PROTO_OP_SUBMIT:
  case PROTO_OP_DELIVER:
  case PROTO_OP_QUERY:
  case PROTO_OP_CANCEL:
  case PROTO_OP_REPLACE:
    s->stats.requests_received++;
    peer_request(s, pdu);
    break;
  case PROTO_OP_KEEPALIVE:
    s->stats.requests_received++;
    answer(s, pdu, PROTO_OP_KEEPALIVE_RESP, PROTO_OK);
    break;
  case PROTO_OP_UNBIND:
    s->stats.requests_received++;
    answer(s, pdu, PROTO_OP_UNBIND_RESP, PROTO_OK);
    s->state = SESSION_UNBINDING;
    set_closing(s, "unbound by peer", false);
    break;
  case PROTO_OP_OTHER:
    s->stats.requests_received++;
    answer(s, pdu, PROTO_OP_OTHER, PROTO_E_UNSUPPORTED);
    break;
  case PROTO_OP_BIND_RESP:
  case PROTO_OP_SUBMIT_RESP:
  case PROTO_OP_DELIVER_RESP:
  case PROTO_OP_KEEPALIVE_RESP:
  case PROTO_OP_UNBIND_RESP:
  case PROTO_OP_QUERY_RESP:
  case PROTO_OP_CANCEL_RESP:
  case PROTO_OP_REPLACE_RESP:
  case PROTO_OP_NACK:
    peer_response(s, pdu);
    break;
  case PROTO_OP_NONE:
    break;
  }
}

/* The stream cannot be resynchronised: answer what decode says, then close. */
static void unsplittable(struct session *s)
{
  int rc = s->proto->decode(&s->pdu, iobuf_head(&s->in), iobuf_len(&s->in), s->scratch,
                            &s->cfg.proto_options);
  if (rc < 0 && s->pdu.op != PROTO_OP_NONE)
    send_response(s, &s->pdu);
  set_closing(s, "unreadable input", false);
}

/* Splits and handles every complete frame in the input buffer. */
static void process_input(struct session *s)
{
  while (!s->closing && !s->held && iobuf_len(&s->in)) {
    size_t skip = 0;
    int len = s->proto->split(iobuf_head(&s->in), iobuf_len(&s->in), &s->cfg.proto_options,
                              &skip);
    if (len == 0)
      return;
    if (len < 0) {
      s->stats.decode_errors++;
      if (!skip) {
        unsplittable(s);
        return;
      }
      iobuf_consume(&s->in, skip < iobuf_len(&s->in) ? skip : iobuf_len(&s->in));
      continue;
    }
    if (s->proto->decode(&s->pdu, iobuf_head(&s->in), (size_t)len, s->scratch,
                         &s->cfg.proto_options) < 0) {
      s->stats.decode_errors++;
      if (s->pdu.op != PROTO_OP_NONE)
        send_response(s, &s->pdu);
    } else {
      dispatch(s, &s->pdu);
      if (gone(s))
        return;
    }
    /* Consumed only now: the PDU may view the frame while it is handled. */
    iobuf_consume(&s->in, (size_t)len);
  }
}

/* TLS holds decrypted input: handled as if the socket had turned readable. */
static void read_deferred(struct evloop *loop, void *arg)
{
  struct session *s = arg;
  if (!gone(s) && !s->read_paused && !s->held)
    on_io(loop, s->fd, EVLOOP_READ, s);
}

static void read_input(struct session *s)
{
  for (int calls = 0; calls < READ_CALLS_MAX; calls++) {
    if (s->read_paused || s->held)
      return;   /* an event the loop had already collected */
    if (output_pauses(s)) {
      s->read_paused = true;
      update_interest(s);
      return;
    }
    ssize_t n = s->tls ? tls_read_into(s->tls, &s->in, READ_CHUNK, s->io_error, sizeof s->io_error)
                       : iobuf_read_fd(&s->in, s->fd, READ_CHUNK);
    if (n == 0) {
      lost(s, s->closing ? s->close_reason : "connection closed by peer");
      return;
    }
    if (n < 0) {
      if (s->tls && s->io_error[0]) {   /* tls_read_into's own failure, not an empty socket */
        lost(s, s->io_error);
        return;
      }
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        char reason[REASON_LEN];
        snprintf(reason, sizeof reason, "read: %s", strerror(errno));
        lost(s, reason);
      }
      return;
    }
    s->stats.bytes_in += (uint64_t)n;
    if (s->closing)
      iobuf_consume(&s->in, iobuf_len(&s->in)); /* lingering: only waiting for the end */
    else
      process_input(s);
    if (gone(s) || s->held)
      return;
    /* A short read emptied the socket: spare the read that would say EAGAIN.
     * (A TLS read returns one record at a time.) */
    if (!s->tls && (size_t)n < READ_CHUNK)
      return;
  }
  /* Input TLS holds already decrypted makes the socket readable no more. */
  if (s->tls && tls_pending(s->tls) && evloop_defer(s->loop, read_deferred, s) < 0)
    lost(s, "out of memory");
}

/* ---- the application's side ---- */

static uint64_t rate_now_ns(const struct session *s)
{
  return now_ms(s) * 1000000u;
}

static bool sending(const struct session *s)
{
  return s->state == SESSION_BOUND && !s->stopping && !s->closing && !gone(s);
}

unsigned session_can_send(struct session *s)
{
  if (!sending(s))
    return 0;
  unsigned room = s->app_window - s->app_outstanding;
  if (room && s->rate.rate > 0) {
    if (ratelimit_wait_ns(&s->rate, rate_now_ns(s)) > 0)
      room = 0;
    else if (s->rate.tokens < room)
      room = (unsigned)s->rate.tokens;
  }
  if (!room)
    s->ready_wanted = true;
  return room;
}

int session_request(struct session *s, struct proto_pdu *req, void *cookie)
{
  if (!sending(s))
    return -1;
  if (s->app_outstanding >= s->app_window ||
      (s->rate.rate > 0 && ratelimit_wait_ns(&s->rate, rate_now_ns(s)) > 0)) {
    s->ready_wanted = true;
    return -1;
  }
  if (send_request(s, req, cookie, TAG_APP | req->op) == -1)
    return -1;
  ratelimit_take(&s->rate, rate_now_ns(s), 1);
  s->app_outstanding++;
  return 0;
}

int session_respond(struct session *s, const struct proto_pdu *resp)
{
  if (gone(s) || s->connecting || s->shut)
    return -1;
  return send_response(s, resp);
}

static void maybe_ready(struct session *s)
{
  if (s->ready_wanted && session_can_send(s) > 0) {
    s->ready_wanted = false;
    if (s->h->on_ready)
      s->h->on_ready(s);
  }
}

/* Stopping and drained: unbind, or (UCP) just close. */
static void stop_progress(struct session *s)
{
  if (!s->stopping || s->state != SESSION_BOUND || s->closing || s->app_outstanding)
    return;
  s->state = SESSION_UNBINDING;
  if (!s->proto->has_unbind || runtime_request(s, PROTO_OP_UNBIND) == -1)
    set_closing(s, "stopped", false);
}

/* ---- events ---- */

static void on_io(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct session *s = arg;
  if (s->connecting) {
    connect_done(s);
    return;
  }
  if (s->handshaking) {
    handshake_step(s);
    return;
  }
  if (events & EVLOOP_READ) {
    read_input(s);
    if (!gone(s) && s->tls_write_wants_read) {
      s->tls_write_wants_read = false;
      flush(s);
    }
    if (gone(s))
      return;
    maybe_ready(s);
    if (gone(s))
      return;
    stop_progress(s);
  }
  if ((events & EVLOOP_WRITE) && s->write_armed)
    flush(s);
}

/* A hold is over: the frames read meanwhile are handled, then the socket
 * is watched again (and TLS's decrypted input read, which no event
 * announces). */
static void end_hold(struct session *s)
{
  s->held = false;
  process_input(s);
  if (gone(s) || s->held)
    return;
  update_interest(s);
  if (s->tls && tls_pending(s->tls) && evloop_defer(s->loop, read_deferred, s) < 0)
    lost(s, "out of memory");
}

void session_hold_input(struct session *s, unsigned ms)
{
  if (gone(s) || s->state != SESSION_BOUND || s->closing)
    return;
  if (ms > SESSION_HOLD_MAX_MS)
    ms = SESSION_HOLD_MAX_MS;
  uint64_t until = now_ms(s) + ms;
  if (s->held && until <= s->held_until_ms)
    return;
  s->held_until_ms = until;
  if (!s->held) {
    s->held = true;
    update_interest(s);
  }
}

bool session_held(const struct session *s)
{
  return s->held;
}

/* Requests of ours older than the response time-out, one at a time (a
 * callback may destroy the session, and none may go unreported). */
static void expire(struct session *s)
{
  struct window_entry e;
  while (window_expire(s->window, now_ms(s), s->cfg.response_timeout_ms, &e, 1)) {
    s->stats.timeouts++;
    if (!(e.tag & TAG_APP)) {
      lost(s, e.tag == PROTO_OP_KEEPALIVE ? "keep-alive not answered" : "unbind not answered");
      return;
    }
    s->app_outstanding--;
    if (s->h->on_unanswered)
      s->h->on_unanswered(s, e.cookie, SESSION_LOST_TIMEOUT);
    if (gone(s))
      return;
  }
}

static void on_tick(struct evloop *loop, void *arg)
{
  struct session *s = arg;
  uint64_t now = now_ms(s);
  if (s->closing) {
    if (now - s->since_ms >= s->cfg.response_timeout_ms)
      lost(s, s->close_reason);
    return;
  }
  if (s->connecting) {
    if (now - s->since_ms >= s->cfg.bind_timeout_ms)
      lost(s, "connect timed out");
    return;
  }
  if (s->handshaking) {
    if (now - s->since_ms >= s->cfg.bind_timeout_ms)
      lost(s, "TLS handshake timed out");
    return;
  }
  if (iobuf_len(&s->out) && now - s->out_moved_ms >= s->cfg.response_timeout_ms) {
    char reason[REASON_LEN];
    snprintf(reason, sizeof reason, "peer not reading: %zu bytes unsent, none written for %u ms",
             iobuf_len(&s->out), s->cfg.response_timeout_ms);
    lost(s, reason);
    return;
  }
  switch (s->state) {
  case SESSION_DISCONNECTED:
    if (s->cfg.role == SESSION_CLIENT && now >= s->reconnect_at_ms)
      start_connect(s);
    return;
  case SESSION_OPEN:
  case SESSION_BINDING:
    if (s->stopping)
      lost(s, "stopped");
    else if (now - s->since_ms >= s->cfg.bind_timeout_ms)
      lost(s, s->state == SESSION_OPEN ? "no bind received" : "bind not answered");
    return;
  case SESSION_BOUND:
  case SESSION_UNBINDING:
    expire(s);
    if (gone(s))
      return;
    if (s->held && now >= s->held_until_ms) {
      end_hold(s);
      if (gone(s))
        return;
    }
    if (s->state == SESSION_BOUND && !s->keepalive_outstanding &&
        now - s->last_sent_ms >= s->cfg.keepalive_ms && runtime_request(s, PROTO_OP_KEEPALIVE) == 0) {
      s->keepalive_outstanding = true;
      s->stats.keepalives_sent++;
    }
    maybe_ready(s);
    if (gone(s))
      return;
    stop_progress(s);
    return;
  case SESSION_CLOSED:
    return;
  }
}

/* ---- life cycle ---- */

static unsigned or_default(unsigned value, unsigned fallback)
{
  return value ? value : fallback;
}

static struct session *session_new(struct evloop *loop, const struct session_config *cfg,
                                   const struct session_handler *h, void *app)
{
  struct session *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->loop = loop;
  s->proto = cfg->proto;
  s->h = h;
  s->app = app;
  s->fd = -1;
  s->cfg = *cfg;
  s->cfg.connect = s->cfg.user = s->cfg.password = s->cfg.tls_server_name = NULL;
  if ((s->tls_ctx = cfg->tls))
    tls_ctx_ref(s->tls_ctx);
  s->cfg.response_timeout_ms = or_default(cfg->response_timeout_ms, 30000);
  s->cfg.keepalive_ms = or_default(cfg->keepalive_ms, 30000);
  s->cfg.bind_timeout_ms = or_default(cfg->bind_timeout_ms, 10000);
  s->cfg.reconnect_min_ms = or_default(cfg->reconnect_min_ms, 500);
  s->cfg.reconnect_max_ms = or_default(cfg->reconnect_max_ms, 30000);
  if (s->cfg.reconnect_max_ms < s->cfg.reconnect_min_ms)
    s->cfg.reconnect_max_ms = s->cfg.reconnect_min_ms;
  s->backoff_ms = s->cfg.reconnect_min_ms;
  s->jitter_state = clock_now_ns() ^ (uintptr_t)s ^ 0x9E3779B97F4A7C15ull;
  s->bind_mode = cfg->bind_mode;
  s->since_ms = s->last_sent_ms = s->out_moved_ms = now_ms(s);
  snprintf(s->user, sizeof s->user, "%s", cfg->user ? cfg->user : "");
  iobuf_init(&s->in);
  iobuf_init(&s->out);

  /* One slot beyond the application's window is the runtime's own. */
  unsigned limit = s->proto->window_max < s->proto->ref_count ? s->proto->window_max
                                                               : s->proto->ref_count;
  s->app_window = cfg->window ? cfg->window : 1;
  if (limit > 1 && s->app_window > limit - 1)
    s->app_window = limit - 1;
  if (s->app_window >= WINDOW_CAPACITY_MAX)
    s->app_window = WINDOW_CAPACITY_MAX - 1;
  /* Tokens for 20 ms: smooth, yet no loss between loop iterations. */
  ratelimit_init(&s->rate, cfg->max_rate, cfg->max_rate / 50, rate_now_ns(s));

  s->cfg.proto_options.smsc_side = cfg->role == SESSION_SERVER;
  s->cfg.proto_options.window = s->app_window;
  s->window = window_create(s->proto->ref_first, s->proto->ref_count, s->app_window + 1);
  s->scratch = malloc(PROTO_SCRATCH_LEN);
  if (!s->window || !s->scratch || evloop_tick(loop, on_tick, s) == -1) {
    window_destroy(s->window);
    free(s->scratch);
    tls_ctx_unref(s->tls_ctx);
    free(s);
    return NULL;
  }
  return s;
}

/* The name a client's TLS sends and verifies: name, or the host it connects to. */
static void set_server_name(struct session *s, const char *name)
{
  if (name && *name) {
    snprintf(s->server_name, sizeof s->server_name, "%s", name);
  } else {
    const char *host;
    size_t len = net_peer_host(s->peer, &host);
    snprintf(s->server_name, sizeof s->server_name, "%.*s", (int)len, host);
  }
}

void session_set_tls(struct session *s, struct tls_ctx *ctx, const char *server_name)
{
  if (ctx)
    tls_ctx_ref(ctx);
  tls_ctx_unref(s->tls_ctx);
  s->tls_ctx = ctx;
  if (s->cfg.role == SESSION_CLIENT)
    set_server_name(s, server_name);
}

struct session *session_client_create(struct evloop *loop, const struct session_config *cfg,
                                      const struct session_handler *h, void *app)
{
  struct session *s = session_new(loop, cfg, h, app);
  if (!s)
    return NULL;
  s->state = SESSION_DISCONNECTED;
  snprintf(s->peer, sizeof s->peer, "%s", cfg->connect ? cfg->connect : "");
  snprintf(s->password, sizeof s->password, "%s", cfg->password ? cfg->password : "");
  set_server_name(s, cfg->tls_server_name);
  /* The first tick connects: callbacks never run inside this call. */
  s->reconnect_at_ms = now_ms(s);
  return s;
}

/* A server session on fd: with tls (handed over: its handshake done), or
 * with a TLS handshake to make when the configuration asks for TLS. */
static struct session *server_new(struct evloop *loop, int fd, struct tls_conn *tls, const char *peer,
                                  const struct session_config *cfg, const struct session_handler *h, void *app)
{
  struct session *s = session_new(loop, cfg, h, app);
  if (s && !tls && s->tls_ctx && !(tls = tls_conn_create(s->tls_ctx, fd, true, NULL))) {
    session_destroy(s);
    s = NULL;
  }
  if (!s || evloop_add(loop, fd, EVLOOP_READ, on_io, s) == -1) {
    if (s)
      session_destroy(s);
    tls_conn_free(tls);
    close(fd);
    return NULL;
  }
  s->fd = fd;
  s->tls = tls;
  s->handshaking = tls && !tls_handshake_done(tls);
  s->state = SESSION_OPEN;
  snprintf(s->peer, sizeof s->peer, "%s", peer ? peer : "");
  return s;
}

struct session *session_server_create(struct evloop *loop, int fd, const char *peer,
                                      const struct session_config *cfg,
                                      const struct session_handler *h, void *app)
{
  return server_new(loop, fd, NULL, peer, cfg, h, app);
}

int session_hand_over(struct session *s, int *fd, struct tls_conn **tls, uint8_t **input, size_t *input_len)
{
  if (s->fd < 0 || s->cfg.role != SESSION_SERVER || s->closing || s->handshaking)
    return -1;
  /* Answers of ours still queued (a keep-alive's before the bind) go now,
   * or the connection stays: they must reach the peer before the next. */
  while (iobuf_len(&s->out) && write_out(s) > 0)
    ;
  if (iobuf_len(&s->out))
    return -1;
  size_t len = iobuf_len(&s->in);
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy)
    return -1;
  memcpy(copy, iobuf_head(&s->in), len);
  evloop_remove(s->loop, s->fd);
  *fd = s->fd;
  *tls = s->tls;
  *input = copy;
  *input_len = len;
  s->fd = -1;   /* not closed by the destroy */
  s->tls = NULL;
  session_destroy(s);
  return 0;
}

static void adopted_input(struct evloop *loop, void *arg)
{
  struct session *s = arg;
  (void)loop;
  if (!gone(s))
    process_input(s);
  /* What TLS had decrypted beyond it: the socket will not say so. */
  if (!gone(s) && s->tls && tls_pending(s->tls))
    read_input(s);
}

struct session *session_server_adopt(struct evloop *loop, int fd, struct tls_conn *tls, const char *peer,
                                     const struct session_config *cfg, const struct session_handler *h,
                                     void *app, const uint8_t *input, size_t input_len)
{
  struct session *s = server_new(loop, fd, tls, peer, cfg, h, app);
  if (!s)
    return NULL;
  bool pending = tls && tls_pending(tls);
  if ((input_len || pending) &&
      ((input_len && iobuf_append(&s->in, input, input_len) < 0) || evloop_defer(loop, adopted_input, s) < 0)) {
    session_destroy(s);
    return NULL;
  }
  return s;
}

static void free_deferred(struct evloop *loop, void *arg)
{
  struct session *s = arg;
  window_destroy(s->window);
  iobuf_destroy(&s->in);
  iobuf_destroy(&s->out);
  free(s->scratch);
  tls_ctx_unref(s->tls_ctx);
  free(s);
}

void session_destroy(struct session *s)
{
  if (!s || s->destroyed)
    return;
  s->destroyed = true;
  s->state = SESSION_CLOSED;
  evloop_untick(s->loop, on_tick, s);
  close_socket(s);
  report_outstanding(s);
  /* Callers up the stack may still hold s: free it after this iteration
   * (after any flush already deferred for it). Without memory for the
   * deferral it is leaked rather than freed under a caller's feet. */
  evloop_defer(s->loop, free_deferred, s);
}

void session_stop(struct session *s)
{
  if (s->destroyed || s->stopping || s->state == SESSION_CLOSED)
    return;
  s->stopping = true;
  if (s->fd < 0 || s->connecting) {
    close_socket(s);
    s->state = SESSION_CLOSED;
    return;
  }
  /* Bound: unbind now if drained; other states close from the tick, so no
   * callback runs inside this call. */
  stop_progress(s);
}

enum session_state session_state(const struct session *s)
{
  return s->state;
}

enum proto_bind_mode session_bind_mode(const struct session *s)
{
  return s->bind_mode;
}

const char *session_user(const struct session *s)
{
  return s->user;
}

const char *session_peer(const struct session *s)
{
  return s->peer;
}

uint64_t session_reconnect_in_ms(const struct session *s)
{
  if (s->cfg.role != SESSION_CLIENT || s->state != SESSION_DISCONNECTED)
    return 0;
  uint64_t now = now_ms(s);
  return s->reconnect_at_ms > now ? s->reconnect_at_ms - now : 0;
}

enum proto_status session_bind_refused(const struct session *s, uint32_t *raw_status)
{
  if (raw_status)
    *raw_status = s->bind_refusal_raw;
  return s->bind_refusal;
}

const struct tls_conn *session_tls(const struct session *s)
{
  return s->handshaking ? NULL : s->tls;
}

unsigned session_outstanding(const struct session *s)
{
  return s->app_outstanding;
}

void *session_app(const struct session *s)
{
  return s->app;
}

const struct session_stats *session_stats(const struct session *s)
{
  return &s->stats;
}
