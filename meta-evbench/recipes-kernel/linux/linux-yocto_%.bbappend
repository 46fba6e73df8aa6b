# The CAN fragment for linux-yocto (qemuarm64), when EVBENCH_BUSES names evbench-can:
# kernel-yocto merges a .cfg in SRC_URI. A layer that is no BSP changes a kernel only
# when asked: EVBENCH_BUSES is unset until local.conf sets it (kas.yml does), hence no
# MACHINE or DISTRO override on these lines.
# nooelint: oelint.vars.noncoreoverride
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
# nooelint: oelint.vars.noncoreoverride
SRC_URI += "${@bb.utils.contains('EVBENCH_BUSES', 'evbench-can', 'file://can-isotp.cfg', '', d)}"
