/* The protocol loop shared by every runtime's harness (docs/native-codecs.md).
 *
 * Requests are single lines of tab-separated fields; a `load` line is followed
 * by the payload's bytes. Every answer is one line, `ok` or `error` first; an
 * `encoded` answer is followed by the bytes it announces. Lengths are capped
 * here as the agent caps them: a line at EVBENCH_MAX_LINE, a payload at
 * EVBENCH_MAX_PAYLOAD, the payloads at EVBENCH_MAX_PAYLOADS, loops at
 * EVBENCH_MAX_LOOPS.
 */
#include "harness.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVBENCH_PROTOCOL 1
#define EVBENCH_MAX_LINE 4096
#define EVBENCH_MAX_PAYLOAD (16u << 20)
#define EVBENCH_MAX_PAYLOADS 100000
#define EVBENCH_MAX_LOOPS (1ull << 24)
#define EVBENCH_MAX_FIELDS 8

#ifndef EVBENCH_COMPILER
#if defined(__clang__)
#define EVBENCH_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define EVBENCH_COMPILER "gcc " __VERSION__
#else
#define EVBENCH_COMPILER "unknown"
#endif
#endif
#ifndef EVBENCH_FLAGS
#define EVBENCH_FLAGS "unknown"
#endif

volatile uint64_t evbench_sink;

static evbench_payload **payloads;
static size_t payload_count;

