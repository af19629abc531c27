/* plugin_host.c - plugins loaded with dlopen; each gateway call builds one
 * view of the message, then every plugin's hook is called on it in turn,
 * timed and checked, so that a plugin's failure costs the message its
 * changes and nothing else.
 *
 * Hooks write addresses into the view's own buffers, never into the
 * struct msg: what a failed or late hook wrote is undone from a copy taken
 * before the call, and the message gets the result only once every plugin
 * has accepted it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "charset.h"
#include "clock.h"
#include "log.h"
#include "plugin_host.h"
#include "sms_text.h"

enum hook {
  HOOK_BEFORE_RECEIVE,
  HOOK_ROUTE,
  HOOK_BEFORE_SEND,
  HOOK_AFTER_SEND,
  HOOK_AFTER_DLR,
  HOOK_COUNT
};

static const char *const hook_names[HOOK_COUNT] = {
  [HOOK_BEFORE_RECEIVE] = "before_receive", [HOOK_ROUTE] = "route",
  [HOOK_BEFORE_SEND] = "before_send", [HOOK_AFTER_SEND] = "after_send",
  [HOOK_AFTER_DLR] = "after_dlr",
};

struct plugin {
  /* Every connector instance thread adds to these. */
  _Atomic uint64_t calls, refusals, flagged, errors, timeouts;
  const struct emg_plugin *ops;
  void *state;
  void *handle;                   /* dlopen's */
  uint64_t timeout_ns;
  bool refuse_on_error;
  struct log_category *log;
  char name[CONFIG_NAME_LEN];
  char path[CONFIG_PATH_LEN];
};

struct plugin_host {
  struct plugin *plugins;
  unsigned n_plugins;
  bool has[HOOK_COUNT];           /* some plugin has the hook: else a call costs one test */
  /* The connectors' names, by index in the config: route's targets are
   * checked against them, and a message's origin index is named by them. */
  char (*connectors)[CONFIG_NAME_LEN];
  unsigned n_connectors;
};

/* ---- loading ---- */

/* Appends one line to err, as far as errlen allows. */
static void __attribute__((format(printf, 3, 4)))
add_error(char *err, size_t errlen, const char *fmt, ...)
{
  size_t used = errlen ? strnlen(err, errlen - 1) : 0;
  if (used + 2 >= errlen)
    return;
  if (used)
    err[used++] = '\n';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + used, errlen - used, fmt, ap);
  va_end(ap);
}

static bool hook_present(const struct emg_plugin *ops, enum hook hook)
{
  switch (hook) {
  case HOOK_BEFORE_RECEIVE: return ops->before_receive != NULL;
  case HOOK_ROUTE: return ops->route != NULL;
  case HOOK_BEFORE_SEND: return ops->before_send != NULL;
  case HOOK_AFTER_SEND: return ops->after_send != NULL;
  case HOOK_AFTER_DLR: return ops->after_dlr != NULL;
  case HOOK_COUNT: break;
  }
  return false;
}

/* Loads plugin i of cfg into *p and runs its init. Returns 0, or -1 with
 * the reason appended to err and nothing left open. */
