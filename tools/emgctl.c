/* emgctl.c - the operator's command line for emgd's admin API.
 *
 * usage: emgctl [--url URL] [--token T] [--json]
 *          status|connectors|queues|queue NAME|pause NAME|resume NAME|reload
 * URL and token also come from EMGCTL_URL and EMGCTL_TOKEN. Tables for
 * people, --json for scripts. Exit: 0 ok, 1 error, 3 unauthorised, 5 bad
 * argument. */
#include <curl/curl.h>
#include <getopt.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_UNAUTHORISED = 3, EXIT_USAGE = 5 };

struct body {
  char *data;
  size_t len;
};

static size_t collect(char *ptr, size_t size, size_t n, void *arg)
{
  struct body *b = arg;
  char *grown = realloc(b->data, b->len + size * n + 1);
  if (!grown)
    return 0;
  memcpy(grown + b->len, ptr, size * n);
  b->data = grown;
  b->len += size * n;
  b->data[b->len] = 0;
  return size * n;
}

/* Sends method path; on success *out is the parsed JSON. Returns an exit code. */
static int request_json(const char *url, const char *token, const char *method, const char *path,
                        json_t **out)
{
  char full[1024], auth[512];
  struct body b = { NULL, 0 };
  snprintf(full, sizeof full, "%s%s", url, path);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
  CURL *c = curl_easy_init();
  if (!c)
    return EXIT_ERROR;
  struct curl_slist *headers = curl_slist_append(NULL, auth);
  curl_easy_setopt(c, CURLOPT_URL, full);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  int exit_code = EXIT_OK;
  if (rc != CURLE_OK) {
    fprintf(stderr, "emgctl: %s: %s\n", full, curl_easy_strerror(rc));
    exit_code = EXIT_ERROR;
  } else if (status == 401) {
    fprintf(stderr, "emgctl: %s: unauthorised (check --token or EMGCTL_TOKEN)\n", full);
    exit_code = EXIT_UNAUTHORISED;
  } else {
    /* 200, or 409 for an action refused with its reason: both carry JSON. */
    *out = json_loads(b.data ? b.data : "", 0, NULL);
    if (status != 200 && (status != 409 || !*out)) {
      fprintf(stderr, "emgctl: %s: HTTP %ld: %s\n", full, status, b.data ? b.data : "");
      json_decref(*out);
      *out = NULL;
      exit_code = EXIT_ERROR;
    } else if (!*out) {
      fprintf(stderr, "emgctl: %s: the answer is not JSON\n", full);
      exit_code = EXIT_ERROR;
    }
  }
  free(b.data);
  return exit_code;
}

static json_int_t num(json_t *j, const char *path)
{
  /* path: "a.b" */
  char key[64];
  const char *dot = strchr(path, '.');
  if (dot) {
    snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
    return num(json_object_get(j, key), dot + 1);
  }
  return json_integer_value(json_object_get(j, path));
}

static double real(json_t *j, const char *outer, const char *inner)
{
  return json_real_value(json_object_get(json_object_get(j, outer), inner));
}

