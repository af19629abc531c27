/* admin_session.c - the console's logins. See admin_session.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin_session.h"

struct session_slot {
  char id[ADMIN_SESSION_HEX];      /* "" = free */
  char csrf[ADMIN_SESSION_HEX];
  int64_t expires;
};

struct admin_sessions {
  pthread_mutex_t lock;
  struct session_slot *slots;
  unsigned max, ttl_s;
};

struct admin_sessions *admin_sessions_create(unsigned max, unsigned ttl_s)
{
  struct admin_sessions *s = calloc(1, sizeof *s);
  if (!s || sodium_init() < 0 || !(s->slots = calloc(max ? max : 1, sizeof *s->slots))) {
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->lock, NULL);
  s->max = max ? max : 1;
  s->ttl_s = ttl_s;
  return s;
}

void admin_sessions_destroy(struct admin_sessions *s)
{
  if (!s)
    return;
  sodium_memzero(s->slots, s->max * sizeof *s->slots);
  free(s->slots);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static void random_hex(char out[ADMIN_SESSION_HEX])
{
  unsigned char raw[32];
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(out, ADMIN_SESSION_HEX, raw, sizeof raw);
}

void admin_session_new(struct admin_sessions *s, int64_t now, char id[ADMIN_SESSION_HEX],
                       char csrf[ADMIN_SESSION_HEX], int64_t *expires)
{
  random_hex(id);
  random_hex(csrf);
  *expires = now + s->ttl_s;
  pthread_mutex_lock(&s->lock);
  /* A free or ended slot, else the one that ends first. */
  struct session_slot *slot = &s->slots[0];
  for (unsigned i = 0; i < s->max; i++) {
    struct session_slot *t = &s->slots[i];
    if (!t->id[0] || t->expires <= now) {
      slot = t;
      break;
    }
    if (t->expires < slot->expires)
      slot = t;
  }
  memcpy(slot->id, id, ADMIN_SESSION_HEX);
  memcpy(slot->csrf, csrf, ADMIN_SESSION_HEX);
  slot->expires = *expires;
  pthread_mutex_unlock(&s->lock);
}

/* The value of our cookie in a Cookie header ("a=1; emg_session=ID"), in
 * out; false when it is not there or not the length of an id. */
static bool cookie_value(const char *header, char out[ADMIN_SESSION_HEX])
{
  static const char name[] = ADMIN_SESSION_COOKIE "=";
  for (const char *p = header; p && *p;) {
    while (*p == ' ' || *p == ';')
      p++;
    const char *end = strchr(p, ';');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == sizeof name - 1 + ADMIN_SESSION_HEX - 1 && strncmp(p, name, sizeof name - 1) == 0) {
      memcpy(out, p + sizeof name - 1, ADMIN_SESSION_HEX - 1);
      out[ADMIN_SESSION_HEX - 1] = '\0';
      return true;
    }
    p = end;
  }
  return false;
}

/* Under the lock: the live slot of id, or NULL; compared in constant time. */
static struct session_slot *slot_of(struct admin_sessions *s, const char *id, int64_t now)
{
  for (unsigned i = 0; i < s->max; i++) {
    struct session_slot *t = &s->slots[i];
    if (t->id[0] && t->expires > now && sodium_memcmp(t->id, id, ADMIN_SESSION_HEX - 1) == 0)
      return t;
  }
  return NULL;
}

bool admin_session_find(struct admin_sessions *s, const char *cookie_header, int64_t now, char csrf[ADMIN_SESSION_HEX],
                        int64_t *expires)
{
  char id[ADMIN_SESSION_HEX];
  if (!cookie_value(cookie_header, id))
    return false;
  pthread_mutex_lock(&s->lock);
  struct session_slot *t = slot_of(s, id, now);
  if (t) {
    memcpy(csrf, t->csrf, ADMIN_SESSION_HEX);
    *expires = t->expires;
  }
  pthread_mutex_unlock(&s->lock);
  return t != NULL;
}

void admin_session_end(struct admin_sessions *s, const char *cookie_header)
{
  char id[ADMIN_SESSION_HEX];
  if (!cookie_value(cookie_header, id))
    return;
  pthread_mutex_lock(&s->lock);
  struct session_slot *t = slot_of(s, id, INT64_MIN);
  if (t)
    sodium_memzero(t, sizeof *t);
  pthread_mutex_unlock(&s->lock);
}

bool admin_session_same_site(const char *csrf, const char *csrf_header, const char *origin, const char *host,
                             bool https)
{
  if (!csrf_header || strlen(csrf_header) != ADMIN_SESSION_HEX - 1 ||
      sodium_memcmp(csrf, csrf_header, ADMIN_SESSION_HEX - 1) != 0)
    return false;
  if (!origin)
    return true;   /* not every browser sends one on a same-origin request */
  char own[300];
  snprintf(own, sizeof own, "%s://%s", https ? "https" : "http", host ? host : "");
  return host && strcmp(origin, own) == 0;
}

void admin_session_cookie(char *out, size_t cap, const char *id, unsigned ttl_s, bool https)
{
  snprintf(out, cap, "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%u%s", ADMIN_SESSION_COOKIE, id ? id : "",
           id ? ttl_s : 0, https ? "; Secure" : "");
}