static int plugin_open(struct plugin *p, const struct config *cfg, unsigned i, char *err,
                       size_t errlen)
{
  const struct config_plugin *c = &cfg->plugins[i];
  int rc = -1;
  snprintf(p->name, sizeof p->name, "%s", c->name);
  snprintf(p->path, sizeof p->path, "%s", c->path);
  p->timeout_ns = (uint64_t)c->timeout_ms * 1000000u;
  p->refuse_on_error = c->on_error == CONFIG_PLUGIN_REFUSE;
  /* dlopen looks a bare name up in the library path; a plugin's path is a
   * file, relative to where emgd runs, as spool_dir is. */
  char file[CONFIG_PATH_LEN + 2];
  snprintf(file, sizeof file, "%s%s", strchr(c->path, '/') ? "" : "./", c->path);
  dlerror();
  p->handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!p->handle) {
    add_error(err, errlen, "%s:%d: plugins.[%u].path: cannot load %s: %s", cfg->path, c->line, i,
              c->path, dlerror());
    goto out;
  }
  const struct emg_plugin *ops = dlsym(p->handle, EMG_PLUGIN_SYMBOL);
  if (!ops) {
    add_error(err, errlen, "%s:%d: plugins.[%u].path: %s is no emg plugin (no symbol %s): %s",
              cfg->path, c->line, i, c->path, EMG_PLUGIN_SYMBOL, dlerror());
    goto out;
  }
  if (ops->abi_version != EMG_PLUGIN_ABI_VERSION) {
    add_error(err, errlen,
              "%s:%d: plugins.[%u].path: %s was built for plugin ABI version %u, this emgd loads "
              "version %u: rebuild it against this plugins/plugin.h",
              cfg->path, c->line, i, c->path, ops->abi_version, EMG_PLUGIN_ABI_VERSION);
    goto out;
  }
  struct emg_plugin_setting settings[CONFIG_PLUGIN_SETTINGS_MAX];
  for (unsigned s = 0; s < c->n_settings; s++)
    settings[s] = (struct emg_plugin_setting){ c->settings[s].key, c->settings[s].value };
  char why[PLUGIN_HOST_REASON_LEN] = "";
  if (ops->init && ops->init(settings, c->n_settings, &p->state, why, sizeof why) != 0) {
    why[sizeof why - 1] = '\0';
    add_error(err, errlen, "%s:%d: plugins.[%u]: %s: %s", cfg->path, c->line, i, p->name,
              why[0] ? why : "init failed");
    p->state = NULL;
    goto out;
  }
  p->ops = ops;
  char category[sizeof "emg.plugin." + CONFIG_NAME_LEN];
  snprintf(category, sizeof category, "emg.plugin.%s", p->name);
  p->log = log_category(category);
  rc = 0;
out:
  if (rc && p->handle) {
    dlclose(p->handle);
    p->handle = NULL;
  }
  return rc;
}

struct plugin_host *plugin_host_load(const struct config *cfg, char *err, size_t errlen)
{
  bool failed = false;
  if (errlen)
    err[0] = '\0';
  struct plugin_host *h = calloc(1, sizeof *h);
  if (!h) {
    add_error(err, errlen, "%s: plugins: out of memory", cfg->path);
    return NULL;
  }
  h->plugins = calloc(cfg->n_plugins ? cfg->n_plugins : 1, sizeof *h->plugins);
  h->connectors = calloc(cfg->n_connectors ? cfg->n_connectors : 1, sizeof *h->connectors);
  if (!h->plugins || !h->connectors) {
    add_error(err, errlen, "%s: plugins: out of memory", cfg->path);
    failed = true;
    goto out;
  }
  h->n_connectors = cfg->n_connectors;
  for (unsigned i = 0; i < cfg->n_connectors; i++)
    snprintf(h->connectors[i], sizeof h->connectors[i], "%s", cfg->connectors[i].name);
  /* Every plugin is tried, so that one start shows every problem. */
  for (unsigned i = 0; i < cfg->n_plugins; i++) {
    if (plugin_open(&h->plugins[h->n_plugins], cfg, i, err, errlen) != 0) {
      failed = true;
      continue;
    }
    for (enum hook k = 0; k < HOOK_COUNT; k++)
      h->has[k] |= hook_present(h->plugins[h->n_plugins].ops, k);
    h->n_plugins++;
  }
out:
  if (failed) {
    plugin_host_destroy(h);
    h = NULL;
  }
  return h;
}

