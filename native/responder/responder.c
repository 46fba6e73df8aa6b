/* evbench-link-responder: the link suite's responder (docs/link.md, wire format version 2)
 * in C, so RTT and CPU per message can be measured without Python on the responder side.
 *
 * `echo` mode: each MESSAGE's body comes back unchanged after the 8 bytes of processing
 * time, as `evbench-agent serve` answers it; it never decodes, so it checks no codec or
 * profile name. `ack` mode (the link suite's default): each MESSAGE is decoded with the
 * HELLO's codec and message type and every leaf of it read (the walk of the native
 * harnesses' decode_access, runtimes/leaves_*.h), then answered with the ack encoded by the
 * same codec, byte for byte what `evbench-agent serve` sends for the same clock reading.
 * It decodes `protobuf` with protobuf-c and `json` with cJSON (each where the build has it:
 * EVBENCH_ACK_PROTOBUF, EVBENCH_ACK_JSON), for the built-in profiles seed and ev-full; a
 * HELLO asking for ack mode with another codec or profile is refused, saying so. One thread
 * per connection, so each connection's CPU time (STATS) is its thread's CPU clock, as in
 * the Python responder.
 *
 * The Python responder's limits (docs/link.md "Responder limits"): 8 pending places per
 * slot for connections in their handshake, a quarter of them at most for one peer address
 * (a newcomer past its peer's share closes that peer's oldest pending connection; past all
 * places, the oldest of the peer holding the most; a connection whose whole HELLO has come
 * is passed over while another can go, as the Python responder reads what has come on a
 * connection before it closes it); `--max-connections` slots, all but an eighth of them at
 * most for one peer address (14 of 16); a client that has sent no MESSAGE for 2 s (the idle
 * budget) gives its slot up to a newcomer that has none free to it (of the newcomer's own
 * address when that holds its share, else of the peer holding the most slots; the longest
 * silent), and a peer address whose client gave its slot up so to another address's
 * newcomer takes no silent client's slot for 30 s.
 * Each drop is logged with who and why, at most once per peer address per minute. Out of
 * descriptors (RLIMIT_NOFILE), new connections wait in the listen queue while the listener
 * rests 100 ms at a time, said once a minute, as in the Python responder.
 *
 *   evbench-link-responder [--bind ADDR] [--port N] [--max-frame B] [--max-connections N]
 *                          [--realtime]
 *   evbench-link-responder --about
 *
 * `--about` prints one line, tab-separated as the harnesses' (ok, then key=value): the
 * `responder` its HELLO answers name, and the `ack_codecs` and `ack_profiles` it decodes in
 * ack mode (comma lists, empty in a build without C runtimes), so the link suite can refuse
 * a run it cannot serve before the run starts.
 * `--realtime` asks, as `evbench-agent serve --realtime` does, for SCHED_FIFO 80 and a 1 ns
 * timer slack before any thread starts (each connection's thread inherits both); what the
 * kernel granted is said in the `listening on` line, and a refusal is no error.
 * Once listening it prints {"event": "listening", "host": ..., "port": ...} on standard
 * output; its log lines go to standard error. SIGTERM or SIGINT stops it, and so does the
 * program that started it going away (its reader of standard output, or its parent).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef EVBENCH_ACK_PROTOBUF
#include <protobuf-c/protobuf-c.h>

#include "ev_data.pb-c.h"
#include "ev_frame.pb-c.h"
#include "link.pb-c.h"
#include "shapes.pb-c.h"

#include "leaves_protobuf_c.h"
#endif
#ifdef EVBENCH_ACK_JSON
#include <cjson/cJSON.h>

#include "leaves_cjson.h"
#endif

#define PROTOCOL "evbench-link"
#define VERSION 2
#define HEADER 9                 /* kind (1) + sequence (8) */
#define PREFIX 13                /* length (4) + HEADER */
#define MAX_HELLO 4096           /* a HELLO body's cap */
#define MAX_NAME 200             /* characters of a codec, profile, message or mode name */
#define MAX_REPLY_DELAY_NS 1000000000LL
#define HANDSHAKE_DEADLINE_MS 5000
#define IDLE_TIMEOUT_S 120
#define SEND_TIMEOUT_S 10
#define PENDING_PER_SLOT 8       /* connections in their handshake, per slot */
#define PEER_SHARE 4             /* one peer address holds at most 1 / PEER_SHARE of them */
#define CLOSING_PER_SLOT 1       /* places, per slot, for connections being closed */
#define IDLE_BUDGET_S 2          /* a slot without a MESSAGE for this long goes to a newcomer */
#define RESERVED_SHARE 8         /* this share of the slots is kept from any one peer address */
#define QUIET_PENALTY_S 30       /* a peer whose silent client lost its slot to another
                                    peer's newcomer takes no silent client's slot this long */
#define PENALIZED_PEERS 1024     /* peers under that penalty remembered at most */
#define DROP_LOG_INTERVAL_S 60   /* a peer's drops are logged at most once per this long */
#define DROP_LOG_PEERS 1024      /* peers whose last drop line is remembered */
#define RECV_SIZE 65536
#define WATCH_INTERVAL_MS 500    /* how often the program that started it is looked at */
#define ACCEPT_REST_MS 100       /* out of descriptors, the listener rests this long */
#define MAX_DEPTH 64             /* JSON nesting read before a HELLO is refused */
#define TOKEN_ENV "EVBENCH_LINK_TOKEN"
#define MAX_QUOTED 40            /* characters of a client's value quoted in a refusal */
#define STRINGIFY(x) #x
#define TEXT(x) STRINGIFY(x)     /* a macro's value as text */
#define VERSION_TEXT(a, b, c) STRINGIFY(a) "." STRINGIFY(b) "." STRINGIFY(c)

/* What ack mode decodes with: the codec's C runtime. */
enum { CODEC_ECHO, CODEC_JSON, CODEC_PROTOBUF };

/* ACK_CODECS says it in log lines and refusals; ACK_CODEC_NAMES in `--about`. */
#if defined(EVBENCH_ACK_PROTOBUF) && defined(EVBENCH_ACK_JSON)
#define ACK_CODECS "json and protobuf"
#define ACK_CODEC_NAMES "json,protobuf"
#elif defined(EVBENCH_ACK_PROTOBUF)
#define ACK_CODECS "protobuf (this build has no cJSON)"
#define ACK_CODEC_NAMES "protobuf"
#elif defined(EVBENCH_ACK_JSON)
#define ACK_CODECS "json (this build has no protobuf-c)"
#define ACK_CODEC_NAMES "json"
#else
#define ACK_CODEC_NAMES ""
#endif

/* The HELLO answer's `responder`: this program and the runtimes ack mode decodes with. */
#define RUNTIMES_PROTOBUF ""
#define RUNTIMES_JSON ""
#ifdef EVBENCH_ACK_PROTOBUF
#undef RUNTIMES_PROTOBUF
#define RUNTIMES_PROTOBUF "; protobuf: protobuf-c " PROTOBUF_C_VERSION
#endif
#ifdef EVBENCH_ACK_JSON
#undef RUNTIMES_JSON
#define RUNTIMES_JSON "; json: cJSON " \
  VERSION_TEXT(CJSON_VERSION_MAJOR, CJSON_VERSION_MINOR, CJSON_VERSION_PATCH)
#endif
#define RESPONDER_NAME "evbench-link-responder 2 (C" RUNTIMES_PROTOBUF RUNTIMES_JSON ")"

/* The profiles ack mode decodes and the message type each carries: the built-in ones of
 * agent/src/evbench_agent/payloads/profiles (tests/test_native_responder.py holds this
 * table to the Python profiles). */
