# bench/mpi_common.sh — sourced by the device scripts that run kevo under
# mpirun (device_multi.sh, device_mpi_loop.sh): $OUT (default /tmp/kevo-out,
# created), KEVO_HOME, Open MPI's consent to run as root, $MPIRUN (two ranks,
# a lost rank does not end the job, no CPU binding), the machine's GPUs, cores
# and MPI printed, and `elapsed T0`: seconds since T0 (a `date +%s.%N`).
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --enable-recovery -np 2 --bind-to none"
nvidia-smi -L
echo "cores $(nproc); $(mpirun --version | head -1)"
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$1" "$(date +%s.%N)"; }