/* FNV-1a, 64 bits: a digest both sides compute in a few lines (not a security check). */
static uint64_t digest(const uint8_t *data, size_t length)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < length; i++) {
        hash ^= data[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

static void answer_error(const char *message)
{
    /* The message goes on one line: tabs and line ends would break the framing. */
    fputs("error\t", stdout);
    for (const char *c = message; *c; c++)
        fputc((*c == '\n' || *c == '\t' || *c == '\r') ? ' ' : *c, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

static void about(void)
{
    printf("ok\tprotocol=%d\tformat=%s\tlibrary=%s\tversion=%s\tcompiler=%s\tflags=%s\n",
           EVBENCH_PROTOCOL, evbench_runtime.format, evbench_runtime.library,
           evbench_runtime.version, EVBENCH_COMPILER, EVBENCH_FLAGS);
    fflush(stdout);
}

/* Split `line` at tabs in place; the number of fields, at most `most`. */
static int split(char *line, char **fields, int most)
{
    int count = 0;
    char *field = line;
    while (count < most) {
        fields[count++] = field;
        char *tab = strchr(field, '\t');
        if (tab == NULL)
            break;
        *tab = '\0';
        field = tab + 1;
    }
    return count;
}

static int parse_count(const char *text, uint64_t most, uint64_t *value)
{
    char *end;
    if (*text < '0' || *text > '9')
        return -1;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || parsed > most)
        return -1;
    *value = parsed;
    return 0;
}

static evbench_payload *indexed(const char *text)
{
    uint64_t index;
    if (parse_count(text, EVBENCH_MAX_PAYLOADS, &index) != 0 || index >= payload_count)
        return NULL;
    return payloads[index];
}

static void load(char **fields, int count)
{
    uint64_t length;
    char error[512] = "";
    if (count != 4 || parse_count(fields[3], EVBENCH_MAX_PAYLOAD, &length) != 0) {
        answer_error("load wants: load TYPE ACCESS LENGTH (a length up to 16 MiB)");
        exit(2); /* the bytes that follow cannot be skipped safely: stop */
    }
    uint8_t *data = malloc(length ? length : 1);
    if (data == NULL || fread(data, 1, length, stdin) != length) {
        answer_error("the payload's bytes ended early");
        exit(2);
    }
    if (payload_count >= EVBENCH_MAX_PAYLOADS) {
        free(data);
        answer_error("too many payloads");
        return;
    }
    const char *access = strcmp(fields[2], "-") == 0 ? NULL : fields[2];
    evbench_payload *payload =
        evbench_runtime.load(fields[1], access, data, length, error, sizeof error);
    free(data);
    if (payload == NULL) {
        answer_error(error[0] ? error : "the runtime could not load the payload");
        return;
    }
    const uint8_t *encoded;
    size_t encoded_length;
    if (evbench_runtime.encoded(payload, &encoded, &encoded_length, error, sizeof error) != 0) {
        answer_error(error);
        return;
    }
    evbench_payload **grown = realloc(payloads, (payload_count + 1) * sizeof *payloads);
    if (grown == NULL) {
        answer_error("out of memory");
        return;
    }
    payloads = grown;
    payloads[payload_count] = payload;
    printf("ok\t%zu\t%zu\t%016" PRIx64 "\n", payload_count, encoded_length,
           digest(encoded, encoded_length));
    payload_count++;
    fflush(stdout);
}

static void encoded(char **fields, int count)
{
    evbench_payload *payload = count == 2 ? indexed(fields[1]) : NULL;
    const uint8_t *data;
    size_t length;
    char error[512] = "";
    if (payload == NULL) {
        answer_error("encoded wants: encoded INDEX (of a loaded payload)");
        return;
    }
    if (evbench_runtime.encoded(payload, &data, &length, error, sizeof error) != 0) {
        answer_error(error);
        return;
    }
    printf("ok\t%zu\t%016" PRIx64 "\n", length, digest(data, length));
    fwrite(data, 1, length, stdout);
    fflush(stdout);
}

static void timed(char **fields, int count)
{
    static const char *names[] = {"encode", "decode", "decode_access"};
    evbench_payload *payload = count == 4 ? indexed(fields[2]) : NULL;
    uint64_t loops;
    int operation = -1;
    for (int i = 0; count == 4 && i < 3; i++)
        if (strcmp(fields[1], names[i]) == 0)
            operation = i;
    if (payload == NULL || operation < 0 || parse_count(fields[3], EVBENCH_MAX_LOOPS, &loops) != 0 ||
        loops == 0) {
        answer_error("time wants: time encode|decode|decode_access INDEX LOOPS (1 to 2^24)");
        return;
    }
    struct evbench_outcome outcome = {0};
    char error[512] = "";
    if (evbench_runtime.time(payload, (enum evbench_operation)operation, loops, &outcome, error,
                             sizeof error) != 0) {
        answer_error(error[0] ? error : "the operation failed");
        return;
    }
    printf("ok\t%" PRIu64 "\t%" PRIu64 "\t%016" PRIx64 "\n", outcome.elapsed_ns, outcome.size,
           digest(outcome.product, outcome.product_len));
    fflush(stdout);
}

int evbench_main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--about") == 0) {
        about();
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--about]  (driven by evbench-agent over its stdin/stdout)\n",
                argv[0]);
        return 2;
    }
    char line[EVBENCH_MAX_LINE + 2];
    while (fgets(line, sizeof line, stdin) != NULL) {
        size_t length = strlen(line);
        if (length == 0 || line[length - 1] != '\n') {
            answer_error("a request line longer than 4096 bytes, or cut short");
            return 2;
        }
        line[length - 1] = '\0';
        char *fields[EVBENCH_MAX_FIELDS];
        int count = split(line, fields, EVBENCH_MAX_FIELDS);
        if (strcmp(fields[0], "hello") == 0) {
            if (count == 2 && strcmp(fields[1], "1") == 0)
                about();
            else
                answer_error("this harness speaks protocol 1");
        } else if (strcmp(fields[0], "load") == 0) {
            load(fields, count);
        } else if (strcmp(fields[0], "encoded") == 0) {
            encoded(fields, count);
        } else if (strcmp(fields[0], "time") == 0) {
            timed(fields, count);
        } else if (strcmp(fields[0], "quit") == 0) {
            fputs("ok\n", stdout);
            fflush(stdout);
            return 0;
        } else {
            answer_error("unknown request");
        }
    }
    return 0; /* the agent closed the pipe */
}

int main(int argc, char **argv)
{
    return evbench_main(argc, argv);
}
