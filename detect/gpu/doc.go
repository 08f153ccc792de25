// Package gpu finds which whole NVIDIA GPUs Slurm gave a task, by their
// UUIDs as the driver (and so NVIDIA's dcgm-exporter) names them, in the
// order of the task's CUDA_VISIBLE_DEVICES.
//
// [Find] takes the task's environment and a file system ([FS]), never the
// process's own: the SPANK plugin hands it a task's environment and the
// node's root ([Root]("/")), tests hand it fake trees. It never opens a
// device node (a driver may initialise the GPU on open), never loads NVML
// and never runs nvidia-smi: it reads CUDA_VISIBLE_DEVICES,
// SLURM_STEP_GPUS and SLURM_GPUS_ON_NODE, the gres.conf and cgroup.conf
// that slurmd read, the device number of each device file, and the
// driver's /proc/driver/nvidia/gpus/<pci>/information files.
//
// A wrong GPU is worse than none: whenever a source is missing, malformed
// or disagrees with another, Find returns no UUIDs and one warning that
// says why. docs/spec.md (section 3, GPUs) is the contract, with the
// assumptions that cannot be checked without the driver.
//
// The package is on the per-task path of the SPANK plugin, so it imports
// neither os nor strings nor io/fs (cgo/deps_test.go).
package gpu
