/* The leaves decode_access reads of a protobuf-c message (docs/native-codecs.md): the walk
 * shared by the protobuf-c harness (runtimes/c_protobuf_c.c) and the link responder's ack
 * mode (responder/responder.c), so both read what the Python codecs read.
 *
 * Include after protobuf-c.h and the generated .pb-c.h headers of every type in
 * evbench_types.h; everything here is static (one copy per program that includes it).
 */
#ifndef EVBENCH_LEAVES_PROTOBUF_C_H
#define EVBENCH_LEAVES_PROTOBUF_C_H

#include <protobuf-c/protobuf-c.h>
#include <stdint.h>
#include <string.h>

struct pbc_named_type {
    const char *name;
    const ProtobufCMessageDescriptor *descriptor;
};

static const struct pbc_named_type pbc_types[] = {
#define EVBENCH_TYPE(full, protobuf_c, nanopb) {full, &protobuf_c##__descriptor},
#include "evbench_types.h"
};

static const ProtobufCMessageDescriptor *pbc_map_entries[] = {
#define EVBENCH_MAP_ENTRY(full, protobuf_c, nanopb) &protobuf_c##__descriptor,
#include "evbench_types.h"
    NULL,
};

static inline int pbc_is_map_entry(const ProtobufCMessageDescriptor *descriptor)
{
    for (int i = 0; pbc_map_entries[i] != NULL; i++)
        if (pbc_map_entries[i] == descriptor)
            return 1;
    return 0;
}

static inline uint64_t pbc_scalar(const ProtobufCFieldDescriptor *field, const void *member)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_FLOAT:
        return *(const uint32_t *)member;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return *(const uint64_t *)member;
    case PROTOBUF_C_TYPE_BOOL:
        return *(const protobuf_c_boolean *)member;
    case PROTOBUF_C_TYPE_STRING:
        return (uintptr_t) * (char *const *)member;
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)member)->len;
    default:
        return 0;
    }
}

static inline size_t pbc_element_size(const ProtobufCFieldDescriptor *field)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

static inline uint64_t pbc_walk(const ProtobufCMessage *message, uint64_t *sum);

/* A map entry's leaf is its value (a JSON object's value), or the value message's leaves. */
static inline uint64_t pbc_walk_entry(const ProtobufCMessage *entry, uint64_t *sum)
{
    const ProtobufCFieldDescriptor *value = &entry->descriptor->fields[1];
    const char *member = (const char *)entry + value->offset;
    if (value->type == PROTOBUF_C_TYPE_MESSAGE) {
        const ProtobufCMessage *inner = *(ProtobufCMessage *const *)member;
        return inner ? pbc_walk(inner, sum) : 0;
    }
    *sum += pbc_scalar(value, member);
    return 1;
}

/* Every leaf the JSON form holds: each field without presence, each set field with
 * presence, every element of repeated fields and maps (docs/native-codecs.md). */
static inline uint64_t pbc_walk(const ProtobufCMessage *message, uint64_t *sum)
{
    const ProtobufCMessageDescriptor *descriptor = message->descriptor;
    uint64_t leaves = 0;
    for (unsigned i = 0; i < descriptor->n_fields; i++) {
        const ProtobufCFieldDescriptor *field = &descriptor->fields[i];
        const char *base = (const char *)message;
        const char *member = base + field->offset;
        if (field->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t count = *(const size_t *)(base + field->quantifier_offset);
            const char *items = *(char *const *)member;
            if (field->type == PROTOBUF_C_TYPE_MESSAGE) {
                int entry = count && pbc_is_map_entry(field->descriptor);
                for (size_t j = 0; j < count; j++) {
                    const ProtobufCMessage *item = ((ProtobufCMessage *const *)items)[j];
                    leaves += entry ? pbc_walk_entry(item, sum) : pbc_walk(item, sum);
                }
            } else {
                size_t size = pbc_element_size(field);
                for (size_t j = 0; j < count; j++)
                    *sum += pbc_scalar(field, items + j * size);
                leaves += count;
            }
            continue;
        }
        if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            if (*(const uint32_t *)(base + field->quantifier_offset) != field->id)
                continue;
        } else if (field->type == PROTOBUF_C_TYPE_MESSAGE) {
            const ProtobufCMessage *inner = *(ProtobufCMessage *const *)member;
            if (inner != NULL)
                leaves += pbc_walk(inner, sum);
            continue;
        } else if (field->label == PROTOBUF_C_LABEL_OPTIONAL && field->quantifier_offset &&
                   field->type != PROTOBUF_C_TYPE_STRING) {
            if (!*(const protobuf_c_boolean *)(base + field->quantifier_offset))
                continue;
        } else if (field->label == PROTOBUF_C_LABEL_OPTIONAL &&
                   field->type == PROTOBUF_C_TYPE_STRING) {
            if (*(char *const *)member == NULL)
                continue;
        }
        if (field->type == PROTOBUF_C_TYPE_MESSAGE) {
            const ProtobufCMessage *inner = *(ProtobufCMessage *const *)member;
            if (inner != NULL)
                leaves += pbc_walk(inner, sum);
            continue;
        }
        *sum += pbc_scalar(field, member);
        leaves++;
    }
    return leaves;
}

/* The descriptor of the message type called `full_name`, or NULL. */
static inline const ProtobufCMessageDescriptor *pbc_descriptor_named(const char *full_name)
{
    for (size_t i = 0; i < sizeof pbc_types / sizeof pbc_types[0]; i++)
        if (strcmp(pbc_types[i].name, full_name) == 0)
            return pbc_types[i].descriptor;
    return NULL;
}

#endif
