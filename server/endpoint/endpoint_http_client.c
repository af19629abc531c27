/* endpoint_http_client.c - the endpoint of HTTP client connectors
 * (connectors/http/http_client.h): a provider's HTTP interface, or an
 * application that MOs are pushed to (Kannel's get-url). Each instance owns
 * a client on its loop and sends what the out queue holds, as many at once
 * as its window allows; the provider's answer is handled as an SMSC's
 * submit response, and an application's answer to an MO may be a reply.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <string.h>
#include "clock.h"
#include "connector_internal.h"
#include "http_client.h"
#include "charset.h"
#include "sms_text.h"
#include "strutil.h"

/* An application's answer to an MO pushed to it, as Kannel's get-url
 * services have it: the body's text goes back to the handset, from the
 * number the MO was sent to, on the SMSC connector it came in on. An empty
 * body sends nothing. */
static void reply_to_mo(struct instance *in, const struct msg *mo, const char *smsc, const char *text, size_t len)
{
  static const char blank[] = " \t\r\n";
  uint8_t data[SMS_TEXT_SEGMENTS_MAX * 160];
  while (len && strchr(blank, text[0]))
    text++, len--;
  while (len && strchr(blank, text[len - 1]))
    len--;
  if (!len)
    return;
  int coding = sms_text_choose_coding(text, len);
  int n = coding == SMS_TEXT_GSM7   ? charset_utf8_to_gsm(data, sizeof data, text, len, 1)
          : coding == SMS_TEXT_UCS2 ? charset_utf8_to_ucs2(data, sizeof data, text, len)
                                    : -1;
  if (n < 0) {
    LOGW(in->log, "reply to the MO from %s not sent: %s", mo->src.addr,
         coding < 0 ? "the answer is not UTF-8 text" : "the answer is too long for an SMS");
    return;
  }
  struct msg m;
  memset(&m, 0, sizeof m);
  m.src = mo->dst;
  m.dst = mo->src;
  m.coding = (uint8_t)coding;
  m.dcs = (uint8_t)coding;
  m.data = data;
  m.data_len = (uint32_t)n;
  struct reply rp = { .none = true, .route_to = smsc };
  connector_accept_message(in, &m, "", -1, &rp);
}

/* The SMSC connector an MO came in on (its handset is its sender, Kannel's
 * %p), or NULL for a message that came from a client. */
static struct connector *mo_smsc(struct core *core, const struct msg *m)
{
  unsigned from = m->origin.connector;
  struct connector *origin = from < core->n_connectors ? core_connector(core, from) : NULL;
  return origin && !origin->ops->account_queues ? origin : NULL;
}

/* In the instance's thread: the provider answered (or not). */
static void http_client_answered(void *arg, void *cookie, const struct http_client_result *r)
{
  struct instance *in = arg;
  struct qitem *it = cookie;
  struct connector *c = in->conn;
  struct connector *smsc = mo_smsc(c->core, it->msg);
  if (c->cfg->reply_sms && r->status == PROTO_OK && smsc)
    reply_to_mo(in, it->msg, smsc->cfg->name, r->answer, r->answer_len);
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = PROTO_OP_SUBMIT_RESP;
  resp.status = r->status;
  resp.raw_status = (uint32_t)r->http_status;
  str_copy(resp.msgid, sizeof resp.msgid, r->msgid);
  uint64_t skipped;
  if (r->status != PROTO_OK && r->http_status) {
    LOGD(in->log, "message %" PRIu64 ": provider answered %ld: %s", it->msg->id, r->http_status, r->detail);
  } else if (r->status != PROTO_OK) {
    /* No answer at all (refused, timed out, a certificate that does not
     * verify): an operator's matter, said at most every 10 s. */
    connector_instance_error(in, "provider did not answer: %s", r->detail);
    if (log_every_due(&in->provider_log, evloop_now_ms(in->loop), 10000, &skipped))
      LOGW(in->log, "instance %u: the provider did not answer: %s (%" PRIu64 " more such since the last "
           "such line)", in->index, r->detail, skipped);
  }
  connector_response_in(in, it, &resp);
}