#ifdef ACK_CODECS
static const struct {
  const char *profile, *message;
} ack_profiles[] = {
    {"seed", "evbench.seed.BackendDataPacket"},
    {"ev-full", "evbench.frame.EvFrame"},
};
#endif

enum { HELLO = 0, MESSAGE = 1, REPLY = 2, STATS = 3, STATS_REPLY = 4 };

static uint32_t max_frame = 1u << 20;
static int max_connections = 16;
static const char *token;
static volatile sig_atomic_t stopping;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gone = PTHREAD_COND_INITIALIZER;
static int served, threads;       /* slots held; connection threads alive */

/* Every open connection has a place, from its accept to its close: the accepting thread
 * and the connection threads decide pending places and slots on this table, under `lock`.
 * PENDING: in its handshake (counted against max_pending, and per peer address); SERVED:
 * holds a slot; CLOSING: its place or slot was taken (`taken` says why), its thread ends. */
enum { FREE, PENDING, SERVED, CLOSING };
enum { KEPT, TAKEN_FOR_ROOM, TAKEN_IDLE };
typedef struct {
  int fd, state, taken;
  int hello_read;                  /* its thread holds its whole HELLO (atomic access) */
  unsigned long long order;        /* accepted as the order-th connection: oldest first */
  int64_t last_message;            /* CLOCK_MONOTONIC of its last MESSAGE (atomic access) */
  char host[INET6_ADDRSTRLEN];
} Place;
static Place *places, **scratch;
static int place_count, pending, max_pending, max_pending_per_peer, max_per_peer;
static unsigned long long accepted;

static void say(const char *format, ...) {
  va_list args;
  va_start(args, format);
  flockfile(stderr);
  fputs("evbench-link-responder: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  funlockfile(stderr);
  va_end(args);
}

static int64_t now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void put_le(unsigned char *out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; i++) out[i] = (unsigned char)(value >> (8 * i));
}

static uint64_t get_le(const unsigned char *in, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; i--) value = value << 8 | in[i];
  return value;
}

/* One write of a whole frame (MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE). */
static int send_all(int fd, const unsigned char *data, size_t size) {
  while (size) {
    ssize_t sent = send(fd, data, size, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    data += sent;
    size -= (size_t)sent;
  }
  return 0;
}

static int send_frame(int fd, int kind, uint64_t sequence, const void *body, size_t size) {
  unsigned char stack[PREFIX + 512], *frame = stack;
  if (size > sizeof stack - PREFIX && !(frame = malloc(PREFIX + size))) return -1;
  put_le(frame, HEADER + size, 4);
  frame[4] = (unsigned char)kind;
  put_le(frame + 5, sequence, 8);
  memcpy(frame + PREFIX, body, size);
  int status = send_all(fd, frame, PREFIX + size);
  if (frame != stack) free(frame);
  return status;
}

/* --- The HELLO: a JSON object read by a small strict parser ---------------------------- */

typedef struct {
  const char *at, *end;
  const char *error;
} Json;

typedef struct {
  char protocol[64], codec[MAX_NAME * 4 + 1], profile[MAX_NAME * 4 + 1];
  char message[MAX_NAME * 4 + 1], mode[MAX_NAME * 4 + 1], token[MAX_HELLO + 1];
  /* Each string's decoded UTF-8 bytes: a \u0000 puts a NUL in it, so it is compared by this
   * length (is()), never as a C string: "ack\u0000x" is not "ack", as in Python. */
  size_t protocol_bytes, codec_bytes, profile_bytes, message_bytes, mode_bytes, token_bytes;
  int has_protocol, has_codec, has_profile, has_message, has_mode, has_token;
  int version_ok, delay_ok, too_long;
  long long reply_delay_ns;
} Hello;

static void skip_space(Json *j) {
  while (j->at < j->end && (*j->at == ' ' || *j->at == '\t' || *j->at == '\n' || *j->at == '\r'))
    j->at++;
}

/* The UTF-8 of `code` at *out, what fits before `limit`; its length in bytes. */
static size_t put_utf8(char **out, const char *limit, unsigned code) {
  char bytes[4];
  int n;
  if (code < 0x80) bytes[0] = (char)code, n = 1;
  else if (code < 0x800) bytes[0] = (char)(0xC0 | code >> 6), bytes[1] = (char)(0x80 | (code & 0x3F)), n = 2;
  else if (code < 0x10000)
    bytes[0] = (char)(0xE0 | code >> 12), bytes[1] = (char)(0x80 | (code >> 6 & 0x3F)),
    bytes[2] = (char)(0x80 | (code & 0x3F)), n = 3;
  else
    bytes[0] = (char)(0xF0 | code >> 18), bytes[1] = (char)(0x80 | (code >> 12 & 0x3F)),
    bytes[2] = (char)(0x80 | (code >> 6 & 0x3F)), bytes[3] = (char)(0x80 | (code & 0x3F)), n = 4;
  for (int i = 0; i < n && *out < limit; i++) *(*out)++ = bytes[i];
  return (size_t)n;
}

/* Whether `size` bytes are UTF-8 as Python's strict decoder reads it (no overlong form, no
 * surrogate, nothing past U+10FFFF): the Python responder refuses any other HELLO as not
 * JSON before it parses it. */
static int valid_utf8(const unsigned char *at, size_t size) {
  const unsigned char *end = at + size;
  while (at < end) {
    unsigned c = *at++;
    if (c < 0x80) continue;
    if (c < 0xC2 || c > 0xF4) return 0;
    long more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
    unsigned low = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned high = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (end - at < more || at[0] < low || at[0] > high) return 0;
    for (long i = 1; i < more; i++)
      if ((at[i] & 0xC0) != 0x80) return 0;
    at += more;
  }
  return 1;
}

static int hex4(Json *j, unsigned *code) {
  if (j->end - j->at < 4) return 0;
  *code = 0;
  for (int i = 0; i < 4; i++) {
    char c = *j->at++;
    *code <<= 4;
    if (c >= '0' && c <= '9') *code |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') *code |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') *code |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  return 1;
}

/* A string into out (size bytes with its NUL; longer text is cut): *characters and *bytes
 * (its decoded UTF-8) count it all, a \u0000 included. */
static int parse_string(Json *j, char *out, size_t size, size_t *characters, size_t *bytes) {
  char *write = out, *limit = out + (size ? size - 1 : 0);
  *characters = *bytes = 0;
  if (j->at >= j->end || *j->at != '"') return j->error = "a string was expected", 0;
  j->at++;
  while (j->at < j->end && *j->at != '"') {
    unsigned char c = (unsigned char)*j->at++;
    if (c < 0x20) return j->error = "a control character in a string", 0;
    if (c != '\\') {
      if ((c & 0xC0) != 0x80) (*characters)++;
      (*bytes)++;
      if (write < limit) *write++ = (char)c;
      continue;
    }
    if (j->at >= j->end) break;
    char escape = *j->at++;
    const char *simple = strchr("\"\\/bfnrt", escape);
    if (escape && simple) {
      (*characters)++, (*bytes)++;
      if (write < limit) *write++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
    } else if (escape == 'u') {
      unsigned code, low;
      if (!hex4(j, &code)) return j->error = "a bad \\u escape", 0;
      if (code >= 0xD800 && code < 0xDC00 && j->end - j->at >= 6 && j->at[0] == '\\' &&
          j->at[1] == 'u') {
        const char *back = j->at;
        j->at += 2;
        if (hex4(j, &low) && low >= 0xDC00 && low < 0xE000)
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        else
          j->at = back;
      }
      (*characters)++;
      *bytes += put_utf8(&write, limit, code);
    } else {
      return j->error = "a bad escape in a string", 0;
    }
  }
  if (j->at >= j->end) return j->error = "a string is not closed", 0;
  j->at++;
  if (size) *write = 0;
  return 1;
}

static int skip_value(Json *j, int depth);

static int parse_number(Json *j, long long *value, int *integral) {
  const char *start = j->at;
  if (j->at < j->end && *j->at == '-') j->at++;
  if (j->at >= j->end || *j->at < '0' || *j->at > '9') return j->error = "a value was expected", 0;
  if (*j->at == '0') j->at++;
  else while (j->at < j->end && *j->at >= '0' && *j->at <= '9') j->at++;
  *integral = 1;
  if (j->at < j->end && *j->at == '.') {
    *integral = 0, j->at++;
    if (j->at >= j->end || *j->at < '0' || *j->at > '9') return j->error = "a bad number", 0;
    while (j->at < j->end && *j->at >= '0' && *j->at <= '9') j->at++;
  }
  if (j->at < j->end && (*j->at == 'e' || *j->at == 'E')) {
    *integral = 0, j->at++;
    if (j->at < j->end && (*j->at == '+' || *j->at == '-')) j->at++;
    if (j->at >= j->end || *j->at < '0' || *j->at > '9') return j->error = "a bad number", 0;
    while (j->at < j->end && *j->at >= '0' && *j->at <= '9') j->at++;
  }
  if (*integral) {
    /* digits beyond 18 overflow: such a number is out of every range this reads */
    if (j->at - start > 18) *value = -1, *integral = 2;
    else *value = strtoll(start, NULL, 10);
  }
  return 1;
}

static int skip_value(Json *j, int depth) {
  skip_space(j);
  if (depth > MAX_DEPTH) return j->error = "a HELLO nested too deeply to read", 0;
  if (j->at >= j->end) return j->error = "a value was expected", 0;
  char c = *j->at;
  size_t characters, bytes;
  long long number;
  int integral;
  if (c == '"') return parse_string(j, NULL, 0, &characters, &bytes);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    j->at++;
    skip_space(j);
    if (j->at < j->end && *j->at == close) return j->at++, 1;
    for (;;) {
      if (c == '{') {
        skip_space(j);
        if (!parse_string(j, NULL, 0, &characters, &bytes)) return 0;
        skip_space(j);
        if (j->at >= j->end || *j->at++ != ':') return j->error = "':' was expected", 0;
      }
      if (!skip_value(j, depth + 1)) return 0;
      skip_space(j);
      if (j->at < j->end && *j->at == ',') { j->at++; continue; }
      if (j->at < j->end && *j->at == close) return j->at++, 1;
      return j->error = "',' or a closing bracket was expected", 0;
    }
  }
  /* and the constants Python's json reads too (a HELLO with them is JSON to the Python
   * responder) */
  static const char *const words[] = {"true", "false", "null", "NaN", "Infinity", "-Infinity"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t n = strlen(words[i]);
    if ((size_t)(j->end - j->at) >= n && !memcmp(j->at, words[i], n)) return j->at += n, 1;
  }
  return parse_number(j, &number, &integral);
}

