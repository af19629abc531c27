/* netutil.c - TCP socket helpers.
 * SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "netutil.h"

#define LISTEN_BACKLOG 1024

int net_set_nonblocking(int fd)
{
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags == -1 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
    return -1;
  return 0;
}

void net_drop_pending_input(int fd)
{
  char sink[4096];
  for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
    ;
}

static void set_nodelay(int fd)
{
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int net_parse_addr(const char *hostport, struct sockaddr_storage *addr, socklen_t *addr_len,
                   char *err, size_t err_len)
{
  char host[256];
  const char *colon, *port_text;
  if (hostport[0] == '[') {
    const char *close = strchr(hostport, ']');
    if (!close || close[1] != ':') {
      snprintf(err, err_len, "bad address '%s': expected [IPV6]:PORT", hostport);
      return -1;
    }
    colon = close + 1;
    snprintf(host, sizeof host, "%.*s", (int)(close - hostport - 1), hostport + 1);
  } else {
    colon = strrchr(hostport, ':');
    if (!colon || colon == hostport) {
      snprintf(err, err_len, "bad address '%s': expected HOST:PORT", hostport);
      return -1;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
  }
  port_text = colon + 1;
  char *end;
  long port = strtol(port_text, &end, 10);
  if (*port_text == 0 || *end || port < 0 || port > 65535) {
    snprintf(err, err_len, "bad port in '%s'", hostport);
    return -1;
  }
  struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
  int rc = getaddrinfo(host, port_text, &hints, &res);
  if (rc != 0) {
    snprintf(err, err_len, "cannot resolve '%.128s': %s", host, gai_strerror(rc));
    return -1;
  }
  memcpy(addr, res->ai_addr, res->ai_addrlen);
  *addr_len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

int net_listen(const char *hostport, char *err, size_t err_len)
{
  struct sockaddr_storage addr;
  socklen_t len;
  int one = 1;
  if (net_parse_addr(hostport, &addr, &len, err, err_len) == -1)
    return -1;
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd == -1) {
    snprintf(err, err_len, "socket: %s", strerror(errno));
    return -1;
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&addr, len) == -1 || listen(fd, LISTEN_BACKLOG) == -1 ||
      net_set_nonblocking(fd) == -1) {
    snprintf(err, err_len, "listen on %s: %s", hostport, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

int net_connect(const char *hostport, int timeout_ms, char *err, size_t err_len)
{
  struct sockaddr_storage addr;
  socklen_t len;
  if (net_parse_addr(hostport, &addr, &len, err, err_len) == -1)
    return -1;
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd == -1) {
    snprintf(err, err_len, "socket: %s", strerror(errno));
    return -1;
  }
  if (connect(fd, (struct sockaddr *)&addr, len) == -1) {
    if (errno != EINPROGRESS)
      goto fail;
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int rc = poll(&p, 1, timeout_ms);
    if (rc == 0)
      errno = ETIMEDOUT;
    if (rc <= 0)
      goto fail;
    int soerr = 0;
    socklen_t slen = sizeof soerr;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen);
    if (soerr) {
      errno = soerr;
      goto fail;
    }
  }
  set_nodelay(fd);
  return fd;
fail:
  snprintf(err, err_len, "connect to %s: %s", hostport, strerror(errno));
  close(fd);
  return -1;
}

int net_accept(int listen_fd, char *peer, size_t peer_len)
{
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  int fd = accept4(listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd == -1)
    return -1;
  set_nodelay(fd);
  if (peer && peer_len)
    net_peer_text((struct sockaddr *)&addr, peer, peer_len);
  return fd;
}

void net_peer_text(const struct sockaddr *sa, char *peer, size_t peer_len)
{
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa && sa->sa_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (sa && sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  snprintf(peer, peer_len, "%s:%d", host, port);
}

size_t net_peer_host(const char *peer, const char **host)
{
  const char *colon = strrchr(peer, ':');
  size_t len = colon ? (size_t)(colon - peer) : strlen(peer);
  if (len >= 2 && peer[0] == '[' && peer[len - 1] == ']') {
    peer++;
    len -= 2;
  }
  *host = peer;
  return len;
}

int net_local_port(int fd)
{
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  if (getsockname(fd, (struct sockaddr *)&addr, &len) == -1)
    return -1;
  if (addr.ss_family == AF_INET)
    return ntohs(((struct sockaddr_in *)&addr)->sin_port);
  if (addr.ss_family == AF_INET6)
    return ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
  return -1;
}
