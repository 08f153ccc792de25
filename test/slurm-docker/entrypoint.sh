#!/bin/sh
# Container entrypoint of the spank-otel test cluster.
#   entrypoint slurmctld   start munged, then slurmctld in the foreground
#   entrypoint slurmd      start munged, then slurmd in the foreground
#   entrypoint CMD...      run CMD (for debugging an image)
# No systemd: docker's init (tini) is PID 1 and reaps the slurmstepds.
set -eu

start_munge() {
	install -d -o munge -g munge -m 0755 /run/munge
	runuser -u munge -- /usr/sbin/munged
	i=0
	until munge -n </dev/null | unmunge >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -ge 100 ]; then
			echo "entrypoint: munged did not come up" >&2
			cat /var/log/munge/munged.log >&2 || :
			exit 1
		fi
		sleep 0.1
	done
}

case "${1:-}" in
slurmctld)
	start_munge
	install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/log/slurm
	# -i: a recreated container starts from an empty state directory.
	exec /usr/sbin/slurmctld -D -i
	;;
slurmd)
	start_munge
	install -d -m 0755 /var/lib/slurm/slurmd /var/log/slurm
	exec /usr/sbin/slurmd -D
	;;
*)
	exec "$@"
	;;
esac