/* A string member into `out` (*bytes: its length); a value of another type leaves *has 0. */
static int string_member(Json *j, char *out, size_t size, size_t *bytes, int *has,
                         int *too_long) {
  skip_space(j);
  if (j->at < j->end && *j->at == '"') {
    size_t characters;
    if (!parse_string(j, out, size, &characters, bytes)) return 0;
    *has = 1;
    if (too_long && characters > MAX_NAME) *too_long = 1;
    return 1;
  }
  *has = 0;
  return skip_value(j, 1);
}

/* Whether a string of the HELLO (`bytes` long, decoded) is `name`. */
static int is(const char *text, size_t bytes, const char *name) {
  return bytes == strlen(name) && !memcmp(text, name, bytes);
}

/* The JSON number [at, end) as Python's float() reads it (both round correctly). */
static double decimal(const char *at, const char *end) {
  char text[MAX_HELLO + 1];
  size_t n = (size_t)(end - at) < sizeof text ? (size_t)(end - at) : sizeof text - 1;
  memcpy(text, at, n);
  text[n] = 0;
  return strtod(text, NULL);
}

static const char *parse_hello(const unsigned char *body, size_t size, Hello *h) {
  Json j = {(const char *)body, (const char *)body + size, NULL};
  memset(h, 0, sizeof *h);
  h->delay_ok = 1;
  if (!valid_utf8(body, size)) return "the client sent a HELLO that is not JSON";
  skip_space(&j);
  if (j.at >= j.end || *j.at != '{') {
    if (!skip_value(&j, 0)) return "the client sent a HELLO that is not JSON";
    return "the client sent a HELLO that is not a JSON object";
  }
  j.at++;
  skip_space(&j);
  int empty = j.at < j.end && *j.at == '}';
  if (empty) j.at++;
  while (!empty) {
    char key[32];
    size_t characters, k; /* k: the key's bytes (a longer key than `key` holds is none of ours) */
    skip_space(&j);
    if (!parse_string(&j, key, sizeof key, &characters, &k)) goto bad;
    skip_space(&j);
    if (j.at >= j.end || *j.at++ != ':') { j.error = "':' was expected"; goto bad; }
    int ok;
    if (is(key, k, "protocol")) ok = string_member(&j, h->protocol, sizeof h->protocol, &h->protocol_bytes, &h->has_protocol, NULL);
    else if (is(key, k, "codec")) ok = string_member(&j, h->codec, sizeof h->codec, &h->codec_bytes, &h->has_codec, &h->too_long);
    else if (is(key, k, "profile")) ok = string_member(&j, h->profile, sizeof h->profile, &h->profile_bytes, &h->has_profile, &h->too_long);
    else if (is(key, k, "message")) ok = string_member(&j, h->message, sizeof h->message, &h->message_bytes, &h->has_message, &h->too_long);
    else if (is(key, k, "mode")) ok = string_member(&j, h->mode, sizeof h->mode, &h->mode_bytes, &h->has_mode, &h->too_long);
    else if (is(key, k, "token")) ok = string_member(&j, h->token, sizeof h->token, &h->token_bytes, &h->has_token, NULL);
    else if (is(key, k, "version") || is(key, k, "reply_delay_ns")) {
      /* A number is an int to Python's json without a fraction or an exponent, else a float:
       * the version is 2 as an int or a float equal to it (2.0, 2e0: Python's 2.0 == 2);
       * reply_delay_ns must be an int. */
      long long value = 0;
      int integral = 0;
      double real = 0;
      skip_space(&j);
      const char *start = j.at, *digit = start < j.end && *start == '-' ? start + 1 : start;
      ok = skip_value(&j, 1);
      if (ok && digit < j.at && *digit >= '0' && *digit <= '9') { /* a number, not -Infinity */
        Json number = {start, j.at, NULL};
        parse_number(&number, &value, &integral);
        if (!integral) real = decimal(start, j.at);
      }
      if (key[0] == 'v') h->version_ok = integral == 1 ? value == VERSION : integral == 0 && real == VERSION;
      else { h->delay_ok = integral == 1 && value >= 0 && value <= MAX_REPLY_DELAY_NS; h->reply_delay_ns = value; }
    } else ok = skip_value(&j, 1);
    if (!ok) goto bad;
    skip_space(&j);
    if (j.at < j.end && *j.at == ',') { j.at++; continue; }
    if (j.at < j.end && *j.at == '}') { j.at++; break; }
    j.error = "',' or '}' was expected";
    goto bad;
  }
  skip_space(&j);
  if (j.at != j.end) { j.error = "extra data after the object"; goto bad; }
  return NULL;
bad:
  if (j.error && !strcmp(j.error, "a HELLO nested too deeply to read"))
    return "the client sent a HELLO nested too deeply to read";
  return "the client sent a HELLO that is not JSON";
}

