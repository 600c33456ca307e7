"""Read-only readiness probe of a GPU node, printed as one JSON object.

It only reads files and runs `--version`-style commands; it writes nothing.
Every field says "unknown" (or an empty list) rather than guess when the node
hides the source (containers hide /proc/modules and /sys/firmware).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

ENV = {"LC_ALL": "C", "LANG": "C",
       "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/rke2/bin"}
EFI_SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aca7-00c04fc295c8"
DRIVER_PACKAGE = re.compile(
    r"^(nvidia-driver|nvidia-dkms|nvidia-kernel-dkms|nvidia-kernel-open-dkms|nvidia-headless|nvidia-utils|"
    r"nvidia-smi|nvidia-kernel-source|kmod-nvidia|libnvidia-compute)")
RUNTIMES = ["containerd", "docker", "crio", "podman", "runc", "crun", "nvidia-container-runtime", "nvidia-ctk"]
RKE2_BINARIES = ["/usr/local/bin/rke2", "/usr/bin/rke2", "/opt/rke2/bin/rke2"]
UNIT_DIRS = ["/etc/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"]


def read(path, mode="r"):
    try:
        with open(path, mode) as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def run(argv):
    """Run a read-only command; return (rc, stdout) or (None, '') when it cannot start."""
    try:
        res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV,
                             universal_newlines=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None, ""
    return res.returncode, res.stdout


def which(name):
    return shutil.which(name, path=ENV["PATH"])


def in_container():
    if os.path.exists("/run/.containerenv") or os.path.exists("/.dockerenv"):
        return True
    env1 = read("/proc/1/environ", "rb")
    return bool(env1 and b"container=" in env1)


def pci_devices():
    sysfs = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob("/sys/bus/pci/devices/*/vendor")
                   if (read(p) or "").strip() == "0x10de")
    names = []
    lspci = which("lspci")
    if lspci:
        rc, out = run([lspci, "-Dnn", "-d", "10de:"])
        if rc == 0:
            names = [line.strip() for line in out.splitlines() if line.strip()]
    devices = sysfs or sorted(line.split()[0] for line in names)
    source = "sysfs" if os.path.isdir("/sys/bus/pci/devices") and os.listdir("/sys/bus/pci/devices") else \
        ("lspci" if lspci else "none")
    return devices, names, source


def secure_boot(container):
    mokutil = which("mokutil")
    if mokutil:
        _rc, out = run([mokutil, "--sb-state"])
        if "SecureBoot enabled" in out:
            return "enabled", "mokutil: " + out.strip()
        if "SecureBoot disabled" in out:
            return "disabled", "mokutil: " + out.strip()
    data = read(EFI_SECURE_BOOT, "rb")
    if data and len(data) >= 5:
        return ("enabled" if data[4] == 1 else "disabled"), "efivars SecureBoot byte %d" % data[4]
    if os.path.isdir("/sys/firmware/efi"):
        return "unknown", "UEFI boot, SecureBoot variable unreadable and no mokutil"
    if container:
        return "unknown", "no /sys/firmware/efi (hidden in a container)"
    return "not_uefi", "no /sys/firmware/efi: legacy BIOS boot, Secure Boot does not apply"


def kernel_headers():
    running = os.uname()[2]
    with_headers = []
    for base in ("/lib/modules", "/usr/lib/modules"):
        if os.path.isdir(base):
            with_headers += [v for v in os.listdir(base) if os.path.exists(os.path.join(base, v, "build"))]
    return running, sorted(set(with_headers))


def disk_free():
    for path in ("/var/lib/dkms", "/var/lib", "/"):
        if os.path.isdir(path):
            usage = shutil.disk_usage(path)
            return path, usage.free // (1024 * 1024)
    return "/", 0


def packages():
    found = []
    if which("dpkg-query"):
        rc, out = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Package} ${Version}\n"])
        if rc == 0:
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[0].startswith("ii") and DRIVER_PACKAGE.match(parts[1]):
                    found.append("%s %s" % (parts[1], parts[2]))
    elif which("rpm"):
        rc, out = run(["rpm", "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\n"])
        if rc == 0:
            found = [line for line in out.splitlines() if DRIVER_PACKAGE.match(line)]
    return sorted(found)


def dkms_modules():
    built = []
    for path in sorted(glob.glob("/var/lib/dkms/nvidia*/*/*/*/module")):
        parts = path.split("/")
        built.append("%s/%s: %s (%s)" % (parts[4], parts[5], parts[6], parts[7]))
    return built


def driver():
    proc = read("/proc/driver/nvidia/version") or ""
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9][0-9.]+)", proc)
    loaded = match.group(1) if match else (read("/sys/module/nvidia/version") or "").strip()
    pkgs = packages()
    runfile = os.path.exists("/usr/bin/nvidia-uninstall") or os.path.exists("/var/log/nvidia-installer.log")
    smi = which("nvidia-smi") or ""
    if pkgs and runfile:
        method = "package+runfile"
    elif runfile:
        method = "runfile"
    elif pkgs:
        method = "package"
    elif smi or loaded:
        method = "unknown"
    else:
        method = "none"
    return {"driver_loaded_version": loaded, "driver_install_method": method, "driver_packages": pkgs,
            "driver_dkms_modules": dkms_modules(), "driver_nvidia_smi": smi}


def version_line(path):
    for args in (["--version"], ["version"]):
        rc, out = run([path] + args)
        if rc == 0 and out.strip():
            return out.strip().splitlines()[0][:120]
    return ""


def runtimes():
    found = []
    for name in RUNTIMES:
        path = which(name)
        if path:
            found.append({"name": name, "path": path, "version": version_line(path)})
    embedded = "/var/lib/rancher/rke2/bin/containerd"
    if os.path.exists(embedded):
        found.append({"name": "containerd (RKE2)", "path": embedded, "version": version_line(embedded)})
    return found


def rke2():
    binary = next((p for p in RKE2_BINARIES if os.path.exists(p)), "")
    version = ""
    if binary:
        _rc, out = run([binary, "--version"])
        match = re.search(r"rke2 version (\S+)", out)
        version = match.group(1) if match else out.strip().splitlines()[0] if out.strip() else ""
    units = sorted({u for d in UNIT_DIRS for u in ("rke2-server", "rke2-agent")
                    if os.path.exists(os.path.join(d, u + ".service"))})
    kubeconfig = "/etc/rancher/rke2/rke2.yaml"
    mode = ""
    if os.path.exists(kubeconfig):
        mode = "%04o" % (os.stat(kubeconfig).st_mode & 0o7777)
    return {"rke2_present": bool(binary or units), "rke2_binary": binary, "rke2_version": version,
            "rke2_units": units, "rke2_kubeconfig_mode": mode}


def main():
    container = in_container()
    devices, names, source = pci_devices()
    modules = read("/proc/modules")
    if not modules:
        nouveau = "unknown"
    else:
        nouveau = any(line.split(" ", 1)[0] == "nouveau" for line in modules.splitlines())
    sb_state, sb_detail = secure_boot(container)
    running, with_headers = kernel_headers()
    disk_path, free_mb = disk_free()
    result = {
        "container": container,
        "nvidia_pci_devices": devices,
        "nvidia_pci_names": names,
        "nvidia_pci_source": source,
        "nouveau_loaded": nouveau,
        "secure_boot": sb_state,
        "secure_boot_detail": sb_detail,
        "kernel_running": running,
        "kernel_headers_versions": with_headers,
        "kernel_headers_for_running": running in with_headers,
        "dkms_disk_path": disk_path,
        "dkms_disk_free_mb": free_mb,
        "container_runtimes": runtimes(),
    }
    result.update(driver())
    result.update(rke2())
    json.dump(result, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