void plugin_host_destroy(struct plugin_host *h)
{
  if (!h)
    return;
  /* Backwards: a plugin may rely on one loaded before it. */
  for (unsigned i = h->n_plugins; i-- > 0;) {
    struct plugin *p = &h->plugins[i];
    if (p->ops->destroy)
      p->ops->destroy(p->state);
    dlclose(p->handle);
  }
  free(h->plugins);
  free(h->connectors);
  free(h);
}

/* ---- the view of a message ---- */

/* One SMS's text, even all in 3-byte characters, fits without the heap. */
#define VIEW_TEXT_LEN 1024

struct view {
  struct emg_plugin_msg msg;      /* as the next hook gets it */
  char src[MSG_ADDR_LEN], dst[MSG_ADDR_LEN];
  char text[VIEW_TEXT_LEN];
  char *text_heap;                /* a longer text */
};

/* The payload as UTF-8 for the plugins that look at the text. A GSM
 * septet (an escape pair too) or two UCS2 octets make at most 3 bytes. */
static void view_text(struct view *v, const struct msg *m)
{
  v->text_heap = NULL;
  v->msg.binary = m->coding != SMS_TEXT_GSM7 && m->coding != SMS_TEXT_UCS2;
  if (v->msg.binary)
    return;
  size_t cap = 3 * (size_t)m->data_len + 1;
  char *text = v->text;
  if (cap > sizeof v->text && !(text = v->text_heap = malloc(cap)))
    return;                       /* no text: plugins that need it decline */
  int n = 0;
  if (m->data_len)
    n = m->coding == SMS_TEXT_GSM7 ? charset_gsm_to_utf8(text, cap - 1, m->data, m->data_len)
                                   : charset_ucs2_to_utf8(text, cap - 1, m->data, m->data_len);
  if (n < 0)
    return;                       /* not valid in its coding */
  text[n] = '\0';
  v->msg.text = text;
  v->msg.text_len = (size_t)n;
}

/* Sets v up for m; view_close releases it. NULL names stand for "". */
static void view_open(struct view *v, const struct msg *m, const char *origin, const char *user,
                      const char *target)
{
  snprintf(v->src, sizeof v->src, "%.*s", (int)sizeof v->src - 1, m->src.addr);
  snprintf(v->dst, sizeof v->dst, "%.*s", (int)sizeof v->dst - 1, m->dst.addr);
  v->msg = (struct emg_plugin_msg){
    .id = m->id,
    .src = { .addr = v->src, .cap = sizeof v->src, .ton = m->src.ton, .npi = m->src.npi },
    .dst = { .addr = v->dst, .cap = sizeof v->dst, .ton = m->dst.ton, .npi = m->dst.npi },
    .coding = m->coding,
    .data = m->data,
    .data_len = m->data_len,
    .origin_connector = origin ? origin : "",
    .origin_user = user ? user : "",
    .target_connector = target ? target : "",
  };
  view_text(v, m);
}

static void view_close(struct view *v)
{
  free(v->text_heap);
  v->text_heap = NULL;
}

/* The addresses as they were before a hook, to undo what it wrote. */
struct addresses {
  char src[MSG_ADDR_LEN], dst[MSG_ADDR_LEN];
  struct emg_plugin_addr src_view, dst_view;
};

static void addresses_save(const struct view *v, struct addresses *a)
{
  memcpy(a->src, v->src, sizeof a->src);
  memcpy(a->dst, v->dst, sizeof a->dst);
  a->src_view = v->msg.src;
  a->dst_view = v->msg.dst;
}

static void addresses_restore(struct view *v, const struct addresses *a)
{
  memcpy(v->src, a->src, sizeof v->src);
  memcpy(v->dst, a->dst, sizeof v->dst);
  v->msg.src = a->src_view;
  v->msg.dst = a->dst_view;
}

static void view_store(const struct view *v, struct msg *m)
{
  memcpy(m->src.addr, v->src, sizeof m->src.addr);
  memcpy(m->dst.addr, v->dst, sizeof m->dst.addr);
  m->src.ton = v->msg.src.ton;
  m->src.npi = v->msg.src.npi;
  m->dst.ton = v->msg.dst.ton;
  m->dst.npi = v->msg.dst.npi;
}

