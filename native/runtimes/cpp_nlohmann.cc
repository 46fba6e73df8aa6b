// nlohmann::json: the JSON text parsed into nlohmann's value tree and dumped
// back, compact. encode: dump() (a new string each time, as Python's json
// returns a new str); decode: json::parse on the text, the value dropped;
// decode_access: parse, then read every leaf (each object member's value, each
// array item) or the one value a skipping profile needs. nlohmann writes a
// double with the shortest text that gives it back and keeps 64-bit integers
// exact, as Python's json does.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

using nlohmann::json;

struct evbench_payload {
    json value;
    std::string encoded;
    std::string product;
    std::vector<std::string> path;
};

namespace {

uint64_t read_leaf(const json &item)
{
    switch (item.type()) {
    case json::value_t::number_integer:
        return static_cast<uint64_t>(item.get_ref<const json::number_integer_t &>());
    case json::value_t::number_unsigned:
        return item.get_ref<const json::number_unsigned_t &>();
    case json::value_t::number_float:
        return static_cast<uint64_t>(item.get_ref<const json::number_float_t &>());
    case json::value_t::string:
        return item.get_ref<const json::string_t &>().size();
    case json::value_t::boolean:
        return item.get<bool>();
    default:
        return 0;
    }
}

uint64_t walk(const json &item, uint64_t *sum)
{
    if (item.is_object() || item.is_array()) {
        uint64_t leaves = 0;
        for (const json &child : item)
            leaves += walk(child, sum);
        return leaves;
    }
    *sum += read_leaf(item);
    return 1;
}

uint64_t read_path(const evbench_payload &payload, const json &value, uint64_t *sum)
{
    const json *item = &value;
    for (const std::string &key : payload.path) {
        auto found = item->find(key);
        if (found == item->end())
            return 0;
        item = &*found;
    }
    *sum += read_leaf(*item);
    return 1;
}

evbench_payload *load(const char *, const char *access, const uint8_t *data, size_t length,
                      char *error, size_t error_size)
{
    auto payload = std::make_unique<evbench_payload>();
    payload->value = json::parse(data, data + length, nullptr, false);
    if (payload->value.is_discarded()) {
        std::snprintf(error, error_size, "not valid JSON");
        return nullptr;
    }
    if (access != nullptr) {
        std::stringstream parts(access);
        std::string part;
        while (std::getline(parts, part, '.'))
            payload->path.push_back(part);
    }
    payload->encoded = payload->value.dump();
    return payload.release();
}

int encoded(evbench_payload *payload, const uint8_t **data, size_t *length, char *, size_t)
{
    *data = reinterpret_cast<const uint8_t *>(payload->encoded.data());
    *length = payload->encoded.size();
    return 0;
}

int timed(evbench_payload *payload, enum evbench_operation operation, uint64_t loops,
          struct evbench_outcome *outcome, char *error, size_t error_size)
{
    const std::string &input = payload->encoded;
    uint64_t sum = 0, leaves = 0, start, end;
    bool ok = true;
    switch (operation) {
    case EVBENCH_ENCODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++)
            payload->product = payload->value.dump();
        end = evbench_now_ns();
        outcome->size = payload->product.size();
        outcome->product = reinterpret_cast<const uint8_t *>(payload->product.data());
        outcome->product_len = payload->product.size();
        outcome->elapsed_ns = end - start;
        return 0;
    case EVBENCH_DECODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            json value = json::parse(input, nullptr, false);
            ok &= !value.is_discarded();
        }
        end = evbench_now_ns();
        outcome->size = input.size();
        break;
    case EVBENCH_DECODE_ACCESS:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            json value = json::parse(input, nullptr, false);
            ok &= !value.is_discarded();
            leaves = payload->path.empty() ? walk(value, &sum) : read_path(*payload, value, &sum);
        }
        end = evbench_now_ns();
        evbench_sink = sum;
        outcome->size = leaves;
        break;
    default:
        std::snprintf(error, error_size, "unknown operation");
        return -1;
    }
    if (!ok) {
        std::snprintf(error, error_size, "nlohmann::json could not parse its own text");
        return -1;
    }
    outcome->elapsed_ns = end - start;
    payload->product = json::parse(input).dump();
    outcome->product = reinterpret_cast<const uint8_t *>(payload->product.data());
    outcome->product_len = payload->product.size();
    return 0;
}

#define STRINGIFY(x) #x
#define VERSION_TEXT(a, b, c) STRINGIFY(a) "." STRINGIFY(b) "." STRINGIFY(c)

}  // namespace

extern "C" const struct evbench_runtime evbench_runtime = {
    "json",
    "nlohmann::json",
    VERSION_TEXT(NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                 NLOHMANN_JSON_VERSION_PATCH),
    load,
    encoded,
    timed,
};
