/* session.h - the connector runtime: one connection of any protocol.
 *
 * Written once for every protocol (the protocol plugs in through struct
 * proto_ops): the bind or login, a window of outstanding requests matched to
 * their responses by ref, response time-outs, keep-alives both ways, a
 * throughput limit, unbind, and for clients reconnects with exponential
 * back-off. The application (an emgd connector instance, emgload, emgsink)
 * sees only neutral PDUs, through struct session_handler.
 *
 * A session belongs to one evloop and one thread; it is never touched from
 * another. Output is buffered and written once per loop iteration; a peer
 * that lets SESSION_OUTPUT_MAX of it pile up is not read from until half of
 * it is written, and one that takes no byte of it for the response time-out
 * is dropped. The process must ignore SIGPIPE: a write to a peer that is
 * gone then fails with EPIPE, which the session reports as a lost
 * connection.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SESSION_H
#define EMG_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include "evloop.h"
#include "proto.h"
#include "tls.h"

/* Unsent output (bytes) at which a session stops reading from its peer. */
#define SESSION_OUTPUT_MAX (1024u * 1024u)

enum session_role {
  SESSION_CLIENT,          /* we connect and bind (ESME, UCP client) */
  SESSION_SERVER           /* we accept a connection and its bind (SMSC, UCP server) */
};

enum session_state {
  SESSION_DISCONNECTED,    /* client: waiting to reconnect; server: gone */
  SESSION_OPEN,            /* connected, not bound */
  SESSION_BINDING,         /* client: bind sent, no answer yet */
  SESSION_BOUND,
  SESSION_UNBINDING,       /* unbind sent or received; draining */
  SESSION_CLOSED           /* stopped for good */
};

/* Why a request of ours got no response. */
enum session_loss {
  SESSION_LOST_TIMEOUT,    /* no response within response_timeout_ms */
  SESSION_LOST_CLOSED      /* the connection went before the response */
};

struct session_config {
  const struct proto_ops *proto;
  struct proto_options proto_options;
  enum session_role role;
  const char *connect;             /* client: HOST:PORT (copied) */
  enum proto_bind_mode bind_mode;  /* client: what to bind as */
  const char *user;                /* client: system_id / login; server: the name its
                                      bind answers carry (SMPP system_id), may be NULL (copied) */
  const char *password;            /* client (copied); never logged */
  unsigned window;                 /* most of our requests outstanding (capped by proto) */
  unsigned response_timeout_ms;    /* 0 = 30000 */
  unsigned keepalive_ms;           /* idle time before we send a keep-alive; 0 = 30000 */
  unsigned bind_timeout_ms;        /* client: bind answer; server: bind arrival; 0 = 10000 */
  unsigned reconnect_min_ms;       /* client back-off, doubling up to max; 0 = 500 */
  unsigned reconnect_max_ms;       /* 0 = 30000 */
  double max_rate;                 /* requests per second this session sends; 0 = unlimited */
  struct tls_ctx *tls;             /* TLS on every connection (client: after the connect; server:
                                      before the bind, within bind_timeout_ms); NULL = plain TCP.
                                      The session keeps a reference. */
  const char *tls_server_name;     /* client: SNI and the name the certificate must carry;
                                      NULL = the host of connect (copied) */
};

struct session;

struct session_handler {
  /* Server: a bind arrived. Return PROTO_OK to accept, or the error to
   * refuse with (the session then closes). May be NULL: accept all. */
  enum proto_status (*on_bind)(struct session *s, const struct proto_pdu *bind);
  /* The session is bound (both roles). */
  void (*on_bound)(struct session *s);
  /* A SUBMIT or DELIVER from the peer, or (server) a QUERY, CANCEL or
   * REPLACE. The handler answers it with session_respond(), now or later
   * (same ref, the request's response op). */
  void (*on_request)(struct session *s, const struct proto_pdu *req);
  /* The response to one of our requests; cookie as given to session_request. */
  void (*on_response)(struct session *s, void *cookie, const struct proto_pdu *resp);
  /* One of our requests will get no response (see enum session_loss). */
  void (*on_unanswered)(struct session *s, void *cookie, enum session_loss why);
  /* Room opened in the window, or the rate limit lets more through: send more. */
  void (*on_ready)(struct session *s);
  /* The connection is gone (a client reconnects by itself afterwards
   * unless stopped); reason is for logs. */
  void (*on_disconnect)(struct session *s, const char *reason);
};

/* A client session: connects (now, and again after each loss) and binds.
 * app is the handler's own pointer (session_app). NULL on failure. */
struct session *session_client_create(struct evloop *loop, const struct session_config *cfg,
                                      const struct session_handler *h, void *app);

/* A server session on an accepted, non-blocking socket (the session owns fd
 * from now on); peer is the remote address for logs. NULL on failure. */
struct session *session_server_create(struct evloop *loop, int fd, const char *peer,
                                      const struct session_config *cfg,
                                      const struct session_handler *h, void *app);

