#!/bin/busybox sh
# The virtual board's initramfs: load virtio and ext4 (packed in load order
# by evboard_kernel.py), mount the root disk named by root= and hand over to systemd.
/bin/busybox --install -s /bin
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
for module in /modules/*.ko; do
    insmod "$module" || echo "evboard-initramfs: cannot load $module"
done
root=/dev/vda
for arg in $(cat /proc/cmdline); do
    case "$arg" in root=*) root="${arg#root=}" ;; esac
done
# Devices appear asynchronously after the modules load: wait at most 30 s.
tries=0
while [ ! -b "$root" ] && [ "$tries" -lt 300 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
if ! mount -t ext4 -o rw "$root" /newroot; then
    echo "evboard-initramfs: cannot mount $root; dropping to a shell"
    exec sh
fi
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
