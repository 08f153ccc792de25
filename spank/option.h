/*
 * option.h - the --otel-attrs=on|off and --otel-rank[=on|off] options of
 * srun, sbatch and salloc. Both travel the same way.
 *
 * How a value travels (Slurm 22.05 to 26.05):
 * - srun --otel-attrs=X: srun sends X with the step's launch options; the
 *   step's slurmstepd calls the option callback with remote=1.
 * - sbatch/salloc --otel-attrs=X: the command puts
 *   SO_OPTION_ENV=X into the job's environment (kept even with
 *   --export=NONE); the batch step's slurmstepd calls the callback with
 *   remote=1 and then removes the variable from the job's environment.
 *   salloc also leaves it in the environment of the shell it starts.
 * Because slurmstepd removes the variable, the plugin writes it back into
 * the environment of each task of a step that received a value, so every
 * later srun inside that task (e.g. in a batch script) carries it to its own
 * step: sbatch --otel-attrs=off holds for the whole job, and a step's own
 * --otel-attrs=on (sent with the launch options, which win) re-enables it
 * for that step.
 */
#ifndef SPANK_OTEL_OPTION_H
#define SPANK_OTEL_OPTION_H

#define SO_OPTION_NAME "otel-attrs"

/* Slurm's name for the option in the environment: "_SLURM_SPANK_OPTION_",
 * the plugin name and the option name, each non-alphanumeric byte as '_'. */
#define SO_OPTION_ENV "_SLURM_SPANK_OPTION_spank_otel_otel_attrs"

#define SO_RANK_OPTION_NAME "otel-rank"
#define SO_RANK_OPTION_ENV "_SLURM_SPANK_OPTION_spank_otel_otel_rank"

enum so_switch {
	SO_SWITCH_INVALID = -1,
	SO_SWITCH_OFF = 0,
	SO_SWITCH_ON = 1,
};

/* Parses "on" or "off" (any case). NULL or anything else is invalid. */
enum so_switch so_switch_parse(const char *s);

#endif
