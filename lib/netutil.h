/* netutil.h - TCP socket helpers. Errors come back as text in a caller buffer
 * (err, err_len; NETUTIL_ERR_LEN bytes hold any of them whole), so the
 * caller logs them with its own context.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_NETUTIL_H
#define EMG_NETUTIL_H

#include <netinet/in.h>
#include <stddef.h>

#define NETUTIL_ERR_LEN 256

/* Parses "HOST:PORT" (HOST a name or IPv4 address; "[::1]:PORT" for IPv6)
 * into addr. Returns 0, or -1 with err filled. */
int net_parse_addr(const char *hostport, struct sockaddr_storage *addr, socklen_t *addr_len,
                   char *err, size_t err_len);

/* A listening socket on hostport (SO_REUSEADDR, a generous backlog),
 * non-blocking. Returns the fd, or -1 with err filled. */
int net_listen(const char *hostport, char *err, size_t err_len);

/* A connected TCP socket to hostport, TCP_NODELAY set, left blocking until
 * connected (bounded by timeout_ms) and then made non-blocking.
 * Returns the fd, or -1 with err filled. */
int net_connect(const char *hostport, int timeout_ms, char *err, size_t err_len);

/* Accepts one pending connection as a non-blocking TCP_NODELAY socket.
 * Returns the fd, -1 when none is pending (errno EAGAIN) or on error. */
int net_accept(int listen_fd, char *peer, size_t peer_len);
/* sa as net_accept writes a peer: "HOST:PORT" ("?:0" for another family). */
void net_peer_text(const struct sockaddr *sa, char *peer, size_t peer_len);
/* The host part of such a peer ("[V6]:PORT" too: without the brackets):
 * its start in *host and its length. */
size_t net_peer_host(const char *peer, const char **host);

/* The local port a socket is bound to, or -1. */
int net_local_port(int fd);

int net_set_nonblocking(int fd);

/* Reads and drops what the peer sent already, 64 KiB at most, without
 * waiting: a socket closed with input unread sends a reset, which may keep
 * the peer from reading our last answer. */
void net_drop_pending_input(int fd);

#endif
