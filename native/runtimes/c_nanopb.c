/* nanopb with static allocation: every string and repeated field is a fixed
 * array (nanopb/evbench.options), each payload's decoded struct is allocated
 * once at load, and the timed loops never call malloc.
 *
 * encode: pb_encode into a buffer the payload owns (pb_get_encoded_size gave
 * its size at load); decode: pb_decode into the payload's struct, which
 * pb_decode clears first; decode_access: pb_decode, then read the leaves
 * through nanopb's field iterator (the generic walk an application that
 * forwards every signal does; see docs/native-codecs.md).
 */
#include <pb.h>
#include <pb_common.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ev_data.pb.h"
#include "ev_frame.pb.h"
#include "harness.h"
#include "link.pb.h"
#include "shapes.pb.h"

struct named_type {
    const char *name;
    const pb_msgdesc_t *fields;
    size_t size;
};

static const struct named_type types[] = {
#define EVBENCH_TYPE(full, protobuf_c, nanopb) {full, nanopb##_fields, sizeof(nanopb)},
#include "evbench_types.h"
};

static const pb_msgdesc_t *map_entries[] = {
#define EVBENCH_MAP_ENTRY(full, protobuf_c, nanopb) nanopb##_fields,
#include "evbench_types.h"
    NULL,
};

#define MAX_PATH 16

struct evbench_payload {
    const pb_msgdesc_t *fields;
    void *message; /* as loaded */
    void *decoded; /* the decode loops' destination */
    uint8_t *encoded;
    size_t encoded_length;
    uint8_t *scratch;
    size_t capacity;
    pb_size_t path[MAX_PATH];
    int path_length;
};

static int is_map_entry(const pb_msgdesc_t *fields)
{
    for (int i = 0; map_entries[i] != NULL; i++)
        if (map_entries[i] == fields)
            return 1;
    return 0;
}

static uint64_t read_scalar(const pb_field_iter_t *iter, const void *data)
{
    switch (PB_LTYPE(iter->type)) {
    case PB_LTYPE_STRING:
        return *(const unsigned char *)data;
    case PB_LTYPE_BYTES:
        return ((const pb_bytes_array_t *)data)->size;
    default:
        break;
    }
    switch (iter->data_size) {
    case 1:
        return *(const uint8_t *)data;
    case 2:
        return *(const uint16_t *)data;
    case 4:
        return *(const uint32_t *)data;
    default:
        return *(const uint64_t *)data;
    }
}

static uint64_t walk(const pb_msgdesc_t *fields, const void *message, uint64_t *sum);

static uint64_t walk_entry(const pb_msgdesc_t *fields, const void *entry, uint64_t *sum)
{
    pb_field_iter_t iter;
    if (!pb_field_iter_begin_const(&iter, fields, entry) || !pb_field_iter_find(&iter, 2))
        return 0;
    if (PB_LTYPE_IS_SUBMSG(iter.type))
        return walk(iter.submsg_desc, iter.pData, sum);
    *sum += read_scalar(&iter, iter.pData);
    return 1;
}

/* The leaves the JSON form holds: each field without presence, each set field with
 * presence (has_), every element of repeated fields, each map value. */
static uint64_t walk(const pb_msgdesc_t *fields, const void *message, uint64_t *sum)
{
    pb_field_iter_t iter;
    uint64_t leaves = 0;
    if (!pb_field_iter_begin_const(&iter, fields, message))
        return 0;
    do {
        pb_type_t kind = PB_HTYPE(iter.type);
        const char *data = (const char *)iter.pData;
        if (kind == PB_HTYPE_REPEATED) {
            pb_size_t count = *(const pb_size_t *)iter.pSize;
            if (PB_LTYPE_IS_SUBMSG(iter.type)) {
                int entry = count && is_map_entry(iter.submsg_desc);
                for (pb_size_t j = 0; j < count; j++) {
                    const void *item = data + (size_t)j * iter.data_size;
                    leaves += entry ? walk_entry(iter.submsg_desc, item, sum)
                                    : walk(iter.submsg_desc, item, sum);
                }
            } else {
                for (pb_size_t j = 0; j < count; j++)
                    *sum += read_scalar(&iter, data + (size_t)j * iter.data_size);
                leaves += count;
            }
            continue;
        }
        if (kind == PB_HTYPE_OPTIONAL && iter.pSize != NULL && !*(const bool *)iter.pSize)
            continue;
        if (kind == PB_HTYPE_ONEOF && *(const pb_size_t *)iter.pSize != iter.tag)
            continue;
        if (PB_LTYPE_IS_SUBMSG(iter.type)) {
            leaves += walk(iter.submsg_desc, data, sum);
            continue;
        }
        *sum += read_scalar(&iter, data);
        leaves++;
    } while (pb_field_iter_next(&iter));
    return leaves;
}

static uint64_t read_path(const struct evbench_payload *payload, const void *message,
                          uint64_t *sum)
{
    const pb_msgdesc_t *fields = payload->fields;
    pb_field_iter_t iter;
    for (int i = 0; i < payload->path_length; i++) {
        if (!pb_field_iter_begin_const(&iter, fields, message) ||
            !pb_field_iter_find(&iter, payload->path[i]))
            return 0;
        if (i == payload->path_length - 1) {
            *sum += read_scalar(&iter, iter.pData);
            return 1;
        }
        fields = iter.submsg_desc;
        message = iter.pData;
    }
    return 0;
}

