#!/usr/bin/env bash
# openmpi_prefix.sh - Debian's Open MPI unpacked into a folder instead of installed, for a machine
# that cannot reach a Debian mirror (a GPU machine of its own network, say): docs/MPI.md.
#
#   tools/openmpi_prefix.sh download DEBS     on a Debian 12 machine with a mirror: the .debs
#                                             (about 8 MiB) into the folder DEBS
#   tools/openmpi_prefix.sh unpack DEBS DIR   on the machine without: unpack those the system does
#                                             not have into DIR/root, and write DIR/env.sh
#   source DIR/env.sh                         mpirun, mpicc (the prefix's) first on PATH, and the
#                                             variables that make Open MPI and PMIx look in DIR
#   cmake -S . -B build -DMPI_C_COMPILER="$MPICC"   then build and run as usual
#
# The packages: Open MPI 4.1 and what it loads that a fresh Debian 12 lacks; the build needs only
# mpi.h, libmpi.so and the mpicc wrapper of libopenmpi-dev.
set -euo pipefail
pkgs=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 libhwloc-plugins
      libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1
      ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libpsm-infinipath1 libpsm2-2
      libxnvctrl0 libltdl7 libmunge2 libnuma1 ocl-icd-libopencl1)
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

case ${1:-} in
  download)
    [ $# -eq 2 ] || usage
    mkdir -p "$2"
    (cd "$2" && apt-get download "${pkgs[@]}")
    echo "openmpi_prefix: $(ls "$2"/*.deb | wc -l) packages in $2" ;;
  unpack)
    [ $# -eq 3 ] || usage
    debs=$2
    mkdir -p "$3/root"
    dir=$(cd "$3" && pwd)
    root=$dir/root
    n=0
    for f in "$debs"/*.deb; do
      p=$(dpkg-deb -f "$f" Package)
      # what the system has stays the system's (libc and the like are never shadowed)
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
      dpkg -x "$f" "$root"
      n=$((n + 1))
    done
    [ $n -gt 0 ] || { echo "openmpi_prefix: nothing to unpack (no .debs in $debs, or all installed)" >&2; exit 1; }
    usr=$root/usr
    arch=$(ls -d "$usr"/lib/*-linux-gnu | head -n1)
    # the links Debian's alternatives would make
    for t in mpirun mpiexec mpicc; do [ -e "$usr/bin/$t.openmpi" ] && ln -sf "$t.openmpi" "$usr/bin/$t"; done
    for so in "$usr"/lib/libpsm1/libpsm_infinipath.so.1.*; do [ -e "$so" ] && ln -sf "$(basename "$so")" "$usr/lib/libpsm1/libpsm_infinipath.so.1"; done
    cat >"$dir/env.sh" <<EOF
# source this: Open MPI unpacked in $root (tools/openmpi_prefix.sh)
export PATH="$usr/bin:\$PATH"
export LD_LIBRARY_PATH="$arch:$arch/openmpi/lib:$usr/lib/libpsm1\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$usr" PMIX_INSTALL_PREFIX="$arch/pmix2" HWLOC_PLUGINS_PATH="$arch/hwloc"
# Debian's defaults (its /etc/openmpi), and no warnings for transports this machine cannot load
export OMPI_MCA_mca_base_param_files="$root/etc/openmpi/openmpi-mca-params.conf"
export OMPI_MCA_mca_base_component_show_load_errors=0
export MPICC="$usr/bin/mpicc.openmpi"
EOF
    echo "openmpi_prefix: $n packages unpacked into $root; now:  source $dir/env.sh" ;;
  -h|--help) usage 0 ;;
  *) usage ;;
esac