static void print_status(json_t *s)
{
  json_t *rates = json_object_get(s, "rates");
  printf("emgd %s, node %" JSON_INTEGER_FORMAT ", up %" JSON_INTEGER_FORMAT " s, persist %s\n\n",
         json_string_value(json_object_get(s, "version")), num(s, "node_id"), num(s, "uptime_s"),
         json_is_true(json_object_get(s, "persist")) ? "on" : "off");
  printf("%-28s %14s\n", "totals", "messages");
  static const char *totals[] = { "received", "sent", "failed", "expired", "retried",
                                  "refused_queue_full", "refused_no_route", "receipts_in",
                                  "receipts_out", "receipts_unmatched", "mo_in" };
  for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++) {
    char path[64];
    snprintf(path, sizeof path, "totals.%s", totals[i]);
    printf("  %-26s %14" JSON_INTEGER_FORMAT "\n", totals[i], num(s, path));
  }
  printf("\n%-28s %14s %14s\n", "rates", "received/s", "sent/s");
  static const char *spans[] = { "1s", "10s", "60s" };
  for (size_t i = 0; i < 3; i++)
    printf("  last %-21s %14.0f %14.0f\n", spans[i], real(rates, spans[i], "received"),
           real(rates, spans[i], "sent"));
  printf("\n%-28s %14" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " (soft %" JSON_INTEGER_FORMAT ")\n",
         "in flight", num(s, "queue.in_flight"), num(s, "queue.hard_limit"), num(s, "queue.soft_limit"));
  printf("%-28s %14" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " (evicted %" JSON_INTEGER_FORMAT ")\n",
         "DLR table entries", num(s, "dlr.used"), num(s, "dlr.size"), num(s, "dlr.evicted"));
}

static void print_connectors(json_t *j)
{
  json_t *list = json_object_get(j, "connectors"), *c;
  size_t i;
  json_int_t bound = 0, instances = 0, queued = 0;
  printf("%-20s %-5s %-7s %-22s %9s %9s %7s %10s\n", "connector", "proto", "mode", "address",
         "instances", "bound", "window", "queued");
  json_array_foreach(list, i, c) {
    printf("%-20s %-5s %-7s %-22s %9" JSON_INTEGER_FORMAT " %9" JSON_INTEGER_FORMAT
           " %7" JSON_INTEGER_FORMAT " %10" JSON_INTEGER_FORMAT "\n",
           json_string_value(json_object_get(c, "name")), json_string_value(json_object_get(c, "protocol")),
           json_string_value(json_object_get(c, "mode")), json_string_value(json_object_get(c, "address")),
           num(c, "instances"), num(c, "bound"), num(c, "window"), num(c, "queued"));
    instances += num(c, "instances");
    bound += num(c, "bound");
    queued += num(c, "queued");
  }
  printf("%-20s %-5s %-7s %-22s %9" JSON_INTEGER_FORMAT " %9" JSON_INTEGER_FORMAT " %7s %10" JSON_INTEGER_FORMAT "\n",
         "total", "", "", "", instances, bound, "", queued);
}

static void print_queues(json_t *j)
{
  json_t *list = json_object_get(j, "queues"), *q;
  size_t i;
  printf("%-20s %12s %8s\n", "connector", "queued", "paused");
  json_array_foreach(list, i, q)
    printf("%-20s %12" JSON_INTEGER_FORMAT " %8s\n", json_string_value(json_object_get(q, "connector")),
           num(q, "queued"), json_is_true(json_object_get(q, "paused")) ? "yes" : "no");
  printf("%-20s %12" JSON_INTEGER_FORMAT " messages (soft limit %" JSON_INTEGER_FORMAT ", hard %" JSON_INTEGER_FORMAT ")\n",
         "total", num(j, "total"), num(j, "soft_limit"), num(j, "hard_limit"));
}

static void print_queue(json_t *j)
{
  json_t *list = json_object_get(j, "messages"), *m;
  size_t i;
  printf("%s: %" JSON_INTEGER_FORMAT " waiting\n", json_string_value(json_object_get(j, "connector")),
         num(j, "queued"));
  printf("%-20s %-8s %-16s %-16s %10s %8s\n", "id", "kind", "from", "to", "age (s)", "attempts");
  json_array_foreach(list, i, m) {
    bool msg = strcmp(json_string_value(json_object_get(m, "kind")), "message") == 0;
    char id[32];
    if (msg)
      snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, num(m, "id"));
    else
      snprintf(id, sizeof id, "%.31s", json_string_value(json_object_get(m, "id")));
    printf("%-20s %-8s %-16s %-16s %10.1f %8" JSON_INTEGER_FORMAT "\n", id, msg ? "message" : "receipt",
           msg ? json_string_value(json_object_get(m, "from")) : "",
           msg ? json_string_value(json_object_get(m, "to")) : "", (double)num(m, "age_ms") / 1000.0,
           num(m, "attempts"));
  }
}