/* Server, from inside on_bind: gives the connection up, to be carried on by
 * session_server_adopt in another loop (an emgd listener authenticates a
 * bind, then hands the connection to an instance). *fd gets the socket,
 * *tls its TLS (NULL for plain TCP; what it holds unread comes along) and
 * *input a copy of the unread input, the bind's own frame first (malloc'ed,
 * *input_len bytes). The session is destroyed without closing the socket.
 * Returns 0, or -1 with nothing changed (out of memory, or answers of ours
 * that the peer has not taken yet). */
int session_hand_over(struct session *s, int *fd, struct tls_conn **tls, uint8_t **input, size_t *input_len);

/* session_server_create for a connection given up by session_hand_over,
 * with its TLS (NULL: plain) and its input, which is handled at the end of
 * the loop's iteration (the callbacks never run before this returns). NULL
 * on failure (fd closed, tls freed). */
struct session *session_server_adopt(struct evloop *loop, int fd, struct tls_conn *tls, const char *peer,
                                     const struct session_config *cfg, const struct session_handler *h,
                                     void *app, const uint8_t *input, size_t input_len);

/* Sends a SUBMIT or DELIVER (or any request op); the session assigns its
 * ref. Returns 0, or -1 when not bound, the window is full or the rate limit
 * says wait (on_ready follows when it may go), or the PDU cannot be encoded. */
int session_request(struct session *s, struct proto_pdu *req, void *cookie);

/* Answers a request of the peer: resp->op and resp->ref set by the caller.
 * Returns 0 or -1 (the connection is gone or the PDU cannot be encoded). */
int session_respond(struct session *s, const struct proto_pdu *resp);

/* Requests that may be sent now: window room and rate tokens, 0 unless bound. */
unsigned session_can_send(struct session *s);

/* Graceful stop: no new requests, unbind (where the protocol has it) once
 * outstanding requests are answered or timed out, then close; on_disconnect
 * follows. A client does not reconnect afterwards. A session without a
 * connection at the time (a client waiting to reconnect, a server whose peer
 * left) is CLOSED at once, without a callback: its loss was reported. */
void session_stop(struct session *s);

/* Closes at once (outstanding requests reported through on_unanswered) and
 * frees the session. Safe to call from the session's own callbacks: the
 * memory is released at the end of the loop iteration. */
void session_destroy(struct session *s);

enum session_state session_state(const struct session *s);
enum proto_bind_mode session_bind_mode(const struct session *s);
const char *session_user(const struct session *s);   /* bound account */
const char *session_peer(const struct session *s);   /* "HOST:PORT" */
/* A client waiting to reconnect: milliseconds until its next attempt; 0
 * otherwise. */
uint64_t session_reconnect_in_ms(const struct session *s);
/* Client: the status with which the peer refused the bind of the last
 * connection (and in *raw_status, when not NULL, the protocol's own code,
 * for proto_describe), or PROTO_OK when it did not: the connection was
 * lost otherwise, or is still up. Meant for on_disconnect, to tell a bind
 * refused for its credentials, which a reconnect would not mend, from a
 * lost connection. */
enum proto_status session_bind_refused(const struct session *s, uint32_t *raw_status);
/* The connection's TLS, or NULL (plain TCP, or not connected). */
const struct tls_conn *session_tls(const struct session *s);

/* TLS for the connections to come (a reload): ctx (NULL = plain TCP; a
 * reference is kept) and, for a client, the name to send and verify
 * (NULL = the host of connect). The connection of the moment keeps its own. */
void session_set_tls(struct session *s, struct tls_ctx *ctx, const char *server_name);

/* Longest hold session_hold_input makes: short enough that the peer's
 * answers to our own requests (receipts) and its keep-alives, read after
 * it, are not timed out. */
#define SESSION_HOLD_MAX_MS 1000u

/* Server: the peer's requests are not read, nor those already read handled,
 * for the next ms milliseconds (at most SESSION_HOLD_MAX_MS), as an SMSC
 * slows a throttled ESME: for a client that keeps sending into a limit it
 * has reached (the handler refused one of its requests for it and says
 * when the limit frees). They wait in the socket and are handled in order
 * when the hold ends, at the first tick after it. Only for a bound session;
 * a later hold that ends sooner changes nothing. */
void session_hold_input(struct session *s, unsigned ms);
bool session_held(const struct session *s);

unsigned session_outstanding(const struct session *s);
void *session_app(const struct session *s);

/* Counters for status lines and summaries. PDUs of every op count,
 * the runtime's own (bind, keep-alive, unbind) included. */
struct session_stats {
  uint64_t requests_sent, responses_received, requests_received, responses_sent;
  uint64_t timeouts, keepalives_sent, reconnects, decode_errors;
  uint64_t bytes_in, bytes_out;
  uint64_t unknown_responses;      /* responses matching no request of ours: ignored */
  uint64_t tls_handshakes;         /* completed */
  uint64_t writes;                 /* flushes that moved bytes, each one write(2), or one per 16 KB
                                      TLS record (bytes_out / writes: batching) */
};
const struct session_stats *session_stats(const struct session *s);

#endif