static int encode_into(const struct evbench_payload *payload, const void *message, uint8_t *buffer,
                       size_t *length)
{
    pb_ostream_t stream = pb_ostream_from_buffer(buffer, payload->capacity);
    if (!pb_encode(&stream, payload->fields, message))
        return -1;
    *length = stream.bytes_written;
    return 0;
}

static evbench_payload *load(const char *type, const char *access, const uint8_t *data,
                             size_t length, char *error, size_t error_size)
{
    const struct named_type *found = NULL;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].name, type) == 0)
            found = &types[i];
    if (found == NULL) {
        snprintf(error, error_size, "unknown message type %s", type);
        return NULL;
    }
    struct evbench_payload *payload = calloc(1, sizeof *payload);
    payload->fields = found->fields;
    payload->message = calloc(1, found->size);
    payload->decoded = calloc(1, found->size);
    pb_istream_t input = pb_istream_from_buffer(data, length);
    if (!pb_decode(&input, found->fields, payload->message)) {
        snprintf(error, error_size, "nanopb cannot load this %s: %s (static sizes: "
                 "native/nanopb/evbench.options)", type, PB_GET_ERROR(&input));
        return NULL;
    }
    if (access != NULL) {
        char copy[256];
        snprintf(copy, sizeof copy, "%s", access);
        for (char *part = strtok(copy, "."); part != NULL; part = strtok(NULL, ".")) {
            if (payload->path_length == MAX_PATH)
                return NULL;
            payload->path[payload->path_length++] = (pb_size_t)atoi(part);
        }
    }
    size_t size;
    if (!pb_get_encoded_size(&size, found->fields, payload->message)) {
        snprintf(error, error_size, "nanopb cannot size this %s", type);
        return NULL;
    }
    payload->capacity = size + 1;
    payload->encoded = malloc(payload->capacity);
    payload->scratch = malloc(payload->capacity);
    if (encode_into(payload, payload->message, payload->encoded, &payload->encoded_length) != 0) {
        snprintf(error, error_size, "nanopb cannot encode this %s", type);
        return NULL;
    }
    return payload;
}

static int encoded(evbench_payload *payload, const uint8_t **data, size_t *length, char *error,
                   size_t error_size)
{
    (void)error, (void)error_size;
    *data = payload->encoded;
    *length = payload->encoded_length;
    return 0;
}

static int timed(evbench_payload *payload, enum evbench_operation operation, uint64_t loops,
                 struct evbench_outcome *outcome, char *error, size_t error_size)
{
    const pb_msgdesc_t *fields = payload->fields;
    const uint8_t *input = payload->encoded;
    size_t input_length = payload->encoded_length;
    uint64_t sum = 0, leaves = 0, start, end;
    int ok = 1;
    switch (operation) {
    case EVBENCH_ENCODE: {
        pb_ostream_t stream = {0};
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            stream = pb_ostream_from_buffer(payload->scratch, payload->capacity);
            ok &= pb_encode(&stream, fields, payload->message);
        }
        end = evbench_now_ns();
        outcome->size = stream.bytes_written;
        outcome->product = payload->scratch;
        outcome->product_len = stream.bytes_written;
        outcome->elapsed_ns = end - start;
        if (!ok) {
            snprintf(error, error_size, "pb_encode failed");
            return -1;
        }
        return 0;
    }
    case EVBENCH_DECODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            pb_istream_t stream = pb_istream_from_buffer(input, input_length);
            ok &= pb_decode(&stream, fields, payload->decoded);
        }
        end = evbench_now_ns();
        outcome->size = input_length;
        break;
    case EVBENCH_DECODE_ACCESS:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            pb_istream_t stream = pb_istream_from_buffer(input, input_length);
            ok &= pb_decode(&stream, fields, payload->decoded);
            leaves = payload->path_length ? read_path(payload, payload->decoded, &sum)
                                          : walk(fields, payload->decoded, &sum);
        }
        end = evbench_now_ns();
        evbench_sink = sum;
        outcome->size = leaves;
        break;
    default:
        snprintf(error, error_size, "unknown operation");
        return -1;
    }
    if (!ok) {
        snprintf(error, error_size, "pb_decode failed");
        return -1;
    }
    outcome->elapsed_ns = end - start;
    /* Outside the timed loop: the last decoded value, encoded, for the digest. */
    size_t length = 0;
    if (encode_into(payload, payload->decoded, payload->scratch, &length) != 0) {
        snprintf(error, error_size, "pb_encode of the decoded value failed");
        return -1;
    }
    outcome->product = payload->scratch;
    outcome->product_len = length;
    return 0;
}

const struct evbench_runtime evbench_runtime = {
    .format = "protobuf",
    .library = "nanopb",
    .version = NANOPB_VERSION + sizeof "nanopb-" - 1,
    .load = load,
    .encoded = encoded,
    .time = timed,
};
