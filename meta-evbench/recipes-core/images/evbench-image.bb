SUMMARY = "evbench board image: the agent and its codecs, OpenSSH and a serial console"
DESCRIPTION = "A small systemd image in which a freshly flashed board can be \
               benchmarked with no network and no pip: evbench-agent, its protobuf \
               runtime and codecs, OpenSSH with key-based root login and a getty \
               on the machine's console."
SECTION = "image"
LICENSE = "MIT"

inherit core-image features_check

# systemd-serialgetty and the responder's unit need systemd as init manager.
REQUIRED_DISTRO_FEATURES = "systemd"

IMAGE_FEATURES += "ssh-server-openssh"

# The optional codecs (the agent also recommends them); cantools is the dbc codec.
EVBENCH_CODECS ?= "python3-cantools python3-cbor2 python3-msgpack python3-ujson"
# The link suite's buses, set in local.conf (kas.yml sets "evbench-can"), since the
# kernel recipes read it too: evbench-can brings the CAN modules, iproute2 and can0
# for systemd-networkd, and the layer's kernel appends build the modules. Unset:
# a board whose buses are set up elsewhere.
EVBENCH_BUSES ??= ""
# C and C++ codec runtimes (docs/native-codecs.md), in local.conf, for example
# "c:protobuf-c c:cjson c:nanopb cpp:protobuf cpp:nlohmann": evbench-native builds
# their harnesses with the image's toolchain. Unset: no native codecs.
EVBENCH_NATIVE_CODECS ??= ""
EVBENCH_NATIVE = "${@'evbench-native' if d.getVar('EVBENCH_NATIVE_CODECS').strip() else ''}"
IMAGE_INSTALL = "packagegroup-core-boot \
                 systemd-serialgetty \
                 evbench-agent \
                 ${EVBENCH_CODECS} \
                 ${EVBENCH_BUSES} \
                 ${EVBENCH_NATIVE} \
                 ${CORE_IMAGE_EXTRA_INSTALL} \
                 "

# The flash command (`evbench flash`) writes the wic image guided by its bmap:
# TI's k3 machines (am62xx-evm, beagleplay) already build wic.xz and wic.bmap,
# so this image adds no types of its own (another machine: set IMAGE_FSTYPES
# in local.conf).

# A public key file (for example ${HOME}/.ssh/id_ed25519.pub) baked into
# root's authorized_keys: root logs in with that key and has no password.
EVBENCH_ROOT_AUTHORIZED_KEYS ?= ""
# Development only: "1" gives root an empty password on SSH and the serial
# console. Anyone who reaches the board is root; never ship such an image.
EVBENCH_DEV_EMPTY_ROOT_PASSWORD ?= "0"
# Whether the responder (evbench-agent serve) starts at boot is decided by
# EVBENCH_SERVE in the evbench-agent recipe (set it in local.conf).

EVBENCH_DEV_FEATURES = "empty-root-password allow-empty-password allow-root-login"
IMAGE_FEATURES += "${@d.getVar('EVBENCH_DEV_FEATURES') \
                     if d.getVar('EVBENCH_DEV_EMPTY_ROOT_PASSWORD') == '1' else ''}"

ROOTFS_POSTPROCESS_COMMAND += "evbench_root_access"
# A new key file content rebuilds the root filesystem.
EVBENCH_KEY_CHECKSUM = "${@'%s:True' % d.getVar('EVBENCH_ROOT_AUTHORIZED_KEYS') \
                          if d.getVar('EVBENCH_ROOT_AUTHORIZED_KEYS') else ''}"
do_rootfs[file-checksums] += "${EVBENCH_KEY_CHECKSUM}"

evbench_root_access[doc] = "Bakes EVBENCH_ROOT_AUTHORIZED_KEYS into root's authorized_keys"
python evbench_root_access() {
    key_file = d.getVar('EVBENCH_ROOT_AUTHORIZED_KEYS')
    if not key_file:
        if d.getVar('EVBENCH_DEV_EMPTY_ROOT_PASSWORD') == '1':
            bb.warn('evbench-image: root has an empty password '
                    '(EVBENCH_DEV_EMPTY_ROOT_PASSWORD = "1"): development only')
            return
        bb.fatal('evbench-image: no way to log in as root: set EVBENCH_ROOT_AUTHORIZED_KEYS '
                 'to a public key file (for example ${HOME}/.ssh/id_ed25519.pub), or '
                 'EVBENCH_DEV_EMPTY_ROOT_PASSWORD = "1" for a development image')
    try:
        with open(key_file) as stream:
            keys = [line.strip() for line in stream if line.strip() and not line.startswith('#')]
    except OSError as error:
        bb.fatal('evbench-image: cannot read EVBENCH_ROOT_AUTHORIZED_KEYS %s: %s'
                 % (key_file, error.strerror))
    if not keys or any(' ' not in key or 'PRIVATE KEY' in key for key in keys):
        bb.fatal('evbench-image: %s is not an OpenSSH public key file '
                 '(expected lines like "ssh-ed25519 AAAA... comment")' % key_file)
    ssh_dir = d.getVar('IMAGE_ROOTFS') + d.getVar('ROOT_HOME') + '/.ssh'
    bb.utils.mkdirhier(ssh_dir)
    os.chmod(ssh_dir, 0o700)
    authorized = ssh_dir + '/authorized_keys'
    with open(authorized, 'w') as stream:
        stream.write('\n'.join(keys) + '\n')
    os.chmod(authorized, 0o600)
}

# evbench-can only recommends the CAN kernel modules, and bitbake drops a
# recommendation whose package the kernel did not build without a word: the
# finished root filesystem is checked instead (lib/evbench_layer/can_modules.py).
ROOTFS_POSTPROCESS_COMMAND += "evbench_check_can_modules"

evbench_check_can_modules[doc] = "Fails the image when evbench-can is in it but a CAN module is not"
python evbench_check_can_modules() {
    from evbench_layer import can_modules
    problems = can_modules.missing(d.getVar('IMAGE_ROOTFS'))
    if problems:
        bb.fatal('evbench-image: evbench-can is in the image but the kernel lacks what the '
                 'link suite over CAN needs:\n  ' + '\n  '.join(problems) + '\n'
                 'Build them (meta-evbench adds recipes-kernel/linux/files/can-isotp.cfg to '
                 'linux-ti-staging, linux-bb.org and linux-yocto when EVBENCH_BUSES has '
                 'evbench-can; another kernel needs the same fragment), or set '
                 'EVBENCH_BUSES = "" for a board without CAN.')
}
