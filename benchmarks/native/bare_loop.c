/* The bare C loop that benchmarks/native_overhead.py compares the harness with:
 * the same protobuf-c calls on the same bytes, timed the same way, with nothing
 * around them (no protocol, no runtime table, no payload struct).
 *
 *   bare_loop encode|decode PAYLOAD_FILE LOOPS SAMPLES   -> one line of ns per sample
 */
#include <protobuf-c/protobuf-c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ev_data.pb-c.h"

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    int encode = strcmp(argv[1], "encode") == 0;
    unsigned long long loops = strtoull(argv[3], NULL, 10), samples = strtoull(argv[4], NULL, 10);
    FILE *file = fopen(argv[2], "rb");
    static uint8_t data[1 << 20], out[1 << 20];
    size_t length = file ? fread(data, 1, sizeof data, file) : 0;
    const ProtobufCMessageDescriptor *descriptor = &evbench__seed__backend_data_packet__descriptor;
    ProtobufCMessage *message = protobuf_c_message_unpack(descriptor, NULL, length, data);
    if (message == NULL)
        return 3;
    size_t size = 0;
    int failed = 0;
    for (unsigned long long s = 0; s < samples; s++) {
        uint64_t start = now_ns();
        if (encode) {
            for (unsigned long long i = 0; i < loops; i++) {
                size = protobuf_c_message_get_packed_size(message);
                protobuf_c_message_pack(message, out);
            }
        } else {
            for (unsigned long long i = 0; i < loops; i++) {
                ProtobufCMessage *decoded = protobuf_c_message_unpack(descriptor, NULL, length, data);
                failed |= decoded == NULL;
                protobuf_c_message_free_unpacked(decoded, NULL);
            }
        }
        printf("%llu\n", (unsigned long long)(now_ns() - start));
    }
    return failed || (encode && size != length);
}
