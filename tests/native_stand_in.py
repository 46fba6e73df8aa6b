"""A hostile native harness for tests/test_native_protocol.py (no real one crashes, hangs
or lies on demand): it speaks the pipe protocol honestly (its "encoding" of a payload is
the payload's own bytes, its timings a fixed 1000 ns a loop) until its MODE says otherwise:

    honest          never breaks
    crash           exits 3 at the first `time` request
    kill            kills itself (SIGKILL) at the first `time` request
    hang            never answers the first `time` request
    lie-size        says an encode wrote one byte more than its encoding
    lie-leaves      says decode_access read one leaf more
    garbage         answers the first `time` request with bytes that are no protocol
    long-line       answers with a line longer than the protocol allows
    crash-late      exits 3 at the first `time` request of its Nth start (N, COUNTER)

usage: native_stand_in.py MODE [N COUNTER_FILE] [--about]
"""

import os
import signal
import sys
import time


def fnv1a64(data: bytes) -> str:
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def leaves(data: bytes) -> int:
    return data.count(b":")  # its payloads are JSON objects of scalars: a leaf a member


ABOUT = "ok\tprotocol=1\tformat=json\tlibrary=stand-in\tversion=0\tcompiler=none\tflags="


def main() -> int:
    mode = sys.argv[1]
    if sys.argv[-1] == "--about":  # what the manifest asks; not a start that counts
        print(ABOUT)
        return 0
    if mode == "crash-late":
        wanted, counter = int(sys.argv[2]), sys.argv[3]
        with open(counter, "a+") as file:
            file.write("x")
            file.seek(0)
            starts = len(file.read())
        mode = "crash" if starts == wanted else "honest"
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stored: list[bytes] = []

    def say(line: str) -> None:
        stdout.write(line.encode() + b"\n")
        stdout.flush()

    while True:
        line = stdin.readline()
        if not line:
            return 0
        fields = line.rstrip(b"\n").decode().split("\t")
        if fields[0] == "hello":
            say(ABOUT)
        elif fields[0] == "load":
            data = stdin.read(int(fields[3]))
            stored.append(data)
            say(f"ok\t{len(stored) - 1}\t{len(data)}\t{fnv1a64(data)}")
        elif fields[0] == "encoded":
            data = stored[int(fields[1])]
            say(f"ok\t{len(data)}\t{fnv1a64(data)}")
            stdout.write(data)
            stdout.flush()
        elif fields[0] == "time":
            operation, data, loops = fields[1], stored[int(fields[2])], int(fields[3])
            if mode == "crash":
                sys.stderr.write("stand-in: crashing as asked\n")
                return 3
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if mode == "hang":
                time.sleep(3600)
            if mode == "garbage":
                stdout.write(b"\x00\xff\xfe binary junk\n")
                stdout.flush()
                continue
            if mode == "long-line":
                say("ok\t" + "9" * 5000)
                continue
            size = leaves(data) if operation == "decode_access" else len(data)
            size += (mode, operation) in (("lie-size", "encode"), ("lie-leaves", "decode_access"))
            say(f"ok\t{1000 * loops}\t{size}\t{fnv1a64(data)}")
        elif fields[0] == "quit":
            say("ok")
            return 0
        else:
            say("error\tunknown request")


if __name__ == "__main__":
    sys.exit(main())
