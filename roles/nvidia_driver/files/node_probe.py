"""Read-only probe of the node's driver-related state, printed as JSON.

secure_boot: enabled | disabled | unknown (from `mokutil --sb-state`; no mokutil or no EFI: unknown)
nouveau_loaded: true | false | "unknown" (/proc/modules unreadable, as in containers)
loaded_nvidia_version: version of the loaded nvidia module, or ""
nvidia_pci_devices: PCI addresses of vendor 0x10de
installed_kernels: kernel versions with an image in /boot (vmlinuz-* / vmlinux-*)
"""
import glob
import json
import os
import subprocess


def read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def secure_boot():
    try:
        res = subprocess.run(["mokutil", "--sb-state"], capture_output=True, text=True, check=False,
                             env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")})
    except OSError:
        return "unknown", "mokutil not installed"
    text = (res.stdout + res.stderr).strip()
    if "SecureBoot enabled" in text:
        return "enabled", text
    if "SecureBoot disabled" in text:
        return "disabled", text
    return "unknown", text


def main():
    state, raw = secure_boot()
    modules = read("/proc/modules")
    if modules is None or not modules.strip():
        nouveau = "unknown"
    else:
        nouveau = any(line.split(" ", 1)[0] == "nouveau" for line in modules.splitlines())
    pci = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob("/sys/bus/pci/devices/*/vendor")
                 if (read(p) or "").strip() == "0x10de")
    kernels = set()
    for image in glob.glob("/boot/vmlinuz-*") + glob.glob("/boot/vmlinux-*"):
        version = os.path.basename(image).split("-", 1)[1]
        if os.path.isdir(os.path.join("/lib/modules", version)) or os.path.isdir(os.path.join("/usr/lib/modules", version)):
            kernels.add(version)
    json.dump({
        "secure_boot": state,
        "secure_boot_raw": raw,
        "nouveau_loaded": nouveau,
        "loaded_nvidia_version": (read("/sys/module/nvidia/version") or "").strip(),
        "nvidia_pci_devices": pci,
        "installed_kernels": sorted(kernels),
    }, __import__("sys").stdout)


if __name__ == "__main__":
    main()