/* ---- calling hooks ---- */

enum call {
  CALL_OK,
  CALL_FAILED,
  CALL_TIMED_OUT
};

/* At the 1st, 2nd, 4th, 8th... occurrence: a plugin failing on every
 * message still shows in the log, without flooding it. */
static bool worth_logging(uint64_t n)
{
  return (n & (n - 1)) == 0;
}

/* Judges a hook that returned: late (its result is not to be used, however
 * good), failed (failure says how), or fine. Counts and logs the first two. */
static enum call judge(struct plugin *p, enum hook hook, uint64_t started, const char *failure)
{
  uint64_t took = clock_now_ns() - started;
  if (took > p->timeout_ns) {
    uint64_t n = atomic_fetch_add_explicit(&p->timeouts, 1, memory_order_relaxed) + 1;
    if (worth_logging(n))
      LOGW(p->log, "%s took %" PRIu64 " ms, more than timeout_ms %" PRIu64
           ": its result is ignored (%" PRIu64 " time-outs so far)",
           hook_names[hook], took / 1000000u, p->timeout_ns / 1000000u, n);
    return CALL_TIMED_OUT;
  }
  if (failure) {
    uint64_t n = atomic_fetch_add_explicit(&p->errors, 1, memory_order_relaxed) + 1;
    if (worth_logging(n))
      LOGW(p->log, "%s %s: its result is ignored (%" PRIu64 " failures so far)", hook_names[hook],
           failure, n);
    return CALL_FAILED;
  }
  return CALL_OK;
}

/* The verdict on a message whose plugin failed with on_error "refuse". */
static enum plugin_host_verdict refuse_failed(const struct plugin *p, enum hook hook, enum call c,
                                              char *reason, size_t reason_len)
{
  snprintf(reason, reason_len, "%s: %s %s", p->name, hook_names[hook],
           c == CALL_TIMED_OUT ? "timed out" : "failed");
  return PLUGIN_HOST_FAILED;
}

static uint64_t count_call(struct plugin *p)
{
  atomic_fetch_add_explicit(&p->calls, 1, memory_order_relaxed);
  return clock_now_ns();
}

/* What is wrong with a before_* hook's answer, or NULL. */
static const char *before_failure(const struct view *v, const struct emg_plugin_msg *seen, int rc)
{
  if (rc < 0)
    return "returned an error";
  if (rc != EMG_PLUGIN_CONTINUE && rc != EMG_PLUGIN_REFUSE && rc != EMG_PLUGIN_FLAG)
    return "gave an answer this hook may not give";
  if (seen->src.addr != v->src || seen->dst.addr != v->dst || seen->src.cap != sizeof v->src ||
      seen->dst.cap != sizeof v->dst)
    return "replaced an address buffer";
  if (!memchr(v->src, '\0', sizeof v->src) || !memchr(v->dst, '\0', sizeof v->dst))
    return "left an address without its NUL";
  return NULL;
}