/* In constant time; `offered` is `a` bytes long, a NUL in it included. */
static int same_token(const char *offered, size_t a, const char *wanted) {
  size_t b = strlen(wanted);
  unsigned char diff = (unsigned char)(a != b);
  for (size_t i = 0; i < b; i++) diff |= (unsigned char)(wanted[i] ^ (i < a ? offered[i] : 0));
  return diff == 0;
}

#ifdef ACK_CODECS
/* A client's value as Python's repr() quotes a string, in ASCII, cut to MAX_QUOTED
 * characters (evbench_agent.link.handshake.quoted): what a refusal may say back. */
static void quote(char *out, size_t size, const char *value, size_t bytes) {
  char text[MAX_QUOTED * 4 + 8];
  size_t n = 0;
  text[n++] = '\'';
  const unsigned char *at = (const unsigned char *)value, *end = at + bytes;
  for (; at < end && n < MAX_QUOTED + 1; at++) {
    if (*at == '\\' || *at == '\'') text[n++] = '\\', text[n++] = (char)*at;
    else if (*at < 0x20 || *at >= 0x7f) n += (size_t)snprintf(text + n, 5, "\\x%02x", *at);
    else text[n++] = (char)*at;
  }
  text[n++] = '\'';
  if (n > MAX_QUOTED) memcpy(text + MAX_QUOTED - 3, "...", 3), n = MAX_QUOTED;
  text[n] = 0;
  snprintf(out, size, "%s", text);
}
#endif

/* NULL for a HELLO this responder serves, else why not (a constant, or written to `why`).
 * *codec is what ack mode decodes with (CODEC_ECHO in echo mode), *type its message type
 * (protobuf-c's descriptor). */
static const char *check_hello(const Hello *h, int *codec, const void **type, char *why,
                               size_t size) {
  *codec = CODEC_ECHO, *type = NULL;
  if (!h->has_protocol || !is(h->protocol, h->protocol_bytes, PROTOCOL) || !h->version_ok)
    return "another protocol or version; this responder speaks 'evbench-link' version 2";
  if (!h->has_codec || !h->has_profile || !h->has_message || !h->has_mode)
    return "a HELLO needs the strings codec, profile, message, mode";
  if (h->too_long) return "a name in the HELLO is over 200 characters";
  int echo = is(h->mode, h->mode_bytes, "echo");
  if (!echo && !is(h->mode, h->mode_bytes, "ack"))
    return "unknown mode (known: echo, ack)";
  if (token && !(h->has_token && same_token(h->token, h->token_bytes, token)))
    return "the HELLO does not carry this responder's token";
  if (!h->delay_ok) return "reply_delay_ns must be an integer 0..1000000000";
  if (echo) return NULL;
#ifdef ACK_CODECS
  char asked[MAX_QUOTED + 1], carried[MAX_QUOTED + 1];
#ifdef EVBENCH_ACK_JSON
  if (is(h->codec, h->codec_bytes, "json")) *codec = CODEC_JSON;
#endif
#ifdef EVBENCH_ACK_PROTOBUF
  if (is(h->codec, h->codec_bytes, "protobuf")) *codec = CODEC_PROTOBUF;
#endif
  if (*codec == CODEC_ECHO) {
    quote(asked, sizeof asked, h->codec, h->codec_bytes);
    snprintf(why, size, "this responder (evbench-link-responder, C) decodes " ACK_CODECS
             " in ack mode, not codec %s: use evbench-agent serve, or echo mode", asked);
    return why;
  }
  const char *message = NULL;
  char known[128] = "";
  for (size_t i = 0; i < sizeof ack_profiles / sizeof ack_profiles[0]; i++) {
    if (is(h->profile, h->profile_bytes, ack_profiles[i].profile)) message = ack_profiles[i].message;
    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
             ack_profiles[i].profile);
  }
  if (!message) {
    *codec = CODEC_ECHO;
    quote(asked, sizeof asked, h->profile, h->profile_bytes);
    snprintf(why, size, "unknown profile %s: in ack mode this responder (evbench-link-responder, "
             "C) decodes the profiles %s; use evbench-agent serve for the others", asked, known);
    return why;
  }
  if (!is(h->message, h->message_bytes, message)) {
    *codec = CODEC_ECHO;
    quote(asked, sizeof asked, h->message, h->message_bytes);
    quote(carried, sizeof carried, h->profile, h->profile_bytes);
    snprintf(why, size, "profile %s carries %s, not %s", carried, message, asked);
    return why;
  }
#ifdef EVBENCH_ACK_PROTOBUF
  if (*codec == CODEC_PROTOBUF && !(*type = pbc_descriptor_named(message))) {
    *codec = CODEC_ECHO;
    snprintf(why, size, "this build of evbench-link-responder has no protobuf-c type %s", message);
    return why;
  }
#endif
  return NULL;
#else
  (void)why, (void)size;
  return "this responder (evbench-link-responder, C) was built without its codec runtimes "
         "(c:protobuf-c, c:cjson), so it answers echo mode only: use evbench-agent serve";
#endif
}

/* `text` as the inside of a JSON string. */
static size_t json_text(char *out, size_t size, const char *text) {
  size_t n = 0;
  for (const unsigned char *at = (const unsigned char *)text; *at && n + 7 < size; at++) {
    if (*at == '"' || *at == '\\') out[n++] = '\\', out[n++] = (char)*at;
    else if (*at < 0x20) n += (size_t)snprintf(out + n, 7, "\\u%04x", *at);
    else out[n++] = (char)*at;
  }
  out[n] = 0;
  return n;
}

/* The answer to a HELLO: JSON as Python's json.dumps writes it. */
static int answer(int fd, const char *error, int busy) {
  char body[1024], text[768];
  int n;
  if (error) {
    json_text(text, sizeof text, error);
    n = snprintf(body, sizeof body, "{\"ok\": false, \"error\": \"%s\"%s}", text,
                 busy ? ", \"reason\": \"busy\"" : "");
  } else {
    n = snprintf(body, sizeof body, "{\"ok\": true, \"max_frame\": %u, \"responder\": \"%s\"}",
                 max_frame, RESPONDER_NAME);
  }
  return send_frame(fd, HELLO, 0, body, (size_t)n);
}

/* --- A connection ----------------------------------------------------------------------- */

typedef struct {
  int fd;
  char name[64], host[INET6_ADDRSTRLEN];
  unsigned char *buffer;
  size_t used, capacity;
  int64_t received_ns;
  char failure[256];               /* why converse() ended, when it says more than a constant */
  Place *place;
} Connection;

/* One recv() into the buffer; 0 when the peer closed, -1 on an error or timeout. */
static int fill(Connection *c) {
  if (c->capacity - c->used < RECV_SIZE) {
    size_t want = c->used + RECV_SIZE;
    unsigned char *grown = realloc(c->buffer, want);
    if (!grown) return -1;
    c->buffer = grown, c->capacity = want;
  }
  ssize_t got;
  do got = recv(c->fd, c->buffer + c->used, RECV_SIZE, 0);
  while (got < 0 && errno == EINTR);
  c->received_ns = now_ns(CLOCK_MONOTONIC);
  if (got <= 0) return (int)got;
  c->used += (size_t)got;
  return 1;
}

