/* The leaves decode_access reads of a cJSON tree (docs/native-codecs.md): each object
 * member's value and each array item, as the Python JSON codecs' walk_plain reads them.
 * Shared by the cJSON harness (runtimes/c_cjson.c) and the link responder's ack mode
 * (responder/responder.c). Include after cjson/cJSON.h.
 */
#ifndef EVBENCH_LEAVES_CJSON_H
#define EVBENCH_LEAVES_CJSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

static inline uint64_t cjson_leaf(const cJSON *item)
{
    if (cJSON_IsNumber(item))
        return (uint64_t)item->valueint + (uint64_t)(item->valuedouble != 0);
    if (cJSON_IsString(item))
        return (uintptr_t)item->valuestring;
    return (uint64_t)item->type;
}

static inline uint64_t cjson_walk(const cJSON *item, uint64_t *sum)
{
    if (cJSON_IsObject(item) || cJSON_IsArray(item)) {
        uint64_t leaves = 0;
        for (const cJSON *child = item->child; child != NULL; child = child->next)
            leaves += cjson_walk(child, sum);
        return leaves;
    }
    *sum += cjson_leaf(item);
    return 1;
}

#endif
