/* tool_util.c - option values, signals, text for records.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "charset.h"
#include "hexutil.h"
#include "sms_text.h"
#include "tls.h"
#include "tool_util.h"

int tool_parse_range(const char *text, uint64_t *min, uint64_t *max)
{
  char *end;
  errno = 0;
  unsigned long long a = strtoull(text, &end, 10), b;
  if (end == text || errno || text[0] == '-')
    return -1;
  if (*end == 0) {
    b = a;
  } else if (*end == '-') {
    const char *second = end + 1;
    b = strtoull(second, &end, 10);
    if (end == second || *end || errno || second[0] == '-')
      return -1;
  } else {
    return -1;
  }
  if (b < a)
    return -1;
  *min = a;
  *max = b;
  return 0;
}

int tool_parse_fraction(const char *text, double *out)
{
  char *end;
  double v = strtod(text, &end);
  if (end == text || *end || !(v >= 0 && v <= 1))
    return -1;
  *out = v;
  return 0;
}

int tool_parse_count(const char *text, uint64_t *out)
{
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || errno || v <= 0)
    return -1;
  if (*end == 'k' || *end == 'K') {
    v *= 1e3;
    end++;
  } else if (*end == 'M' || *end == 'm') {
    v *= 1e6;
    end++;
  }
  if (*end || v > 1e15)
    return -1;
  *out = (uint64_t)v;
  return *out ? 0 : -1;
}

int tool_parse_addr_pattern(const char *text, struct tool_addr_pattern *p)
{
  const char *colon = strchr(text, ':');
  size_t plen = colon ? (size_t)(colon - text) : strlen(text);
  if (plen >= sizeof p->prefix || plen > 20)
    return -1;
  for (size_t i = 0; i < plen; i++)
    if ((text[i] < '0' || text[i] > '9') && !(i == 0 && text[i] == '+'))
      return -1;
  memcpy(p->prefix, text, plen);
  p->prefix[plen] = 0;
  p->length = (unsigned)plen;
  if (colon) {
    char *end;
    long len = strtol(colon + 1, &end, 10);
    if (*end || len < (long)plen || len > 20)
      return -1;
    p->length = (unsigned)len;
  }
  return p->length ? 0 : -1;
}

void tool_addr_generate(const struct tool_addr_pattern *p, uint64_t *rng, char *out)
{
  size_t plen = strlen(p->prefix);
  memcpy(out, p->prefix, plen);
  for (size_t i = plen; i < p->length; i++)
    out[i] = (char)('0' + tool_rand(rng) % 10);
  out[p->length] = 0;
}

uint64_t tool_rand(uint64_t *state)
{
  uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

double tool_rand_unit(uint64_t *state)
{
  return (double)(tool_rand(state) >> 11) / 9007199254740992.0;
}

struct signal_watch {
  int fd;
  void (*fn)(int signo, void *arg);
  void *arg;
};

static void on_signalfd(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct signal_watch *w = arg;
  struct signalfd_siginfo info;
  while (read(fd, &info, sizeof info) == (ssize_t)sizeof info)
    w->fn((int)info.ssi_signo, w->arg);
}

int tool_signals(struct evloop *loop, void (*fn)(int signo, void *arg), void *arg)
{
  /* One watch per process, alive until exit. */
  static struct signal_watch watch;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
    return -1;
  signal(SIGPIPE, SIG_IGN);
  watch.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  watch.fn = fn;
  watch.arg = arg;
  if (watch.fd == -1)
    return -1;
  return evloop_add(loop, watch.fd, EVLOOP_READ, on_signalfd, &watch);
}

size_t tool_payload_utf8(const struct msg *m, char *out, size_t cap)
{
  int n;
  if (cap == 0)
    return 0;
  switch (m->coding) {
  case SMS_TEXT_GSM7:
    n = charset_gsm_to_utf8(out, cap - 1, m->data, m->data_len);
    break;
  case SMS_TEXT_UCS2:
    n = charset_ucs2_to_utf8(out, cap - 1, m->data, m->data_len);
    break;
  default:
    n = -1;
  }
  if (n < 0) {
    size_t octets = m->data_len < (cap - 1) / 2 ? m->data_len : (cap - 1) / 2;
    n = (int)hex_encode(out, m->data, octets);
  }
  for (int i = 0; i < n; i++)
    if (out[i] == '\t' || out[i] == '\n' || out[i] == '\r')
      out[i] = ' ';
  out[n] = 0;
  return (size_t)n;
}

bool tool_stderr_tty(void)
{
  return isatty(STDERR_FILENO) == 1;
}

bool tool_tls_option(struct tool_tls *t, int ch, const char *value)
{
  switch (ch) {
  case TOOL_OPT_TLS: t->on = true; return true;
  case TOOL_OPT_CA: t->ca = value; return true;
  case TOOL_OPT_CERT: t->cert = value; return true;
  case TOOL_OPT_KEY: t->key = value; return true;
  }
  return false;
}

struct tls_ctx *tool_tls_ctx(const struct tool_tls *t, bool server, const char *tool, bool *failed)
{
  *failed = false;
  if (!t->on) {
    if (t->ca || t->cert || t->key) {
      fprintf(stderr, "%s: --ca, --cert and --key go with --tls\n", tool);
      *failed = true;
    }
    return NULL;
  }
  /* A client always verifies the server; a server with --ca requires
   * client certificates. */
  struct tls_settings s = { .cert = t->cert, .key = t->key, .ca = t->ca,
                            .verify_peer = !server || (t->ca && *t->ca), .min_version = "1.2" };
  char err[TLS_ERR_LEN];
  struct tls_ctx *ctx = tls_ctx_create(&s, server, err, sizeof err);
  if (!ctx) {
    fprintf(stderr, "%s: --tls: %s\n", tool, err);
    *failed = true;
  }
  return ctx;
}