/* before_receive or before_send of every plugin, on v. */
static enum plugin_host_verdict run_before(struct plugin_host *h, enum hook hook, struct view *v,
                                           char *reason, size_t reason_len)
{
  for (unsigned i = 0; i < h->n_plugins; i++) {
    struct plugin *p = &h->plugins[i];
    int (*fn)(void *, struct emg_plugin_msg *, char *, size_t) =
        hook == HOOK_BEFORE_RECEIVE ? p->ops->before_receive : p->ops->before_send;
    if (!fn)
      continue;
    struct addresses saved;
    addresses_save(v, &saved);
    /* A copy: a hook may scribble on the view's read-only fields too. */
    struct emg_plugin_msg seen = v->msg;
    char said[PLUGIN_HOST_REASON_LEN] = "";
    uint64_t started = count_call(p);
    int rc = fn(p->state, &seen, said, sizeof said);
    enum call c = judge(p, hook, started, before_failure(v, &seen, rc));
    if (c != CALL_OK) {
      addresses_restore(v, &saved);
      if (p->refuse_on_error)
        return refuse_failed(p, hook, c, reason, reason_len);
      continue;
    }
    v->msg.src.ton = seen.src.ton;
    v->msg.src.npi = seen.src.npi;
    v->msg.dst.ton = seen.dst.ton;
    v->msg.dst.npi = seen.dst.npi;
    said[sizeof said - 1] = '\0';
    if (rc == EMG_PLUGIN_REFUSE) {
      atomic_fetch_add_explicit(&p->refusals, 1, memory_order_relaxed);
      snprintf(reason, reason_len, "%s: %s", p->name, said[0] ? said : "refused");
      return PLUGIN_HOST_REFUSE;
    }
    if (rc == EMG_PLUGIN_FLAG) {
      atomic_fetch_add_explicit(&p->flagged, 1, memory_order_relaxed);
      LOGI(p->log, "%s: %s -> %s flagged: %s", hook_names[hook], v->src, v->dst,
           said[0] ? said : "(no reason given)");
    }
  }
  return PLUGIN_HOST_ACCEPT;
}

/* The name of connector index, "" when there is none. */
static const char *connector_name(const struct plugin_host *h, unsigned index)
{
  return index < h->n_connectors ? h->connectors[index] : "";
}

static int connector_index(const struct plugin_host *h, const char *name)
{
  for (unsigned i = 0; i < h->n_connectors; i++)
    if (strcmp(h->connectors[i], name) == 0)
      return (int)i;
  return -1;
}

enum plugin_host_verdict plugin_host_before_receive(struct plugin_host *h, struct msg *m,
                                                    const char *origin_connector, const char *user,
                                                    char *reason, size_t reason_len)
{
  if (!h || !h->has[HOOK_BEFORE_RECEIVE])
    return PLUGIN_HOST_ACCEPT;
  struct view v;
  view_open(&v, m, origin_connector, user, "");
  enum plugin_host_verdict verdict = run_before(h, HOOK_BEFORE_RECEIVE, &v, reason, reason_len);
  if (verdict == PLUGIN_HOST_ACCEPT)
    view_store(&v, m);
  view_close(&v);
  return verdict;
}

enum plugin_host_verdict plugin_host_before_send(struct plugin_host *h, struct msg *m,
                                                 const char *target_connector, char *reason,
                                                 size_t reason_len)
{
  if (!h || !h->has[HOOK_BEFORE_SEND])
    return PLUGIN_HOST_ACCEPT;
  struct view v;
  view_open(&v, m, connector_name(h, m->origin.connector), m->origin.user, target_connector);
  enum plugin_host_verdict verdict = run_before(h, HOOK_BEFORE_SEND, &v, reason, reason_len);
  if (verdict == PLUGIN_HOST_ACCEPT)
    view_store(&v, m);
  view_close(&v);
  return verdict;
}