/* The first frame, within the handshake deadline; NULL and *why when there is none. */
static int read_hello(Connection *c, const char **why) {
  int64_t deadline = now_ns(CLOCK_MONOTONIC) + (int64_t)HANDSHAKE_DEADLINE_MS * 1000000;
  for (;;) {
    if (c->used >= 4) {
      uint32_t length = (uint32_t)get_le(c->buffer, 4);
      if (length < HEADER) return *why = "the client sent a first frame of fewer than 9 bytes", -1;
      if (length > HEADER + MAX_HELLO) return *why = "the client sent a first frame longer than a HELLO", -1;
      if (c->used >= 4 + length) {
        if (c->buffer[4] != HELLO) return *why = "the client sent another frame where HELLO was expected", -1;
        __atomic_store_n(&c->place->hello_read, 1, __ATOMIC_RELAXED);
        return (int)length;
      }
    }
    int64_t left = (deadline - now_ns(CLOCK_MONOTONIC)) / 1000000;
    struct pollfd wait = {c->fd, POLLIN, 0};
    if (left <= 0 || poll(&wait, 1, (int)left) == 0)
      return *why = "did not complete the handshake within 5 s", -2;
    int got = fill(c);
    if (got <= 0) return *why = NULL, -2;
  }
}

static void hold_until(int64_t until) {
  int64_t left = until - now_ns(CLOCK_MONOTONIC);
  if (left > 200000) {
    struct timespec nap = {0, 0};
    int64_t sleep_ns = left - 150000;
    nap.tv_sec = sleep_ns / 1000000000, nap.tv_nsec = sleep_ns % 1000000000;
    nanosleep(&nap, NULL);
  }
  while (now_ns(CLOCK_MONOTONIC) < until) {}
}

/* Ack mode: decode `data` with the codec and read every leaf of it (into *sum), then write
 * the ack of `sequence` and `receive_ns` encoded with the same codec to `out` (`room`
 * bytes), as evbench_agent.link.messages encodes it: for protobuf an evbench.link.Ack, for
 * json {"sequence":S,"receive_ns":T} with compact separators. The ack's size, or -1 when
 * the message does not decode. */
