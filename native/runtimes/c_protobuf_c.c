/* protobuf-c: the protoc-c generated descriptors, packed and unpacked with
 * protobuf-c's generic calls (what the generated __pack/__unpack wrap).
 *
 * encode: get_packed_size, then pack into a buffer the payload owns (sized at
 * load), as an application sending on a socket does. decode: unpack with the
 * default allocator and free_unpacked, as Python's decode makes and drops an
 * object. decode_access: unpack, read the leaves, free (see pbc_walk).
 */
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ev_data.pb-c.h"
#include "ev_frame.pb-c.h"
#include "harness.h"
#include "link.pb-c.h"
#include "shapes.pb-c.h"

#include "leaves_protobuf_c.h"

#define MAX_PATH 16

struct evbench_payload {
    const ProtobufCMessageDescriptor *descriptor;
    ProtobufCMessage *message;
    uint8_t *encoded;
    size_t encoded_length;
    uint8_t *scratch; /* the encode loop's and the round trip's output */
    /* decode_access of a skipping profile: the fields on the way to one value */
    const ProtobufCFieldDescriptor *path[MAX_PATH];
    int path_length;
};

/* A skipping profile reads one value: the fields of the path, in turn. */
static uint64_t read_path(const struct evbench_payload *payload, const ProtobufCMessage *message,
                          uint64_t *sum)
{
    for (int i = 0; i < payload->path_length; i++) {
        const ProtobufCFieldDescriptor *field = payload->path[i];
        const char *member = (const char *)message + field->offset;
        if (i == payload->path_length - 1) {
            *sum += pbc_scalar(field, member);
            return 1;
        }
        message = *(ProtobufCMessage *const *)member;
        if (message == NULL)
            return 0;
    }
    return 0;
}

static int resolve_path(struct evbench_payload *payload, const char *access, char *error,
                        size_t error_size)
{
    const ProtobufCMessageDescriptor *descriptor = payload->descriptor;
    char copy[256];
    if (strlen(access) >= sizeof copy) {
        snprintf(error, error_size, "access path too long");
        return -1;
    }
    strcpy(copy, access);
    for (char *part = strtok(copy, "."); part != NULL; part = strtok(NULL, ".")) {
        const ProtobufCFieldDescriptor *field =
            descriptor ? protobuf_c_message_descriptor_get_field(descriptor, (unsigned)atoi(part))
                       : NULL;
        if (field == NULL || payload->path_length == MAX_PATH) {
            snprintf(error, error_size, "no field %s on the access path %s", part, access);
            return -1;
        }
        payload->path[payload->path_length++] = field;
        descriptor = field->type == PROTOBUF_C_TYPE_MESSAGE ? field->descriptor : NULL;
    }
    return 0;
}

static evbench_payload *load(const char *type, const char *access, const uint8_t *data,
                             size_t length, char *error, size_t error_size)
{
    const ProtobufCMessageDescriptor *descriptor = pbc_descriptor_named(type);
    if (descriptor == NULL) {
        snprintf(error, error_size, "unknown message type %s", type);
        return NULL;
    }
    struct evbench_payload *payload = calloc(1, sizeof *payload);
    payload->descriptor = descriptor;
    payload->message = protobuf_c_message_unpack(descriptor, NULL, length, data);
    if (payload->message == NULL) {
        snprintf(error, error_size, "not a valid %s", type);
        free(payload);
        return NULL;
    }
    if (access != NULL && resolve_path(payload, access, error, error_size) != 0) {
        protobuf_c_message_free_unpacked(payload->message, NULL);
        free(payload);
        return NULL;
    }
    payload->encoded_length = protobuf_c_message_get_packed_size(payload->message);
    payload->encoded = malloc(payload->encoded_length + 1);
    payload->scratch = malloc(payload->encoded_length + 1);
    protobuf_c_message_pack(payload->message, payload->encoded);
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
    const ProtobufCMessageDescriptor *descriptor = payload->descriptor;
    const uint8_t *input = payload->encoded;
    size_t input_length = payload->encoded_length;
    uint64_t sum = 0, leaves = 0, start, end;
    size_t size = 0;
    int failed = 0;
    switch (operation) {
    case EVBENCH_ENCODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            size = protobuf_c_message_get_packed_size(payload->message);
            protobuf_c_message_pack(payload->message, payload->scratch);
        }
        end = evbench_now_ns();
        outcome->size = size;
        outcome->product = payload->scratch;
        outcome->product_len = size;
        outcome->elapsed_ns = end - start;
        return 0;
    case EVBENCH_DECODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            ProtobufCMessage *message =
                protobuf_c_message_unpack(descriptor, NULL, input_length, input);
            failed |= message == NULL;
            protobuf_c_message_free_unpacked(message, NULL);
        }
        end = evbench_now_ns();
        outcome->size = input_length;
        break;
    case EVBENCH_DECODE_ACCESS:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            ProtobufCMessage *message =
                protobuf_c_message_unpack(descriptor, NULL, input_length, input);
            if (message == NULL) {
                failed = 1;
                break;
            }
            leaves = payload->path_length ? read_path(payload, message, &sum)
                                          : pbc_walk(message, &sum);
            protobuf_c_message_free_unpacked(message, NULL);
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
        snprintf(error, error_size, "unpack failed");
        return -1;
    }
    outcome->elapsed_ns = end - start;
    /* Outside the timed loop: decode once more and encode that, for the digest. */
    ProtobufCMessage *again = protobuf_c_message_unpack(descriptor, NULL, input_length, input);
    outcome->product_len = protobuf_c_message_pack(again, payload->scratch);
    outcome->product = payload->scratch;
    protobuf_c_message_free_unpacked(again, NULL);
    return 0;
}

const struct evbench_runtime evbench_runtime = {
    .format = "protobuf",
    .library = "protobuf-c",
    .version = PROTOBUF_C_VERSION,
    .load = load,
    .encoded = encoded,
    .time = timed,
};
