// libprotobuf (C++), the generated classes of protos/, found by full name in the
// generated pool. encode: SerializeToString into a string the payload keeps (its
// buffer is reused, as a sender's is); decode: ParseFromArray into a message
// object the payload keeps (Parse clears it first; an application reuses it);
// decode_access: parse, then read every leaf through the reflection interface,
// the generic walk the other runtimes make (generated accessors would read the
// same leaves faster; docs/native-codecs.md).
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ev_data.pb.h"
#include "ev_frame.pb.h"
#include "harness.h"
#include "link.pb.h"
#include "shapes.pb.h"

namespace pb = google::protobuf;

struct evbench_payload {
    std::unique_ptr<pb::Message> message;
    std::unique_ptr<pb::Message> decoded;
    std::string encoded;
    std::string scratch;
    std::vector<const pb::FieldDescriptor *> path;
};

namespace {

uint64_t read_scalar(const pb::Message &message, const pb::Reflection &reflection,
                     const pb::FieldDescriptor *field, int index)
{
    bool repeated = index >= 0;
    switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
        return repeated ? reflection.GetRepeatedInt32(message, field, index)
                        : reflection.GetInt32(message, field);
    case pb::FieldDescriptor::CPPTYPE_INT64:
        return repeated ? reflection.GetRepeatedInt64(message, field, index)
                        : reflection.GetInt64(message, field);
    case pb::FieldDescriptor::CPPTYPE_UINT32:
        return repeated ? reflection.GetRepeatedUInt32(message, field, index)
                        : reflection.GetUInt32(message, field);
    case pb::FieldDescriptor::CPPTYPE_UINT64:
        return repeated ? reflection.GetRepeatedUInt64(message, field, index)
                        : reflection.GetUInt64(message, field);
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
        return static_cast<uint64_t>(repeated ? reflection.GetRepeatedFloat(message, field, index)
                                              : reflection.GetFloat(message, field));
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
        return static_cast<uint64_t>(repeated ? reflection.GetRepeatedDouble(message, field, index)
                                              : reflection.GetDouble(message, field));
    case pb::FieldDescriptor::CPPTYPE_BOOL:
        return repeated ? reflection.GetRepeatedBool(message, field, index)
                        : reflection.GetBool(message, field);
    case pb::FieldDescriptor::CPPTYPE_ENUM:
        return repeated ? reflection.GetRepeatedEnumValue(message, field, index)
                        : reflection.GetEnumValue(message, field);
    case pb::FieldDescriptor::CPPTYPE_STRING: {
        std::string scratch;
        const std::string &text =
            repeated ? reflection.GetRepeatedStringReference(message, field, index, &scratch)
                     : reflection.GetStringReference(message, field, &scratch);
        return text.size();
    }
    default:
        return 0;
    }
}

uint64_t walk(const pb::Message &message, uint64_t *sum);

// A map entry's leaf is its value, as in the JSON form.
uint64_t walk_entry(const pb::Message &entry, uint64_t *sum)
{
    const pb::FieldDescriptor *value = entry.GetDescriptor()->map_value();
    const pb::Reflection &reflection = *entry.GetReflection();
    if (value->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE)
        return walk(reflection.GetMessage(entry, value), sum);
    *sum += read_scalar(entry, reflection, value, -1);
    return 1;
}

// Each field without presence, each set field with presence, every element of
// repeated fields and maps (docs/native-codecs.md).
uint64_t walk(const pb::Message &message, uint64_t *sum)
{
    const pb::Descriptor *descriptor = message.GetDescriptor();
    const pb::Reflection &reflection = *message.GetReflection();
    uint64_t leaves = 0;
    for (int i = 0; i < descriptor->field_count(); i++) {
        const pb::FieldDescriptor *field = descriptor->field(i);
        bool is_message = field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
        if (field->is_repeated()) {
            int count = reflection.FieldSize(message, field);
            for (int j = 0; j < count; j++) {
                if (field->is_map())
                    leaves += walk_entry(reflection.GetRepeatedMessage(message, field, j), sum);
                else if (is_message)
                    leaves += walk(reflection.GetRepeatedMessage(message, field, j), sum);
                else
                    *sum += read_scalar(message, reflection, field, j);
            }
            if (!is_message)
                leaves += count;
            continue;
        }
        if (field->has_presence() && !reflection.HasField(message, field))
            continue;
        if (is_message) {
            leaves += walk(reflection.GetMessage(message, field), sum);
            continue;
        }
        *sum += read_scalar(message, reflection, field, -1);
        leaves++;
    }
    return leaves;
}