static long decode_and_ack(int codec, const void *type, const unsigned char *data, size_t size,
                           uint64_t sequence, int64_t receive_ns, unsigned char *out, size_t room,
                           uint64_t *sum) {
  (void)type, (void)data, (void)size, (void)sequence, (void)receive_ns, (void)out, (void)room;
  (void)sum;
#ifdef EVBENCH_ACK_PROTOBUF
  if (codec == CODEC_PROTOBUF) {
    ProtobufCMessage *message = protobuf_c_message_unpack(type, NULL, size, data);
    if (!message) return -1;
    pbc_walk(message, sum);
    protobuf_c_message_free_unpacked(message, NULL);
    Evbench__Link__Ack ack = EVBENCH__LINK__ACK__INIT;
    ack.sequence = sequence, ack.receive_ns = (uint64_t)receive_ns;
    return (long)evbench__link__ack__pack(&ack, out);
  }
#endif
#ifdef EVBENCH_ACK_JSON
  if (codec == CODEC_JSON) {
    const char *text = (const char *)data, *end = NULL;
    cJSON *tree = cJSON_ParseWithLengthOpts(text, size, &end, 0);
    if (!tree) return -1;
    while (end < text + size && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    if (end != text + size) { /* extra data after the value: Python's json.loads refuses it */
      cJSON_Delete(tree);
      return -1;
    }
    cjson_walk(tree, sum);
    cJSON_Delete(tree);
    /* The numbers as raw text: cJSON keeps a number as a double, exact only below 2^53. */
    char number[24];
    cJSON *ack = cJSON_CreateObject();
    snprintf(number, sizeof number, "%llu", (unsigned long long)sequence);
    cJSON_AddRawToObject(ack, "sequence", number);
    snprintf(number, sizeof number, "%lld", (long long)receive_ns);
    cJSON_AddRawToObject(ack, "receive_ns", number);
    int printed = cJSON_PrintPreallocated(ack, (char *)out, (int)room, 0);
    cJSON_Delete(ack);
    return printed ? (long)strlen((char *)out) : -1;
  }
#endif
  (void)codec;
  return -1;
}

static const char *codec_name(int codec) {
  return codec == CODEC_JSON ? "json" : codec == CODEC_PROTOBUF ? "protobuf" : "echo";
}

/* Answer MESSAGE and STATS frames until the client closes or breaks a rule. */
static const char *converse(Connection *c, size_t start, int64_t delay_ns, int codec,
                            const void *type, const char *message) {
  int64_t *last_message = &c->place->last_message;
  int64_t cpu_start = now_ns(CLOCK_THREAD_CPUTIME_ID), last_frame = now_ns(CLOCK_MONOTONIC);
  unsigned long long answered = 0;
  volatile uint64_t sink = 0; /* what ack mode read of each message ends here */
  unsigned char *reply = malloc(PREFIX + 8 + max_frame);
  if (!reply) return "out of memory";
  size_t at = start;
  const char *why = NULL;
  for (;;) {
    while (c->used - at >= PREFIX) {
      unsigned char *frame = c->buffer + at;
      uint32_t length = (uint32_t)get_le(frame, 4);
      if (length < HEADER || length > max_frame) { why = "a frame length outside 9..max frame"; goto done; }
      if (c->used - at < 4 + (size_t)length) break;
      int kind = frame[4];
      uint64_t sequence = get_le(frame + 5, 8);
      size_t body = length - HEADER;
      if (kind == MESSAGE) {
        __atomic_store_n(last_message, c->received_ns, __ATOMIC_RELAXED); /* keeps the slot */
        size_t size = body;
        if (codec == CODEC_ECHO) {
          memcpy(reply + PREFIX + 8, frame + PREFIX, body);
        } else {
          uint64_t sum = 0;
          long acked = decode_and_ack(codec, type, frame + PREFIX, body, sequence, c->received_ns,
                                      reply + PREFIX + 8, max_frame, &sum);
          if (acked < 0) {
            snprintf(c->failure, sizeof c->failure, "message %llu does not decode as %s %.200s",
                     (unsigned long long)sequence, codec_name(codec), message);
            why = c->failure;
            goto done;
          }
          sink += sum;
          size = (size_t)acked;
        }
        put_le(reply, HEADER + 8 + size, 4);
        reply[4] = REPLY;
        memcpy(reply + 5, frame + 5, 8);
        int64_t processing = now_ns(CLOCK_MONOTONIC) - c->received_ns;
        if (delay_ns) hold_until(c->received_ns + processing + delay_ns);
        put_le(reply + PREFIX, (uint64_t)processing, 8);
        if (send_all(c->fd, reply, PREFIX + 8 + size)) { why = "the client stopped reading"; goto done; }
        answered++;
      } else if (kind == STATS) {
        char counts[96];
        int n = snprintf(counts, sizeof counts, "{\"messages\": %llu, \"cpu_ns\": %lld}", answered,
                         (long long)(now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start));
        if (send_frame(c->fd, STATS_REPLY, sequence, counts, (size_t)n)) { why = "the client stopped reading"; goto done; }
      } else {
        why = "an unexpected frame kind from a client";
        goto done;
      }
      at += 4 + length;
      last_frame = c->received_ns;
    }
    memmove(c->buffer, c->buffer + at, c->used - at);
    c->used -= at, at = 0;
    int got = fill(c);
    if (got == 0) {
      if (c->used) why = "the client closed the connection in the middle of a frame";
      goto done;
    }
    if (got < 0) {
      why = errno == EAGAIN || errno == EWOULDBLOCK ? "idle for 120 s" : "the connection failed";
      goto done;
    }
    /* bytes, but no whole frame: a client that dribbles a frame is idle too */
    if (c->received_ns - last_frame > (int64_t)IDLE_TIMEOUT_S * 1000000000) {
      why = "no whole frame for 120 s";
      goto done;
    }
  }
done:
  free(reply);
  return why;
}

/* --- Pending places and slots ------------------------------------------------------------ */

static char room_text[160], busy_text[160];
static const char idle_text[] =
    "gave up its slot to a new client: no message for " TEXT(IDLE_BUDGET_S) " s (the idle budget)";

/* Close a connection whose place or slot is taken from it (lock held): its thread ends. */
static void take(Place *place, int why) {
  if (place->state == PENDING) pending--;
  else if (place->state == SERVED) served--;
  place->state = CLOSING, place->taken = why;
  shutdown(place->fd, SHUT_RDWR);
}

static int by_host_then_age(const void *a, const void *b) {
  const Place *x = *(Place *const *)a, *y = *(Place *const *)b;
  int order = strcmp(x->host, y->host);
  return order ? order : (x->order > y->order) - (x->order < y->order);
}

/* Whether the whole HELLO of a pending connection has come: read by its thread, or
 * waiting in the socket (a thread not yet scheduled, on a loaded machine). A slow-loris
 * client's never has; a real client's comes in one write, so it is the one spared. */
static int hello_came(const Place *place) {
  if (__atomic_load_n(&place->hello_read, __ATOMIC_RELAXED)) return 1;
  unsigned char head[4];
  int waiting = 0;
  if (recv(place->fd, head, sizeof head, MSG_PEEK | MSG_DONTWAIT) != (ssize_t)sizeof head ||
      ioctl(place->fd, FIONREAD, &waiting) != 0)
    return 0;
  return (uint64_t)waiting >= 4 + (uint64_t)get_le(head, 4);
}

/* Before a new connection from `host` takes a pending place (lock held): close the oldest
 * pending connection of `host` when it holds its share, or of the peer holding the most
 * (of those, the one waiting longest) when every pending place is taken. A connection
 * whose whole HELLO has come is passed over while another can go: it leaves its pending
 * place at once, served or refused (so a peer may hold past its share for that moment). */
static void make_room(const char *host) {
  int mine = 0, n = 0;
  Place *oldest_mine = NULL;
  for (int i = 0; i < place_count; i++) {
    Place *place = &places[i];
    if (place->state != PENDING) continue;
    int own = !strcmp(place->host, host);
    mine += own;
    if (hello_came(place)) continue;
    scratch[n++] = place;
    if (own && (!oldest_mine || place->order < oldest_mine->order)) oldest_mine = place;
  }
  if (mine >= max_pending_per_peer && oldest_mine) {
    take(oldest_mine, TAKEN_FOR_ROOM);
    return;
  }
  if (pending < max_pending) return;
  if (!n) /* every pending connection has its HELLO: the places' cap still holds */
    for (int i = 0; i < place_count; i++)
      if (places[i].state == PENDING) scratch[n++] = &places[i];
  qsort(scratch, (size_t)n, sizeof *scratch, by_host_then_age);
  Place *crowded = NULL;
  int most = 0;
  for (int first = 0, end; first < n; first = end) {
    for (end = first + 1; end < n && !strcmp(scratch[end]->host, scratch[first]->host); end++) {}
    if (end - first > most || (end - first == most && scratch[first]->order < crowded->order))
      most = end - first, crowded = scratch[first];
  }
  if (crowded) take(crowded, TAKEN_FOR_ROOM);
}

/* Peer addresses under the quiet penalty (lock held to read or write). */
static struct {
  char host[INET6_ADDRSTRLEN];
  int64_t until;
} penalties[PENALIZED_PEERS];

static int penalized(const char *host, int64_t now) {
  for (int i = 0; i < PENALIZED_PEERS; i++)
    if (penalties[i].until > now && !strcmp(penalties[i].host, host)) return 1;
  return 0;
}

/* `host` takes no silent client's slot for QUIET_PENALTY_S: its entry, a lapsed one, or the
 * one that lapses soonest is written. */
static void penalize(const char *host, int64_t now) {
  int chosen = 0;
  for (int i = 0; i < PENALIZED_PEERS; i++) {
    if (!strcmp(penalties[i].host, host)) { chosen = i; break; }
    if (penalties[i].until < penalties[chosen].until) chosen = i;
  }
  snprintf(penalties[chosen].host, sizeof penalties[chosen].host, "%s", host);
  penalties[chosen].until = now + (int64_t)QUIET_PENALTY_S * 1000000000;
}

/* A slot for the connection of `place`, whose HELLO passed (the Python responder's rule):
 * a free one while its peer holds fewer than its share; else the slot of a client silent for
 * the idle budget (of its own peer when that holds its share, else of the peer holding the
 * most slots; the longest silent of those), unless its own peer is under the quiet penalty.
 * NULL once it holds one, else why not (*busy when other clients hold every slot). */
static const char *claim_slot(Place *place, int *busy) {
  const char *why = NULL;
  pthread_mutex_lock(&lock);
  int64_t now = now_ns(CLOCK_MONOTONIC), idle_before = now - (int64_t)IDLE_BUDGET_S * 1000000000;
  Place *idle = NULL;
  if (place->taken) {
    why = room_text; /* its pending place went to a newer connection meanwhile */
    goto done;
  }
  int n = 0, held = 0;
  for (int i = 0; i < place_count; i++)
    if (places[i].state == SERVED) {
      scratch[n++] = &places[i];
      held += !strcmp(places[i].host, place->host);
    }
  int at_share = held >= max_per_peer;
  if (served < max_connections && !at_share) goto take;
  if (!penalized(place->host, now)) {
    qsort(scratch, (size_t)n, sizeof *scratch, by_host_then_age);
    int64_t idle_last = 0;
    int idle_group = 0;
    for (int first = 0, end; first < n; first = end) {
      for (end = first + 1; end < n && !strcmp(scratch[end]->host, scratch[first]->host); end++) {}
      int group = end - first;
      if (at_share && strcmp(scratch[first]->host, place->host)) continue;
      for (int i = first; i < end; i++) {
        int64_t last = __atomic_load_n(&scratch[i]->last_message, __ATOMIC_RELAXED);
        if (last < idle_before &&
            (!idle || group > idle_group || (group == idle_group && last < idle_last)))
          idle = scratch[i], idle_last = last, idle_group = group;
      }
    }
  }
  if (!idle) {
    why = busy_text, *busy = 1;
    goto done;
  }
  if (strcmp(idle->host, place->host)) penalize(idle->host, now);
  take(idle, TAKEN_IDLE);
take:
  pending--, served++;
  place->state = SERVED;
  __atomic_store_n(&place->last_message, now, __ATOMIC_RELAXED);
done:
  pthread_mutex_unlock(&lock);
  return why;
}

/* The connection's place is free again; why it was taken, if it was (KEPT otherwise). */
static int forget(Place *place) {
  pthread_mutex_lock(&lock);
  int taken = place->taken;
  if (place->state == PENDING) pending--;
  else if (place->state == SERVED) served--;
  place->state = FREE, place->taken = KEPT, place->fd = -1;
  threads--;
  pthread_cond_broadcast(&gone);
  pthread_mutex_unlock(&lock);
  return taken;
}

/* Say who was dropped and why, at most once per peer address per DROP_LOG_INTERVAL_S; the
 * drops held back are counted in the peer's next line (the Python responder's DropLog). */
typedef struct {
  char host[INET6_ADDRSTRLEN];
  int64_t logged_at;
  unsigned long held;
} DropLine;
static DropLine drop_lines[DROP_LOG_PEERS];
static int drop_line_count;
static pthread_mutex_t drop_lock = PTHREAD_MUTEX_INITIALIZER;

static void dropped(const char *host, const char *name, const char *why) {
  int64_t now = now_ns(CLOCK_MONOTONIC), interval = (int64_t)DROP_LOG_INTERVAL_S * 1000000000;
  unsigned long held = 0;
  DropLine *line = NULL, *stalest = NULL;
  pthread_mutex_lock(&drop_lock);
  for (int i = 0; i < drop_line_count && !line; i++) {
    if (!strcmp(drop_lines[i].host, host)) line = &drop_lines[i];
    else if (!stalest || drop_lines[i].logged_at < stalest->logged_at) stalest = &drop_lines[i];
  }
  if (line && now - line->logged_at < interval) {
    line->held++;
    pthread_mutex_unlock(&drop_lock);
    return;
  }
  if (line) held = line->held;
  else if (drop_line_count < DROP_LOG_PEERS) line = &drop_lines[drop_line_count++];
  else line = stalest; /* the peer logged longest ago is forgotten */
  snprintf(line->host, sizeof line->host, "%s", host);
  line->logged_at = now, line->held = 0;
  pthread_mutex_unlock(&drop_lock);
  if (held)
    say("%s: dropped: %s (and %lu more from %s in the last %d s)", name, why, held, host,
        DROP_LOG_INTERVAL_S);
  else
    say("%s: dropped: %s", name, why);
}

static void *connection(void *arg) {
  Connection *c = arg;
  int one = 1;
  struct timeval send_timeout = {SEND_TIMEOUT_S, 0}, idle = {IDLE_TIMEOUT_S, 0};
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  const char *why = NULL;
  int length = read_hello(c, &why);
  if (length == -1) answer(c->fd, why, 0);
  if (length >= 0) {
    Hello hello;
    int codec = CODEC_ECHO, busy = 0;
    const void *type = NULL;
    why = parse_hello(c->buffer + PREFIX, (size_t)length - HEADER, &hello);
    if (!why) why = check_hello(&hello, &codec, &type, c->failure, sizeof c->failure);
    if (why) {
      answer(c->fd, why, 0);
    } else if ((why = claim_slot(c->place, &busy))) {
      if (busy) answer(c->fd, why, 1);
    } else if (answer(c->fd, NULL, 0) == 0) {
      setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
      why = converse(c, 4 + (size_t)length, hello.reply_delay_ns, codec, type, hello.message);
    }
  }
  int fd = c->fd, taken = forget(c->place); /* before close(): a new connection may get fd */
  if (taken) why = taken == TAKEN_IDLE ? idle_text : room_text;
  if (why && !stopping) dropped(c->host, c->name, why);
  close(fd);
  free(c->buffer);
  free(c);
  return NULL;
}

static void stop(int signum) {
  (void)signum;
  stopping = 1;
}

/* The program that started it, watched as `evbench-agent serve` watches its host
 * (evbench_agent.processes.host_watch): when its standard output is a pipe or a socket (a program
 * reads it: the agent, `evbench`), it stops as on SIGTERM once that reader has closed it
 * or its parent process has exited (a new parent: reparented to init), looked at every
 * WATCH_INTERVAL_MS. A responder the agent started must not outlive an agent that was
 * killed outright (SIGKILL cannot be caught, so the agent cannot stop it). Not
 * PR_SET_PDEATHSIG: it fires when the *thread* that started the process ends, which
 * need not be when its process does. Started by hand (a terminal, a file), it is not
 * watched: it is meant to run on its own. */
static int watching;
static pid_t watched_parent;

static void watch_start(void) {
  struct stat out;
  if (fstat(STDOUT_FILENO, &out) || !(S_ISFIFO(out.st_mode) || S_ISSOCK(out.st_mode))) return;
  watching = 1;
  watched_parent = getppid();
}

/* Why the program that started it is gone (poll's events on standard output), or NULL. */
static const char *host_gone(short events, char *why, size_t size) {
  if (!watching) return NULL;
  if (events & (POLLERR | POLLHUP)) return "its reader closed standard output";
  if (getppid() != watched_parent) {
    snprintf(why, size, "its parent process %ld exited", (long)watched_parent);
    return why;
  }
  return NULL;
}

/* accept() found no descriptor (or memory) for a queued connection: the listener is left
 * out of poll() for ACCEPT_REST_MS, as it stays readable while connections wait in its
 * queue, and poll() would wake at once for the same one again and again (a busy spin
 * that takes the CPU from the connections being measured). Said at most once per
 * DROP_LOG_INTERVAL_S, with the count of the rests since. Returns when the rest ends. */
static int64_t rest_listener(int error) {
  static int64_t logged_at = INT64_MIN;
  static unsigned long held;
  int64_t now = now_ns(CLOCK_MONOTONIC);
  if (logged_at != INT64_MIN && now - logged_at < (int64_t)DROP_LOG_INTERVAL_S * 1000000000) {
    held++;
  } else {
    char limit[64] = "", more[64] = "";
    struct rlimit files;
    if (error == EMFILE && !getrlimit(RLIMIT_NOFILE, &files))
      snprintf(limit, sizeof limit, " (RLIMIT_NOFILE %llu)", (unsigned long long)files.rlim_cur);
    if (held) snprintf(more, sizeof more, " (%lu more times in the last %d s)", held, DROP_LOG_INTERVAL_S);
    say("cannot accept a connection: %s%s: new connections wait in the listen queue; "
        "accepting again every %d ms%s", strerror(error), limit, ACCEPT_REST_MS, more);
    logged_at = now, held = 0;
  }
  return now + (int64_t)ACCEPT_REST_MS * 1000000;
}

static int number_option(const char *text, long low, long high, long *value) {
  char *end;
  errno = 0;
  *value = strtol(text, &end, 10);
  return !errno && end != text && !*end && *value >= low && *value <= high;
}

/* SCHED_FIFO priority asked for with --realtime: the Python responder's (link/timing.py). */
#define FIFO_PRIORITY 80

/* Ask for SCHED_FIFO and a 1 ns timer slack; a refusal (no CAP_SYS_NICE) shows in what
 * policy_name() reads back, as the Python responder records what was granted. */
static void enter_realtime(void) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  struct sched_param param = {.sched_priority = FIFO_PRIORITY};
  sched_setscheduler(0, SCHED_FIFO, &param);
}

