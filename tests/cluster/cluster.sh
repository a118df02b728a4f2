#!/usr/bin/env bash
# cluster.sh - a real Slurm cluster on one machine, for cohort's integration
# tests, benchmark and demo. Every host is its own network namespace, joined
# by a bridge on the private net 10.77.0.0/24 that lives in a namespace of
# its own (the machine's own network is never touched), with its own
# hostname, /tmp, /dev/shm and /etc/hosts: slurmctld runs on "head"
# (10.77.0.1), slurmd on n1..nN (10.77.0.11...). munged serves them all
# through a socket in the cluster directory. Needs root.
#
#   cluster.sh install                 the Debian packages it needs
#   cluster.sh check                   can it run here? (says why not, exit 1)
#   cluster.sh up DIR [NODES] [SHARED_PATH...]
#                                      starts the cluster (NODES: 2-8, default
#                                      3); DIR holds its files; paths that
#                                      must look the same on every host (the
#                                      build tree) are SHARED_PATHs
#   cluster.sh exec DIR HOST CMD...    runs CMD on HOST (head, n1, ...)
#   cluster.sh down DIR                stops every daemon by PID, removes the
#                                      namespaces
#   cluster.sh munge-socket DIR        prints munged's socket
#
# Sockets (munged's, slurmd's spool with its PMIx sockets) live under a short
# directory of their own, /run/cohXXXXXX, so that DIR may be as deep as a
# build tree anywhere: a Unix socket's path holds 107 bytes at most.
#
# DIR/etc/plugstack.conf is read by srun and slurmstepd at every step, so a
# test may rewrite it between steps. SLURM_CONF is set for exec'd commands.
set -u
here=$(cd "$(dirname "$0")" && pwd)
packages="slurmctld slurmd slurm-client munge iproute2 util-linux python3-torch python3-torchvision"

die() { echo "cluster.sh: $*" >&2; exit 1; }

check() {
    [ "$(id -u)" = 0 ] || { echo "needs root"; return 1; }
    for c in slurmctld slurmd srun munged ip nsenter unshare; do
        command -v "$c" >/dev/null || { echo "$c is not installed (cluster.sh install)"; return 1; }
    done
    ip netns add cohort-probe-$$ 2>/dev/null || { echo "cannot create network namespaces"; return 1; }
    ip netns del cohort-probe-$$
    unshare --uts --mount true 2>/dev/null || { echo "cannot create UTS/mount namespaces"; return 1; }
}

# The namespace prefix of DIR: short, and different for different DIRs.
prefix() { echo "coh$(printf %s "$1" | md5sum | cut -c1-6)"; }
# The short directory of DIR's sockets.
sockets() { echo "/run/$(prefix "$1")"; }

holder_pid() { cat "$1/run/$2.holder.pid" 2>/dev/null; }

in_host() { # in_host DIR HOST CMD...
    local dir=$1 host=$2 pid
    shift 2
    pid=$(holder_pid "$dir" "$host") || die "no host $host in $dir (is the cluster up?)"
    SLURM_CONF="$dir/etc/slurm.conf" nsenter -t "$pid" --net --uts --mount --wd="$PWD" -- "$@"
}