static void print_action(json_t *j)
{
  if (json_object_get(j, "error"))
    printf("refused: %s\n", json_string_value(json_object_get(j, "error")));
  else if (json_object_get(j, "paused"))
    printf("%s %s\n", json_string_value(json_object_get(j, "connector")),
           json_is_true(json_object_get(j, "paused")) ? "paused" : "resumed");
  else
    printf("reloaded\n");
}

static void usage(FILE *out)
{
  fprintf(out, "usage: emgctl [--url URL] [--token T] [--json] COMMAND\n"
               "  status | connectors | queues | queue NAME [OFFSET [LIMIT]] | pause NAME | resume NAME | reload\n"
               "  URL and token default to $EMGCTL_URL (else http://127.0.0.1:8480) and $EMGCTL_TOKEN\n");
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    { "url", required_argument, 0, 'u' }, { "token", required_argument, 0, 't' },
    { "json", no_argument, 0, 'j' },      { "help", no_argument, 0, 'h' },
    { 0, 0, 0, 0 }
  };
  const char *url = getenv("EMGCTL_URL"), *token = getenv("EMGCTL_TOKEN");
  int json = 0, ch;
  while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (ch) {
    case 'u': url = optarg; break;
    case 't': token = optarg; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return EXIT_OK;
    default: usage(stderr); return EXIT_USAGE;
    }
  }
  if (optind >= argc) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *command = argv[optind], *method = "GET";
  const char *arg = optind + 1 < argc ? argv[optind + 1] : NULL;
  int extra = argc - optind - 1;
  char path[512];
  void (*print)(json_t *);
  if (strcmp(command, "status") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/status");
    print = print_status;
  } else if (strcmp(command, "connectors") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/connectors");
    print = print_connectors;
  } else if (strcmp(command, "queues") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/queues");
    print = print_queues;
  } else if (strcmp(command, "queue") == 0 && extra >= 1 && extra <= 3) {
    const char *offset = extra >= 2 ? argv[optind + 2] : "0", *limit = extra == 3 ? argv[optind + 3] : "50";
    if (strspn(offset, "0123456789") != strlen(offset) || strspn(limit, "0123456789") != strlen(limit)) {
      fprintf(stderr, "emgctl: queue: OFFSET and LIMIT are numbers\n");
      return EXIT_USAGE;
    }
    snprintf(path, sizeof path, "/api/queues/%s/messages?offset=%s&limit=%s", arg, offset, limit);
    print = print_queue;
  } else if ((strcmp(command, "pause") == 0 || strcmp(command, "resume") == 0) && extra == 1) {
    snprintf(path, sizeof path, "/api/connectors/%s/%s", arg, command);
    method = "POST";
    print = print_action;
  } else if (strcmp(command, "reload") == 0 && extra == 0) {
    snprintf(path, sizeof path, "/api/reload");
    method = "POST";
    print = print_action;
  } else {
    fprintf(stderr, "emgctl: unknown command or wrong arguments: '%s'\n", command);
    usage(stderr);
    return EXIT_USAGE;
  }
  if (!url)
    url = "http://127.0.0.1:8480";
  if (!token) {
    fprintf(stderr, "emgctl: no token: give --token or set EMGCTL_TOKEN\n");
    return EXIT_USAGE;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  json_t *j = NULL;
  int rc = request_json(url, token, method, path, &j);
  if (rc == EXIT_OK && json_object_get(j, "error"))
    rc = EXIT_ERROR;   /* a refused reload: the reason is printed below */
  if (j) {
    if (json) {
      json_dumpf(j, stdout, JSON_INDENT(2));
      putchar('\n');
    } else {
      print(j);
    }
    json_decref(j);
  }
  curl_global_cleanup();
  return rc;
}