enum plugin_host_verdict plugin_host_route(struct plugin_host *h, const struct msg *m,
                                           const char *origin_connector, const char *user,
                                           int *target, char *reason, size_t reason_len)
{
  enum plugin_host_verdict verdict = PLUGIN_HOST_ACCEPT;
  *target = -1;
  if (!h || !h->has[HOOK_ROUTE])
    return verdict;
  struct view v;
  view_open(&v, m, origin_connector, user, "");
  for (unsigned i = 0; i < h->n_plugins && *target < 0; i++) {
    struct plugin *p = &h->plugins[i];
    if (!p->ops->route)
      continue;
    struct emg_plugin_msg seen = v.msg;
    char chosen[CONFIG_NAME_LEN] = "", failure[96] = "";
    uint64_t started = count_call(p);
    int rc = p->ops->route(p->state, &seen, chosen, sizeof chosen);
    int index = -1;
    if (rc < 0)
      snprintf(failure, sizeof failure, "returned an error");
    else if (rc == EMG_PLUGIN_ROUTE && !memchr(chosen, '\0', sizeof chosen))
      snprintf(failure, sizeof failure, "chose a connector name without its NUL");
    else if (rc == EMG_PLUGIN_ROUTE && (index = connector_index(h, chosen)) < 0)
      snprintf(failure, sizeof failure, "chose '%.48s', which is no connector", chosen);
    else if (rc != EMG_PLUGIN_ROUTE && rc != EMG_PLUGIN_CONTINUE)
      snprintf(failure, sizeof failure, "gave an answer this hook may not give");
    enum call c = judge(p, HOOK_ROUTE, started, failure[0] ? failure : NULL);
    if (c != CALL_OK && p->refuse_on_error) {
      verdict = refuse_failed(p, HOOK_ROUTE, c, reason, reason_len);
      break;
    }
    if (c == CALL_OK)
      *target = index;
  }
  view_close(&v);
  return verdict;
}

void plugin_host_after_send(struct plugin_host *h, const struct msg *m, const char *target_connector,
                            enum emg_plugin_send_status status)
{
  if (!h || !h->has[HOOK_AFTER_SEND])
    return;
  struct view v;
  view_open(&v, m, connector_name(h, m->origin.connector), m->origin.user, target_connector);
  for (unsigned i = 0; i < h->n_plugins; i++) {
    struct plugin *p = &h->plugins[i];
    if (!p->ops->after_send)
      continue;
    struct emg_plugin_msg seen = v.msg;
    uint64_t started = count_call(p);
    int rc = p->ops->after_send(p->state, &seen, (int)status);
    judge(p, HOOK_AFTER_SEND, started,
          rc < 0 ? "returned an error"
                 : rc != EMG_PLUGIN_CONTINUE ? "gave an answer this hook may not give" : NULL);
  }
  view_close(&v);
}

void plugin_host_after_dlr(struct plugin_host *h, uint64_t msg_id, const struct msg_receipt *r)
{
  if (!h || !h->has[HOOK_AFTER_DLR])
    return;
  const struct emg_plugin_receipt seen = {
    .id = r->id, .state = r->state, .err = r->err, .src = r->src.addr, .dst = r->dst.addr,
  };
  for (unsigned i = 0; i < h->n_plugins; i++) {
    struct plugin *p = &h->plugins[i];
    if (!p->ops->after_dlr)
      continue;
    uint64_t started = count_call(p);
    int rc = p->ops->after_dlr(p->state, msg_id, &seen);
    judge(p, HOOK_AFTER_DLR, started,
          rc < 0 ? "returned an error"
                 : rc != EMG_PLUGIN_CONTINUE ? "gave an answer this hook may not give" : NULL);
  }
}

/* ---- counters ---- */

unsigned plugin_host_count(const struct plugin_host *h)
{
  return h ? h->n_plugins : 0;
}

int plugin_host_stats(const struct plugin_host *h, unsigned i, struct plugin_host_stats *out)
{
  if (!h || i >= h->n_plugins)
    return -1;
  struct plugin *p = &h->plugins[i];
  snprintf(out->name, sizeof out->name, "%s", p->name);
  snprintf(out->path, sizeof out->path, "%s", p->path);
  out->calls = atomic_load_explicit(&p->calls, memory_order_relaxed);
  out->refusals = atomic_load_explicit(&p->refusals, memory_order_relaxed);
  out->flagged = atomic_load_explicit(&p->flagged, memory_order_relaxed);
  out->errors = atomic_load_explicit(&p->errors, memory_order_relaxed);
  out->timeouts = atomic_load_explicit(&p->timeouts, memory_order_relaxed);
  return 0;
}
