SUMMARY = "evbench native codec harnesses: C and C++ runtimes for the codec suite"
DESCRIPTION = "One small executable per C or C++ codec runtime (protobuf-c, \
               nanopb, cJSON, libprotobuf, nlohmann::json), built with the \
               image's toolchain and libraries from the evbench checkout this \
               layer lives in. evbench-agent finds them in \
               /usr/libexec/evbench-native and times them by the same method \
               as its Python codecs (docs/native-codecs.md)."
SECTION = "devel"
LICENSE = "MIT"
LIC_FILES_CHKSUM = "file://../LICENSE;md5=90650b0eaaeb854f225c6303d5edb938"

# The runtimes to build (local.conf); every one when unset. The image installs
# this recipe only when EVBENCH_NATIVE_CODECS is set.
EVBENCH_NATIVE_CODECS ??= "c:protobuf-c c:cjson c:nanopb cpp:protobuf cpp:nlohmann"

# Each runtime's libraries and the generators that run on the build host.
EVBENCH_NATIVE_NEEDS[c:protobuf-c] = "protobuf-c protobuf-c-native"
EVBENCH_NATIVE_NEEDS[c:cjson] = "cjson"
EVBENCH_NATIVE_NEEDS[c:nanopb] = "nanopb nanopb-native"
EVBENCH_NATIVE_NEEDS[cpp:protobuf] = "protobuf protobuf-native"
EVBENCH_NATIVE_NEEDS[cpp:nlohmann] = "nlohmann-json"

def evbench_native_depends(d):
    needs = []
    for codec in (d.getVar('EVBENCH_NATIVE_CODECS') or '').split():
        found = d.getVarFlag('EVBENCH_NATIVE_NEEDS', codec)
        if not found:
            bb.fatal('evbench-native: unknown runtime %s in EVBENCH_NATIVE_CODECS (known: %s)'
                     % (codec, ' '.join(sorted(d.getVarFlags('EVBENCH_NATIVE_NEEDS') or {}))))
        needs += found.split()
    return ' '.join(needs)

DEPENDS = "${@evbench_native_depends(d)}"

# native/, protos/ and LICENSE come from the checkout this layer lives in (three
# levels up): the fetcher checksums every file in them, so a change is rebuilt.
FILESEXTRAPATHS:prepend := "${THISDIR}/../../..:"
SRC_URI = "file://native \
           file://protos \
           file://LICENSE \
           "

# Sources unpack into WORKDIR in scarthgap and into UNPACKDIR from styhead on.
EVBENCH_UNPACKDIR = "${@d.getVar('UNPACKDIR') or d.getVar('WORKDIR')}"
S = "${EVBENCH_UNPACKDIR}/native"

inherit cmake pkgconfig

EXTRA_OECMAKE = "-DEVBENCH_NATIVE_CODECS='${@';'.join(d.getVar('EVBENCH_NATIVE_CODECS').split())}'"

FILES:${PN} += "${libexecdir}/evbench-native"