/* What q (the out queue) holds, as far as the client's window goes. */
static void pump_out(struct instance *in, struct queue *q)
{
  struct connector *c = in->conn;
  unsigned room;
  while (in->http_client && (room = http_client_room(in->http_client)) > 0) {
    struct qlist l = { 0 };
    if (!queue_take(q, room < PUMP_BATCH ? room : PUMP_BATCH, &l))
      return;
    for (struct qitem *it = l.head, *next; it; it = next) {
      next = it->next;
      if (!connector_may_send(in, it))
        continue;
      it->sent_ns = clock_now_ns();
      struct connector *smsc = mo_smsc(c->core, it->msg);
      int rc = http_client_submit(in->http_client, it->msg, smsc ? smsc->cfg->name : NULL, it);
      if (rc == HTTP_CLIENT_E_TEMPLATE) {
        LOGW(in->log, "message %" PRIu64 " does not fit the URL template: failed", it->msg->id);
        connector_give_up_message(in, it, MSG_STATE_REJECTED, 0);
      } else if (rc < 0) {
        connector_requeue_rest(q, it, l.tail);
        return;
      }
    }
  }
}

/* The out queue, unless the instance stops, is paused, or backs off after
 * a refusal (the connector's retry policy). */
static struct queue *out_source(struct instance *in)
{
  if (atomic_load(&in->phase) != PHASE_RUN || atomic_load(&in->conn->paused) ||
      in->paused_until_ms > evloop_now_ms(in->loop))
    return NULL;
  return &in->conn->out;
}

static unsigned client_room(struct instance *in)
{
  return in->http_client ? http_client_room(in->http_client) : 0;
}

static void http_client_send(struct instance *in)
{
  connector_send_from(in, out_source, pump_out, client_room);
}

static int http_client_started(struct connector *c, char *err, size_t err_len)
{
  (void)err, (void)err_len;
  LOGI(c->log, "sending to %s (http, %u instances)", c->cfg->url, c->n_instances);
  return 0;
}

static void http_client_run(struct instance *in)
{
  struct connector *c = in->conn;
  struct http_client_config hc = {
    .url = c->cfg->url, .method = (enum http_client_method)c->cfg->http_method,
    .body = c->cfg->body[0] ? c->cfg->body : NULL, .id_field = c->cfg->id_field[0] ? c->cfg->id_field : NULL,
    .smsc = c->cfg->name, .user = c->cfg->system_id[0] ? c->cfg->system_id : NULL,
    .password = c->cfg->password, .connections = c->cfg->connections, .window = c->cfg->window,
    .timeout_ms = c->cfg->response_timeout_ms,
    .tls = { .ca = c->cfg->tls.ca, .cert = c->cfg->tls.cert, .key = c->cfg->tls.key,
             .insecure = c->cfg->tls.enabled && !c->cfg->tls.verify_peer },
  };
  char why[TLS_ERR_LEN];
  in->http_client = http_client_create(in->loop, &hc, http_client_answered, in, why, sizeof why);
  if (!in->http_client)
    LOGE(in->log, "instance %u: cannot create its HTTP client: %s", in->index, why);
  atomic_store(&in->bound, in->http_client != NULL);
  queue_add_waiter(&c->out, in->loop, &in->ready);
  connector_instance_publish(in, true);
  evloop_run(in->loop);
  queue_remove_waiter(&c->out, in->loop);
  http_client_destroy(in->http_client);   /* what is outstanding comes back as temporary: requeued */
  in->http_client = NULL;
  atomic_store(&in->bound, false);
  connector_instance_end(in);
}

/* Stopping: nothing of its own to finish (what is outstanding is requeued
 * as its client ends). */
static void http_client_stop(struct instance *in)
{
  atomic_store(&in->bound, false);
}

static void http_client_describe(struct instance *in, struct connector_instance_info *i)
{
  i->state = atomic_load(&in->bound) ? "bound" : "down";
  i->peer[0] = i->bind[0] = '\0';
  str_copy(i->user, sizeof i->user, in->conn->cfg->system_id);
  i->window_used = 0;
  i->connected_since = 0;
}

const struct endpoint_ops endpoint_http_client = {
  .kind = "HTTP client",
  .to_application = true,
  .tls = ENDPOINT_TLS_OWN,
  .idle_state = "down",
  .started = http_client_started,
  .run = http_client_run,
  .stop = http_client_stop,
  .send = http_client_send,
  .describe = http_client_describe,
};