write_config() {
    local dir=$1 nodes=$2 i sock
    sock=$(sockets "$dir")
    mkdir -p "$dir"/{etc,munge,run,log,state,gres,work} "$sock/spool"
    chmod 700 "$dir/munge"
    {
        echo "127.0.0.1 localhost"
        echo "10.77.0.1 head"
        for i in $(seq 1 "$nodes"); do echo "10.77.0.$((10 + i)) n$i"; done
    } >"$dir/etc/hosts"
    for i in 0 1 2 3 4 5 6 7; do
        [ -e "$dir/gres/nvidia$i" ] || mknod "$dir/gres/nvidia$i" c 195 "$i"
    done
    echo "Name=gpu File=$dir/gres/nvidia[0-7]" >"$dir/etc/gres.conf"
    [ -e "$dir/etc/plugstack.conf" ] || : >"$dir/etc/plugstack.conf"
    cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=cohort
SlurmctldHost=head(10.77.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$sock/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.own.pid
SlurmdPidFile=$dir/run/slurmd-%n.own.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
SelectType=select/cons_tres
MpiParams=ports=30000-30999
GresTypes=gpu
ReturnToService=2
PlugStackConfig=$dir/etc/plugstack.conf
NodeName=n[1-$nodes] NodeAddr=10.77.0.[11-$((10 + nodes))] CPUs=16 Gres=gpu:8 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=30 State=UP
EOF
}

# One host: a network namespace wired to the bridge, and a holder process
# that keeps its UTS and mount namespaces (hostname, private /tmp, /dev/shm,
# /etc/hosts; the shared paths bound back into /tmp) for daemons and exec.
start_host() {
    local dir=$1 host=$2 addr=$3 p ns sw ready status
    shift 3
    p=$(prefix "$dir") ns="$(prefix "$dir")-$host" sw="$(prefix "$dir")-sw"
    ip netns add "$ns" || return 1
    ip -n "$sw" link add "$host" type veth peer name eth0 netns "$ns" &&
        ip -n "$sw" link set "$host" master br0 up &&
        ip -n "$ns" link set lo up &&
        ip -n "$ns" addr add "$addr/24" dev eth0 &&
        ip -n "$ns" link set eth0 up || return 1
    ready="$dir/run/$host.ready"
    rm -f "$ready" && mkfifo "$ready" || return 1
    exec 3<>"$ready"
    setsid nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private \
        bash "$here/host-init.sh" "$host" "$dir" "$ready" "/run/$p/$host" "$@" \
        >>"$dir/log/$host.init.log" 2>&1 </dev/null &
    echo $! >"$dir/run/$host.holder.pid"
    status=
    read -r -t 30 -u 3 status
    exec 3<&-
    [ "$status" = ready ] || { echo "host $host did not come up: $(tail -3 "$dir/log/$host.init.log")" >&2; return 1; }
}

# Starts CMD on HOST in the background as its own session; records its PID.
start_daemon() { # start_daemon DIR HOST NAME CMD...
    local dir=$1 host=$2 name=$3
    shift 3
    SLURM_CONF="$dir/etc/slurm.conf" setsid nsenter -t "$(holder_pid "$dir" "$host")" \
        --net --uts --mount -- "$@" >>"$dir/log/$name.out" 2>&1 </dev/null &
    echo $! >"$dir/run/$name.pid"
}

up() {
    local dir=$1 nodes=${2:-3} p i shared=()
    shift 2 2>/dev/null || shift $#
    [[ "$nodes" =~ ^[2-8]$ ]] || die "NODES must be 2-8, not '$nodes'"
    case $dir in /*) ;; *) die "DIR must be an absolute path, not '$dir'" ;; esac
    why=$(check) || die "cannot run here: $why"
    [ -e "$dir/run/head.holder.pid" ] && die "$dir already holds a cluster (cluster.sh down $dir)"
    mkdir -p "$dir" || die "cannot create $dir"
    # Paths under /tmp vanish behind each host's private /tmp unless bound
    # back; bind the outermost of nested ones, by their real paths.
    local path outer known
    while read -r path; do
        outer=
        for known in "${shared[@]}"; do
            case $path/ in "$known"/*) outer=$known ;; esac
        done
        case $path in /tmp/?*) [ -z "$outer" ] && shared+=("$path") ;; esac
    done < <(readlink -f "$dir" "$@" | awk '{ print length($0), $0 }' | sort -n | cut -d' ' -f2-)
    write_config "$dir" "$nodes"
    p=$(prefix "$dir")

    # munged daemonizes only once it is ready: no race with the daemons.
    [ -s "$dir/munge/munge.key" ] || mungekey -c -k "$dir/munge/munge.key" ||
        die "mungekey failed"
    munged --key-file="$dir/munge/munge.key" --socket="$(sockets "$dir")/munge.sock" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
        --log-file="$dir/log/munged.log" --force || die "munged did not start: $(tail -3 "$dir/log/munged.log")"
    cp "$dir/munge/munged.pid" "$dir/run/munged.pid"

    ip netns add "$p-sw" && ip -n "$p-sw" link add br0 type bridge &&
        ip -n "$p-sw" link set br0 up || { down "$dir"; die "cannot create the switch namespace"; }
    start_host "$dir" head 10.77.0.1 "${shared[@]}" || { down "$dir"; die "head failed"; }
    for i in $(seq 1 "$nodes"); do
        start_host "$dir" "n$i" "10.77.0.$((10 + i))" "${shared[@]}" || { down "$dir"; die "n$i failed"; }
    done
    start_daemon "$dir" head slurmctld slurmctld -D -i
    for i in $(seq 1 "$nodes"); do
        start_daemon "$dir" "n$i" "slurmd-n$i" slurmd -D -N "n$i"
    done
    # The first job waits (queued, bounded) until every node has registered:
    # the cluster is up when it ran on all of them.
    local out
    out=$(cd "$dir/work" && in_host "$dir" head timeout 60 srun -N"$nodes" -t 1 -J cluster-up hostname 2>"$dir/log/cluster-up.err")
    if [ "$(echo "$out" | sort | tr '\n' ' ')" != "$(seq -f 'n%g' 1 "$nodes" | tr '\n' ' ')" ]; then
        echo "cluster.sh: the first job did not run on every node: $out $(cat "$dir/log/cluster-up.err")" >&2
        tail -5 "$dir/log/slurmctld.log" >&2
        down "$dir"
        exit 1
    fi
    # ... and the cluster is ready when that job has left every node (a node
    # still completing it would not be given to the next job): 30 s at most.
    in_host "$dir" head timeout 30 sh -c \
        'until [ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" = "$0" ]; do sleep 0.05; done' "$nodes" ||
        echo "cluster.sh: not every node idle after the first job: $(in_host "$dir" head sinfo -h -N -o '%N %t' | tr '\n' ' ')" >&2
}

# Stops processes by PID: TERM, wait for them to exit (tail --pid), KILL
# what is left after 10 s.
stop_pids() {
    local pid alive=()
    for pid in "$@"; do
        kill -TERM "$pid" 2>/dev/null && alive+=("$pid")
    done
    for pid in "${alive[@]}"; do
        timeout 10 tail -s 0.05 --pid="$pid" -f /dev/null
        kill -KILL "$pid" 2>/dev/null && timeout 5 tail -s 0.05 --pid="$pid" -f /dev/null
    done
    return 0
}

pids_of() { # pids_of FILE...: the PIDs in those of the files that exist
    local f
    for f in "$@"; do [ -s "$f" ] && cat "$f"; done
}

down() {
    local dir=$1 p f
    p=$(prefix "$dir")
    # Daemons first (slurmd kills its steps), then the namespace holders.
    stop_pids $(pids_of "$dir"/run/slurmd-n?.pid "$dir/run/slurmctld.pid")
    stop_pids $(pids_of "$dir"/run/*.holder.pid "$dir/run/munged.pid")
    rm -f "$dir"/run/*.pid "$dir"/run/*.ready
    for f in /run/netns/"$p"-*; do
        [ -e "$f" ] && ip netns del "$(basename "$f")"
    done
    rm -rf "/run/$p"
    return 0
}

cmd=${1:-}
shift 2>/dev/null
case $cmd in
install)
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        --no-install-recommends $packages ;;
check) check ;;
up) [ $# -ge 1 ] || die "usage: cluster.sh up DIR [NODES] [SHARED_PATH...]"; up "$@" ;;
exec) [ $# -ge 3 ] || die "usage: cluster.sh exec DIR HOST CMD..."; in_host "$@" ;;
down) [ $# -eq 1 ] || die "usage: cluster.sh down DIR"; down "$1" ;;
munge-socket) [ $# -eq 1 ] || die "usage: cluster.sh munge-socket DIR"; echo "$(sockets "$1")/munge.sock" ;;
*) die "usage: cluster.sh install|check|up|exec|down|munge-socket (see the top of $0)" ;;
esac
