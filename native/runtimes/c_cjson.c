/* cJSON: the JSON text parsed into cJSON's tree and printed back, compact.
 *
 * encode: cJSON_PrintUnformatted, its length, free (cJSON allocates the text);
 * decode: cJSON_ParseWithLength and cJSON_Delete; decode_access: parse, read
 * every leaf (each object member's value, each array item) or the one value a
 * skipping profile needs, delete. cJSON writes a number with 15 significant
 * digits when they give the same double back, else with 17, and an integral
 * double without ".0": its text can differ in size from Python's json, which
 * writes the shortest text that gives the double back (docs/native-codecs.md).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "leaves_cjson.h"

#define STRINGIFY(x) #x
#define VERSION_TEXT(a, b, c) STRINGIFY(a) "." STRINGIFY(b) "." STRINGIFY(c)
#define MAX_PATH 16

struct evbench_payload {
    cJSON *tree;
    char *encoded;
    size_t encoded_length;
    char *path[MAX_PATH];
    int path_length;
};

static uint64_t read_path(const struct evbench_payload *payload, const cJSON *item, uint64_t *sum)
{
    for (int i = 0; i < payload->path_length && item != NULL; i++)
        item = cJSON_GetObjectItemCaseSensitive(item, payload->path[i]);
    if (item == NULL)
        return 0;
    *sum += cjson_leaf(item);
    return 1;
}

static evbench_payload *load(const char *type, const char *access, const uint8_t *data,
                             size_t length, char *error, size_t error_size)
{
    (void)type; /* JSON needs no schema */
    struct evbench_payload *payload = calloc(1, sizeof *payload);
    payload->tree = cJSON_ParseWithLength((const char *)data, length);
    if (payload->tree == NULL) {
        snprintf(error, error_size, "not valid JSON");
        free(payload);
        return NULL;
    }
    if (access != NULL) {
        char *copy = strdup(access);
        for (char *part = strtok(copy, "."); part != NULL; part = strtok(NULL, ".")) {
            if (payload->path_length == MAX_PATH) {
                snprintf(error, error_size, "access path too long");
                return NULL;
            }
            payload->path[payload->path_length++] = strdup(part);
        }
        free(copy);
    }
    payload->encoded = cJSON_PrintUnformatted(payload->tree);
    if (payload->encoded == NULL) {
        snprintf(error, error_size, "cJSON could not print the payload");
        return NULL;
    }
    payload->encoded_length = strlen(payload->encoded);
    return payload;
}

static int encoded(evbench_payload *payload, const uint8_t **data, size_t *length, char *error,
                   size_t error_size)
{
    (void)error, (void)error_size;
    *data = (const uint8_t *)payload->encoded;
    *length = payload->encoded_length;
    return 0;
}

static char *product; /* the last encode's text, or the round trip's */

static int timed(evbench_payload *payload, enum evbench_operation operation, uint64_t loops,
                 struct evbench_outcome *outcome, char *error, size_t error_size)
{
    const char *input = payload->encoded;
    size_t input_length = payload->encoded_length;
    uint64_t sum = 0, leaves = 0, start, end;
    size_t size = 0;
    int failed = 0;
    free(product);
    product = NULL;
    switch (operation) {
    case EVBENCH_ENCODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            free(product);
            product = cJSON_PrintUnformatted(payload->tree);
            size = strlen(product);
        }
        end = evbench_now_ns();
        outcome->size = size;
        outcome->product = (const uint8_t *)product;
        outcome->product_len = size;
        outcome->elapsed_ns = end - start;
        return 0;
    case EVBENCH_DECODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            cJSON *tree = cJSON_ParseWithLength(input, input_length);
            failed |= tree == NULL;
            cJSON_Delete(tree);
        }
        end = evbench_now_ns();
        outcome->size = input_length;
        break;
    case EVBENCH_DECODE_ACCESS:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            cJSON *tree = cJSON_ParseWithLength(input, input_length);
            if (tree == NULL) {
                failed = 1;
                break;
            }
            leaves = payload->path_length ? read_path(payload, tree, &sum)
                                          : cjson_walk(tree, &sum);
            cJSON_Delete(tree);
        }
        end = evbench_now_ns();
        evbench_sink = sum;
        outcome->size = leaves;
        break;
    default:
        snprintf(error, error_size, "unknown operation");
        return -1;
    }
    if (failed) {
        snprintf(error, error_size, "cJSON could not parse its own text");
        return -1;
    }
    outcome->elapsed_ns = end - start;
    cJSON *again = cJSON_ParseWithLength(input, input_length);
    product = cJSON_PrintUnformatted(again);
    cJSON_Delete(again);
    outcome->product = (const uint8_t *)product;
    outcome->product_len = strlen(product);
    return 0;
}

const struct evbench_runtime evbench_runtime = {
    .format = "json",
    .library = "cJSON",
    .version = VERSION_TEXT(CJSON_VERSION_MAJOR, CJSON_VERSION_MINOR, CJSON_VERSION_PATCH),
    .load = load,
    .encoded = encoded,
    .time = timed,
};
