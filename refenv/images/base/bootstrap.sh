#!/bin/sh
# refenv's offline base image recipe: a minimal Debian with Python, made with debootstrap from a
# Debian mirror the host can reach, then cleaned of package caches. refenv imports the result with
# `docker import`; the recipe's hash (this file and its arguments) names the image, so the same
# recipe is bootstrapped once per machine.
#   bootstrap.sh SUITE MIRROR PACKAGES(comma-separated) TARGET_DIR
set -eu
suite=$1 mirror=$2 packages=$3 target=$4
debootstrap --variant=minbase --include="$packages" "$suite" "$target" "$mirror"
# Package caches and lists are not part of an environment; the apt lists would also date it.
rm -rf "$target"/var/cache/apt/archives/*.deb "$target"/var/lib/apt/lists/* "$target"/var/log/* \
       "$target"/tmp/* "$target"/root/.cache
# No daemon may start while packages are configured later (policy-rc.d convention).
printf '#!/bin/sh\nexit 101\n' > "$target/usr/sbin/policy-rc.d"
chmod 755 "$target/usr/sbin/policy-rc.d"
