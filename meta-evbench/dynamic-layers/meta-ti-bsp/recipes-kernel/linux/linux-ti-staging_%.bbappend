# The CAN fragment for linux-ti-staging (meta-ti-bsp), when EVBENCH_BUSES names evbench-can:
# TI's setup-defconfig.inc merges KERNEL_CONFIG_FRAGMENTS (absolute paths) into
# the defconfig with the kernel's merge_config.sh. A layer that is no BSP changes
# a kernel only when asked: EVBENCH_BUSES is unset until local.conf sets it (kas.yml
# does), hence no MACHINE or DISTRO override on these lines.
# nooelint: oelint.vars.noncoreoverride
FILESEXTRAPATHS:prepend := "${THISDIR}/../../../../recipes-kernel/linux/files:"
# nooelint: oelint.vars.noncoreoverride
SRC_URI += "${@bb.utils.contains('EVBENCH_BUSES', 'evbench-can', 'file://can-isotp.cfg', '', d)}"
# Sources unpack into WORKDIR in scarthgap and into UNPACKDIR from styhead on.
# nooelint: oelint.vars.noncoreoverride
EVBENCH_UNPACKDIR = "${@d.getVar('UNPACKDIR') or d.getVar('WORKDIR')}"
# nooelint: oelint.vars.noncoreoverride
KERNEL_CONFIG_FRAGMENTS += "${@bb.utils.contains('EVBENCH_BUSES', 'evbench-can', \
                               '${EVBENCH_UNPACKDIR}/can-isotp.cfg', '', d)}"
