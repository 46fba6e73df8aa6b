"""The virtual board's console patterns, on text as the console's reads deliver it
(fast tier: no board)."""

import re

from evboard_qemu import BOOT_OUTCOME

#: evboard_init.sh's line when the root disk is missing, as the board prints it.
NO_ROOT = "evboard-initramfs: cannot mount /dev/vdz; dropping to a shell\r\n"


def test_a_missing_root_disk_is_named_only_once_its_whole_name_has_come() -> None:
    # A read that ends inside the device's name matches nothing yet (in one loaded
    # rehearsal the failure named "/" for "/dev/vdz").
    for cut in range(len("evboard-initramfs: cannot mount "), NO_ROOT.index(";") + 1):
        assert re.search(BOOT_OUTCOME, NO_ROOT[:cut]) is None, NO_ROOT[:cut]
    found = re.search(BOOT_OUTCOME, NO_ROOT)
    assert found is not None
    assert found.group(0) == "evboard-initramfs: cannot mount /dev/vdz"


def test_the_login_prompt_ends_a_boot() -> None:
    found = re.search(BOOT_OUTCOME, "Debian GNU/Linux 12 evboard ttyAMA0\r\n\r\nevboard login: ")
    assert found is not None and found.group(0).startswith("login:")
