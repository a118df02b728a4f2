#!/usr/bin/env bash
# host-init.sh - run by cluster.sh inside a fresh network, UTS and mount
# namespace: makes it host HOST (hostname, private /tmp and /dev/shm, the
# cluster's /etc/hosts), binds each SHARED path (under /tmp) back into the
# private /tmp, says "ready" on the READY fifo and then holds the namespaces
# for the daemons and commands that cluster.sh enters into them.
#   host-init.sh HOST DIR READY STAGE [SHARED...]
set -eu
host=$1 dir=$2 ready=$3 stage=$4
shift 4
trap 'echo failed >"$ready"' ERR
hostname "$host"
# Hold every shared path outside /tmp, give the host its own /tmp, put them back.
i=0
for path in "$@"; do
    mkdir -p "$stage/$i"
    mount --bind "$path" "$stage/$i"
    i=$((i + 1))
done
mount -t tmpfs -o mode=1777 "tmp-$host" /tmp
i=0
for path in "$@"; do
    mkdir -p "$path"
    mount --bind "$stage/$i" "$path"
    i=$((i + 1))
done
mount -t tmpfs -o mode=1777 "shm-$host" /dev/shm
mount --bind "$dir/etc/hosts" /etc/hosts
trap - ERR
echo ready >"$ready"
exec sleep infinity
