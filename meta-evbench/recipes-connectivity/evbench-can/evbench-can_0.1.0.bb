SUMMARY = "evbench on CAN: the kernel modules and a systemd-networkd file for can0"
DESCRIPTION = "What a board needs for evbench's link suite over ISO-TP: the \
               SocketCAN and can-isotp modules, vcan for self-tests, the AM62x \
               MCAN driver (m_can), iproute2 for the bus counters, and can0 \
               brought up by systemd-networkd as CAN FD at 500 kbit/s and 2 Mbit/s."
SECTION = "network"
LICENSE = "MIT"
# The recipe's only source is a configuration file in this layer: the common MIT text.
# nooelint: oelint.var.licenseremotefile
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302"

SRC_URI = "file://80-evbench-can0.network"

# Sources unpack into WORKDIR in scarthgap and into UNPACKDIR from styhead on.
EVBENCH_UNPACKDIR = "${@d.getVar('UNPACKDIR') or d.getVar('WORKDIR')}"
S = "${EVBENCH_UNPACKDIR}"

inherit allarch features_check

# The file is systemd-networkd's; without systemd nothing would read it.
REQUIRED_DISTRO_FEATURES = "systemd"

do_install() {
    install -d ${D}${systemd_unitdir}/network
    install -m 0644 ${S}/80-evbench-can0.network ${D}${systemd_unitdir}/network/
}

FILES:${PN} += "${systemd_unitdir}/network/80-evbench-can0.network"

# iproute2: the agent reads bit rates and error counters with `ip -details
# -statistics -json link`, and can0 is set by hand with `ip link` when
# networkd is not used.
RDEPENDS:${PN} = "iproute2"
# Recommended, not required: a kernel that builds one of them in (=y) has no
# package for it, and the image is still right. A module the kernel lacks
# altogether stops evbench-image (lib/evbench_layer/can_modules.py checks the
# root filesystem); the layer's kernel fragment (recipes-kernel/linux) builds them.
RRECOMMENDS:${PN} = "kernel-module-can \
                     kernel-module-can-dev \
                     kernel-module-can-raw \
                     kernel-module-can-isotp \
                     kernel-module-vcan \
                     kernel-module-m-can \
                     kernel-module-m-can-platform \
                     "