static const char *policy_name(void) {
  switch (sched_getscheduler(0)) {
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_FIFO: return "SCHED_FIFO";
    case SCHED_RR: return "SCHED_RR";
    default: return "another policy";
  }
}

#define USAGE "usage: evbench-link-responder [--bind ADDR] [--port N] [--max-frame B] " \
              "[--max-connections N] [--realtime] | --about"

/* `--about`: what this build is and what its ack mode decodes, one line. */
static void print_about(void) {
  printf("ok\tresponder=%s\tack_codecs=%s\tack_profiles=", RESPONDER_NAME, ACK_CODEC_NAMES);
#ifdef ACK_CODECS
  for (size_t i = 0; i < sizeof ack_profiles / sizeof ack_profiles[0]; i++)
    printf("%s%s", i ? "," : "", ack_profiles[i].profile);
#endif
  putchar('\n');
}

int main(int argc, char **argv) {
  const char *bind_to = "127.0.0.1";
  long port = 50505, value;
  int realtime = 0;
  for (int i = 1; i < argc; i++) {
    const char *option = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(option, "--realtime")) { realtime = 1; continue; }
    if (!strcmp(option, "--about") && argc == 2) { print_about(); return 0; }
    if (!arg) { say("%s needs a value", option); return 2; }
    if (!strcmp(option, "--bind")) bind_to = arg;
    else if (!strcmp(option, "--port") && number_option(arg, 0, 65535, &value)) port = value;
    else if (!strcmp(option, "--max-frame") && number_option(arg, 64, 1L << 26, &value)) max_frame = (uint32_t)value;
    else if (!strcmp(option, "--max-connections") && number_option(arg, 1, 4096, &value)) max_connections = (int)value;
    else {
      say(USAGE);
      return 2;
    }
    i++;
  }
  if (realtime) enter_realtime();  /* before any thread: each one inherits it */
  token = getenv(TOKEN_ENV);
  if (token && !*token) token = NULL;
  max_pending = PENDING_PER_SLOT * max_connections;
  max_pending_per_peer = max_pending / PEER_SHARE > 1 ? max_pending / PEER_SHARE : 1;
  max_per_peer = max_connections - max_connections / RESERVED_SHARE;
  place_count = max_connections * (PENDING_PER_SLOT + 1 + CLOSING_PER_SLOT);
  places = calloc((size_t)place_count, sizeof *places);
  scratch = calloc((size_t)place_count, sizeof *scratch);
  if (!places || !scratch) { say("out of memory"); return 2; }
  for (int i = 0; i < place_count; i++) places[i].fd = -1;
  snprintf(room_text, sizeof room_text, "still in its handshake when the pending connections "
           "were full (%d, %d per peer)", max_pending, max_pending_per_peer);
  snprintf(busy_text, sizeof busy_text, "the connection limit (%d) is reached: other clients "
           "hold every slot", max_connections);

  struct addrinfo hints = {0}, *found;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  char port_text[8];
  snprintf(port_text, sizeof port_text, "%ld", port);
  int status = getaddrinfo(bind_to, port_text, &hints, &found);
  if (status) { say("cannot listen on %s:%ld: %s", bind_to, port, gai_strerror(status)); return 2; }
  int listener = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listener < 0 || bind(listener, found->ai_addr, found->ai_addrlen) || listen(listener, max_pending)) {
    say("cannot listen on %s:%ld: %s", bind_to, port, strerror(errno));
    return 2;
  }
  freeaddrinfo(found);
  struct sockaddr_storage address;
  socklen_t size = sizeof address;
  getsockname(listener, (struct sockaddr *)&address, &size);
  char host[INET6_ADDRSTRLEN], service[8];
  getnameinfo((struct sockaddr *)&address, size, host, sizeof host, service, sizeof service,
              NI_NUMERICHOST | NI_NUMERICSERV);
  int loopback = !strncmp(host, "127.", 4) || !strcmp(host, "::1");
  say("listening on %s:%s (%s); max frame %u B, %d connections, %s, %s, %s", host, service,
      loopback ? "loopback only; --bind ADDRESS to accept other machines"
               : "reachable from other machines on this address",
      max_frame, max_connections, policy_name(),
#ifdef ACK_CODECS
      "echo and ack mode (ack: " ACK_CODECS ")",
#else
      "echo mode only",
#endif
      token ? "a shared token required" : "no token");
  if (!loopback && !token)
    say("WARNING: anyone who can reach %s:%s can use this responder; set %s on both sides to "
        "require a shared token", host, service, TOKEN_ENV);
  struct rlimit files; /* each open connection takes a descriptor; it has 4 of its own */
  if (!getrlimit(RLIMIT_NOFILE, &files) && files.rlim_cur != RLIM_INFINITY &&
      (rlim_t)place_count + 4 > files.rlim_cur)
    say("RLIMIT_NOFILE (%llu descriptors) is below the %d connections it may hold open "
        "(%d x --max-connections): past it new connections wait in the listen queue; raise "
        "it (ulimit -n) or lower --max-connections", (unsigned long long)files.rlim_cur,
        place_count, PENDING_PER_SLOT + 1 + CLOSING_PER_SLOT);
  printf("{\"event\": \"listening\", \"host\": \"%s\", \"port\": %s}\n", host, service);
  fflush(stdout);

  struct sigaction on_stop = {0};
  on_stop.sa_handler = stop;
  sigaction(SIGTERM, &on_stop, NULL);
  sigaction(SIGINT, &on_stop, NULL);
  pthread_attr_t detached;
  pthread_attr_init(&detached);
  pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
  signal(SIGPIPE, SIG_IGN); /* a log line to a reader that is gone must not kill it */
  watch_start();
  int64_t resting_until = 0; /* the listener is out of poll() until then (rest_listener) */
  while (!stopping) {
    int64_t rest = resting_until - now_ns(CLOCK_MONOTONIC);
    int timeout = rest > 0 && rest / 1000000 < WATCH_INTERVAL_MS ? (int)(rest / 1000000) + 1
                                                                 : WATCH_INTERVAL_MS;
    /* no events asked of standard output: poll reports only its errors and hang-up; a
     * negative descriptor (a resting listener) it leaves out */
    struct pollfd wait[2] = {{rest > 0 ? -1 : listener, POLLIN, 0}, {STDOUT_FILENO, 0, 0}};
    int ready = poll(wait, watching ? 2 : 1, timeout);
    char parent_text[64];
    const char *gone = host_gone(ready > 0 ? wait[1].revents : 0, parent_text, sizeof parent_text);
    if (gone) {
      say("the host went away (%s): the responder stops as on SIGTERM", gone);
      break;
    }
    if (ready <= 0 || !(wait[0].revents & POLLIN)) continue;
    struct sockaddr_storage peer;
    socklen_t peer_size = sizeof peer;
    int fd = accept4(listener, (struct sockaddr *)&peer, &peer_size, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        resting_until = rest_listener(errno);
      continue;
    }
    Connection *c = calloc(1, sizeof *c);
    char peer_host[INET6_ADDRSTRLEN] = "?", peer_port[8] = "?";
    getnameinfo((struct sockaddr *)&peer, peer_size, peer_host, sizeof peer_host, peer_port,
                sizeof peer_port, NI_NUMERICHOST | NI_NUMERICSERV);
    Place *place = NULL;
    pthread_mutex_lock(&lock);
    if (c) make_room(peer_host);
    for (int i = 0; i < place_count && c && !place; i++)
      if (places[i].state == FREE) place = &places[i];
    if (place) {
      place->fd = fd, place->state = PENDING, place->taken = KEPT, place->order = accepted++;
      __atomic_store_n(&place->hello_read, 0, __ATOMIC_RELAXED);
      snprintf(place->host, sizeof place->host, "%s", peer_host);
      pending++, threads++;
    }
    pthread_mutex_unlock(&lock);
    if (!place) {
      char name[64], cap[64];
      snprintf(name, sizeof name, "%s:%s", peer_host, peer_port);
      snprintf(cap, sizeof cap, "%d connections open (the cap)", place_count);
      dropped(peer_host, name, cap);
      close(fd);
      free(c);
      continue;
    }
    c->fd = fd, c->place = place;
    snprintf(c->name, sizeof c->name, "%s:%s", peer_host, peer_port);
    snprintf(c->host, sizeof c->host, "%s", peer_host);
    pthread_t thread;
    if (pthread_create(&thread, &detached, connection, c)) {
      forget(place);
      close(fd);
      free(c);
    }
  }
  close(listener);
  pthread_mutex_lock(&lock);
  for (int i = 0; i < place_count; i++)
    if (places[i].state != FREE) shutdown(places[i].fd, SHUT_RDWR);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  while (threads > 0 && pthread_cond_timedwait(&gone, &lock, &until) == 0) {}
  pthread_mutex_unlock(&lock);
  say("stopped");
  return 0;
}
