#!/usr/bin/env bash
# Capture what baremetal.gpu.gpu_node_facts reads from a node, as a small tree for the unit tests.
#
#   sudo bash scripts/capture-node-tree.sh NAME.tar     (on the node; NAME.tar must not exist)
#
# The tree is written as an uncompressed tar (PCI addresses contain ":", which ansible-test's
# no-illegal-filenames check refuses in the repository; a tar also keeps empty directories).
# Copies only small files and the shape of directories: PCI vendor/device/class of every function,
# /proc/modules, the loaded NVIDIA driver's version, the SecureBoot EFI variable, kernel image names
# (empty placeholders) and which kernels have headers (a "build" placeholder), the DKMS build tree
# (directories only), RKE2's config.yaml and unit file names, container markers; and the output of
# the read-only commands the module runs, under DEST/commands/<name>.{rc,out}. Nothing secret is
# copied: config.yaml lines that carry a token or password are dropped.
set -euo pipefail
out=${1:?usage: capture-node-tree.sh NAME.tar}
[[ $out == *.tar ]] || { echo "the output must be a .tar file" >&2; exit 1; }
[[ -e $out ]] && { echo "$out exists" >&2; exit 1; }
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
mkdir -p "$dest/commands"

copy_file() {  # copy_file PATH: a regular file's content, if readable
  local src=$1
  [[ -r $src && -f $src ]] || return 0
  mkdir -p "$dest$(dirname "$src")"
  cat "$src" >"$dest$src" 2>/dev/null || rm -f "$dest$src"
}

for dev in /sys/bus/pci/devices/*; do
  [[ -e $dev ]] || continue
  for f in vendor device class subsystem_vendor subsystem_device; do
    copy_file "$dev/$f"
  done
  # The kernel driver bound to the function (gpu_health reads it): kept as a link to its name only.
  if [[ -L $dev/driver ]]; then
    mkdir -p "$dest$dev"
    ln -s "../../drivers/$(basename "$(readlink "$dev/driver")")" "$dest$dev/driver"
  fi
done
copy_file /proc/modules
copy_file /proc/driver/nvidia/version
copy_file /sys/module/nvidia/version
[[ -d /sys/firmware/efi ]] && mkdir -p "$dest/sys/firmware/efi"
for v in /sys/firmware/efi/efivars/SecureBoot-*; do copy_file "$v"; done
for image in /boot/vmlinuz-* /boot/vmlinux-*; do
  [[ -e $image ]] || continue
  mkdir -p "$dest/boot"; : >"$dest$image"
done
keep_dir() { mkdir -p "$dest$1"; }
for moddir in /lib/modules/* /usr/lib/modules/*; do
  [[ -d $moddir && ! -L $moddir ]] || continue
  keep_dir "$moddir"
  [[ -e $moddir/build ]] && keep_dir "$moddir/build"
done
for d in /var/lib/dkms/nvidia*/*/*/*/module; do
  [[ -d $d ]] && keep_dir "$d"
done
if [[ -r /etc/rancher/rke2/config.yaml ]]; then
  mkdir -p "$dest/etc/rancher/rke2"
  grep -viE 'token|password|secret' /etc/rancher/rke2/config.yaml >"$dest/etc/rancher/rke2/config.yaml" || true
fi
for unitdir in /etc/systemd/system /usr/local/lib/systemd/system /usr/lib/systemd/system /lib/systemd/system; do
  for u in rke2-server rke2-agent; do
    [[ -e $unitdir/$u.service ]] && { mkdir -p "$dest$unitdir"; : >"$dest$unitdir/$u.service"; }
  done
done
for marker in /run/.containerenv /.dockerenv; do
  [[ -e $marker ]] && { mkdir -p "$dest$(dirname "$marker")"; : >"$dest$marker"; }
done
if tr '\0' '\n' </proc/1/environ 2>/dev/null | grep -q '^container='; then
  mkdir -p "$dest/proc/1"; printf 'container=%s\0' "$(tr '\0' '\n' </proc/1/environ | sed -n 's/^container=//p')" >"$dest/proc/1/environ"
fi

record() {  # record NAME COMMAND...: the command's rc and stdout
  local name=$1; shift
  set +e
  LC_ALL=C "$@" >"$dest/commands/$name.out" 2>/dev/null
  echo $? >"$dest/commands/$name.rc"
  set -e
}
record lspci lspci -Dnn -d 10de:
record mokutil mokutil --sb-state
# shellcheck disable=SC2016  # dpkg-query's own ${...} format, not shell
record dpkg-query dpkg-query -W '-f=${db:Status-Abbrev} ${Package} ${Version}\n'
# Only what the module reads: the NVIDIA driver stack (node_facts.NVIDIA_STACK_PACKAGE, libxnvctrl0 and
# libcuda1 too) and the kernel packages; the rest of the package list is noise (and long).
grep -E '^[^ ]+ +(nvidia|libnvidia-|libxnvctrl|libcuda|firmware-nvidia-|kmod-nvidia|xserver-xorg-video-nvidia-|linux-)' \
  "$dest/commands/dpkg-query.out" >"$dest/commands/dpkg-query.nvidia" || true
mv "$dest/commands/dpkg-query.nvidia" "$dest/commands/dpkg-query.out"
record systemctl-is-enabled systemctl is-enabled rke2-server rke2-agent
uname -r >"$dest/commands/uname-r.out"
# Where the module's which() finds the programs it looks for (nvidia-smi and the container runtimes).
for prog in nvidia-smi containerd docker crio podman runc crun nvidia-container-runtime nvidia-ctk; do
  path=$(command -v "$prog" 2>/dev/null) && printf '%s %s\n' "$prog" "$path"
done >"$dest/commands/which.out" || true
tar -C "$dest" --owner=0 --group=0 --numeric-owner -cf "$out" .
echo "captured into $out"
