/* The evbench native codec harness: one executable per runtime, driven by the
 * agent over the pipe protocol of docs/native-codecs.md.
 *
 * The protocol loop (harness.c) is shared; each runtime (runtimes/ *.c, *.cc)
 * supplies one `struct evbench_runtime`. A runtime runs its own timed loops, so
 * a sample costs the library call and the loop, never an indirect call per
 * operation (benchmarks/native_overhead.py measures what is left).
 */
#ifndef EVBENCH_HARNESS_H
#define EVBENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

enum evbench_operation { EVBENCH_ENCODE, EVBENCH_DECODE, EVBENCH_DECODE_ACCESS };

/* What one timed request produced. */
struct evbench_outcome {
    uint64_t elapsed_ns;
    /* encode and decode: bytes written or read; decode_access: leaves read */
    uint64_t size;
    /* encode: the last output; decode, decode_access: the re-encoding of a value
     * decoded after the timed loop (its digest shows the decode was whole) */
    const uint8_t *product;
    size_t product_len;
};

/* A runtime's payload: what `load` made of the exchange bytes (opaque here). */
typedef struct evbench_payload evbench_payload;

struct evbench_runtime {
    const char *format;  /* "protobuf" (binary) or "json" (text) */
    const char *library; /* e.g. "protobuf-c" */
    const char *version; /* the library's own version, from its headers */
    /* Parse the exchange bytes (protobuf binary or JSON text) of a message of
     * type `type` (full name); `access` is a dot-separated field path or NULL.
     * NULL with `error` filled when it cannot. */
    evbench_payload *(*load)(const char *type, const char *access, const uint8_t *data,
                             size_t length, char *error, size_t error_size);
    /* This runtime's encoding of the payload (valid until the next call). */
    int (*encoded)(evbench_payload *payload, const uint8_t **data, size_t *length, char *error,
                   size_t error_size);
    /* `loops` runs of `operation` on the payload, timed; 0 or -1 with `error`. */
    int (*time)(evbench_payload *payload, enum evbench_operation operation, uint64_t loops,
                struct evbench_outcome *outcome, char *error, size_t error_size);
};

extern const struct evbench_runtime evbench_runtime;

/* Nanoseconds of CLOCK_MONOTONIC (the clock of Python's time.perf_counter_ns on Linux). */
static inline uint64_t evbench_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* What decode_access read ends here, once per timed loop: a walker folds each
 * leaf into a local sum and the loop stores it, so the compiler keeps the reads. */
extern volatile uint64_t evbench_sink;

int evbench_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
