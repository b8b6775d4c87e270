# Sourced on the GPU machine, from the repo root, as .pydeps/prep-py.sh
# (bench/pydeps-fetch puts it there beside the packages): unpacks Debian
# 12's Python 3.11 with numpy, pandas, dask and distributed into
# /opt/gspy, for bench/bench-dask.py (that machine's own Python, 3.12 with
# numpy 2.5, has none of them). Then run $GSPY, unquoted: python3.11 with
# its home and libraries set.
mkdir -p /opt/gspy
for d in .pydeps/*.deb; do dpkg -x "$d" /opt/gspy; done
L=/opt/gspy/usr/lib/x86_64-linux-gnu
GSPY="env PYTHONHOME=/opt/gspy/usr LD_LIBRARY_PATH=$L:$L/blas:$L/lapack:${LD_LIBRARY_PATH:-} /opt/gspy/usr/bin/python3.11"
export GSPY
