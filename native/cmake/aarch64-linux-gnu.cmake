# Cross-building the harnesses for an aarch64 board (AM62x) with Debian's
# gcc-aarch64-linux-gnu / g++-aarch64-linux-gnu:
#
#   cmake -S native -B native/build-aarch64 \
#       -DCMAKE_TOOLCHAIN_FILE=native/cmake/aarch64-linux-gnu.cmake \
#       -DEVBENCH_NATIVE_CODECS=cpp:nlohmann -DEVBENCH_STATIC=ON
#
# Libraries come from Debian's multiarch arm64 packages (for example
# libprotobuf-c-dev:arm64 after `dpkg --add-architecture arm64`); a header-only
# runtime (nlohmann::json) needs none. EVBENCH_STATIC links everything in, so
# the harness runs on a board that lacks the runtime's shared library.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Generators (protoc, protoc-c, nanopb_generator) run here; libraries and
# headers are the arm64 ones; CMake package files are architecture-free.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
