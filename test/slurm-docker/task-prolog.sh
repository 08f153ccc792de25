#!/bin/sh
# The cluster's TaskProlog (slurm.conf): slurmstepd runs it before each task
# and sets the variables of the "export NAME=VALUE" lines it prints in that
# task's environment. It runs every executable in /etc/slurm/task-prolog.d,
# so a site (or a test) adds a piece without replacing the others.
for f in /etc/slurm/task-prolog.d/*; do
	[ -x "$f" ] && "$f"
done
exit 0