uint64_t read_path(const evbench_payload &payload, const pb::Message *message, uint64_t *sum)
{
    for (size_t i = 0; i < payload.path.size(); i++) {
        const pb::FieldDescriptor *field = payload.path[i];
        const pb::Reflection &reflection = *message->GetReflection();
        if (i + 1 == payload.path.size()) {
            *sum += read_scalar(*message, reflection, field, -1);
            return 1;
        }
        message = &reflection.GetMessage(*message, field);
    }
    return 0;
}

evbench_payload *load(const char *type, const char *access, const uint8_t *data, size_t length,
                      char *error, size_t error_size)
{
    const pb::Descriptor *descriptor =
        pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
    if (descriptor == nullptr) {
        std::snprintf(error, error_size, "unknown message type %s", type);
        return nullptr;
    }
    const pb::Message *prototype =
        pb::MessageFactory::generated_factory()->GetPrototype(descriptor);
    auto payload = std::make_unique<evbench_payload>();
    payload->message.reset(prototype->New());
    payload->decoded.reset(prototype->New());
    if (!payload->message->ParseFromArray(data, static_cast<int>(length))) {
        std::snprintf(error, error_size, "not a valid %s", type);
        return nullptr;
    }
    if (access != nullptr) {
        std::stringstream parts(access);
        std::string part;
        const pb::Descriptor *step = descriptor;
        while (std::getline(parts, part, '.')) {
            const pb::FieldDescriptor *field =
                step ? step->FindFieldByNumber(std::atoi(part.c_str())) : nullptr;
            if (field == nullptr) {
                std::snprintf(error, error_size, "no field %s on the access path", part.c_str());
                return nullptr;
            }
            payload->path.push_back(field);
            step = field->message_type();
        }
    }
    payload->message->SerializeToString(&payload->encoded);
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
    const int input_length = static_cast<int>(input.size());
    pb::Message *decoded = payload->decoded.get();
    uint64_t sum = 0, leaves = 0, start, end;
    bool ok = true;
    switch (operation) {
    case EVBENCH_ENCODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++)
            ok &= payload->message->SerializeToString(&payload->scratch);
        end = evbench_now_ns();
        outcome->size = payload->scratch.size();
        outcome->product = reinterpret_cast<const uint8_t *>(payload->scratch.data());
        outcome->product_len = payload->scratch.size();
        outcome->elapsed_ns = end - start;
        return ok ? 0 : -1;
    case EVBENCH_DECODE:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++)
            ok &= decoded->ParseFromArray(input.data(), input_length);
        end = evbench_now_ns();
        outcome->size = input.size();
        break;
    case EVBENCH_DECODE_ACCESS:
        start = evbench_now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            ok &= decoded->ParseFromArray(input.data(), input_length);
            leaves = payload->path.empty() ? walk(*decoded, &sum)
                                           : read_path(*payload, decoded, &sum);
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
        std::snprintf(error, error_size, "ParseFromArray failed");
        return -1;
    }
    outcome->elapsed_ns = end - start;
    // Outside the timed loop: the decoded value's digest. libprotobuf writes a map in
    // its hash order, which a parse can change; so the decoded value is compared with
    // the loaded one (maps as maps) and, when equal, reported by the loaded encoding.
    if (pb::util::MessageDifferencer::Equals(*decoded, *payload->message)) {
        outcome->product = reinterpret_cast<const uint8_t *>(input.data());
        outcome->product_len = input.size();
    } else {
        decoded->SerializeToString(&payload->scratch);
        outcome->product = reinterpret_cast<const uint8_t *>(payload->scratch.data());
        outcome->product_len = payload->scratch.size();
    }
    return 0;
}

// "3.21.12" from GOOGLE_PROTOBUF_VERSION (3021012): the headers this harness built against.
std::string version_text()
{
    int v = GOOGLE_PROTOBUF_VERSION;
    return std::to_string(v / 1000000) + "." + std::to_string(v / 1000 % 1000) + "." +
           std::to_string(v % 1000);
}

const std::string version = version_text();

}  // namespace

extern "C" const struct evbench_runtime evbench_runtime = {
    "protobuf", "libprotobuf", version.c_str(), load, encoded, timed,
};
