/* http_edge.c - request framing and body limits for the libmicrohttpd
 * servers. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include "http_edge.h"

struct framing {
  const char *length;         /* the first Content-Length */
  bool lengths_differ;
  bool encoded;               /* a Transfer-Encoding */
};

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
  struct framing *f = cls;
  (void)kind;
  if (!value)
    value = "";
  if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
    if (f->length && strcmp(f->length, value) != 0)
      f->lengths_differ = true;
    f->length = value;
  } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
    f->encoded = true;
  }
  return MHD_YES;
}

bool http_edge_framing_ok(struct MHD_Connection *conn)
{
  struct framing f = { NULL, false, false };
  MHD_get_connection_values(conn, MHD_HEADER_KIND, framing_header, &f);
  return !f.lengths_differ && !(f.length && f.encoded);
}

enum MHD_Result http_edge_refuse_framing(struct MHD_Connection *conn, const char *type,
                                         const char *text)
{
  struct MHD_Response *resp =
    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_BAD_REQUEST, resp);
  MHD_destroy_response(resp);
  return rc;
}

enum MHD_Result http_edge_refuse_body(struct MHD_Connection *conn, const char *type,
                                      const char *text)
{
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  char answer[512];
  int n = snprintf(answer, sizeof answer,
                   "HTTP/1.1 413 Content Too Large\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n%s",
                   type, strlen(text), text);
  if (ci && n > 0 && (size_t)n < sizeof answer) {
    /* Best effort: the socket's buffer is empty at this point, and a
     * client that cannot take 200 bytes only misses the reason. */
    if (send(ci->connect_fd, answer, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
      shutdown(ci->connect_fd, SHUT_WR);
  }
  return MHD_NO;
}
