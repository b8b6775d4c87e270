# Sourced by the Python tests (tests/python/*.test): gs_pick_python finds an
# interpreter, gs_run_python runs a test program with the client on its
# path, a real gsortd ($GSORTD) and the suite's program cache.
SRCDIR=${top_srcdir:-.}
BUILDDIR=${top_builddir:-.}

# gs_pick_python IMPORTS PACKAGES: sets py to the first of
# $GSORT_TEST_PYTHON, python3 and /usr/bin/python3 (3.9+) that runs
# IMPORTS; with none prints a failing TAP plan naming the Debian PACKAGES
# and returns 1.
gs_pick_python() {
  py=
  for cand in ${GSORT_TEST_PYTHON:+"$GSORT_TEST_PYTHON"} python3 /usr/bin/python3; do
    if "$cand" -c "import sys; $1; sys.exit(sys.version_info < (3, 9))" >/dev/null 2>&1; then
      py=$cand
      break
    fi
  done
  if [ -z "$py" ]; then
    echo "1..1"
    echo "not ok 1 - a Python 3.9+ that can '$1': none of python3, /usr/bin/python3;" \
         "install $2 (tools/install-deps does)"
    return 1
  fi
  echo "# python: $py ($("$py" -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)'))"
}

# gs_run_python PROGRAM [ARGS]: exec $py on it. GSORT_NO_LOCAL=1: every
# sort goes to the daemon under test unless a check asks for the local path
# (Client(local=True)); otherwise the client's own timing would decide.
# GSORT_LIBRARY: the build's libgsort, whose host sort the client's local
# route uses (python/gsort/_native.py).
gs_run_python() {
  mkdir -p "$BUILDDIR/tests/pcache"
  lib="$(cd "$BUILDDIR/libgsort/.libs" && pwd)/libgsort.so.0"
  # A sanitized build's libgsort links ASan, which must be the first
  # library of a process that loads it: the interpreter (built without
  # ASan) gets it preloaded, with leak checks off (CPython frees little at
  # exit); the daemons it starts keep the run's own options and no preload
  # (tests/support/pytap.py, GSORT_TEST_DAEMON_ASAN_OPTIONS).
  asan=
  if [ "${GSORT_TEST_SANITIZED:-0}" = 1 ]; then
    asan=$(ldd "$lib" 2>/dev/null | awk '/libasan/ { print $3; exit }')
  fi
  if [ -n "$asan" ]; then
    GSORT_TEST_DAEMON_ASAN_OPTIONS=${ASAN_OPTIONS-}
    LD_PRELOAD="$asan${LD_PRELOAD:+:$LD_PRELOAD}"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export GSORT_TEST_DAEMON_ASAN_OPTIONS LD_PRELOAD ASAN_OPTIONS
  fi
  # No __pycache__ in the source tree (read-only under distcheck anyway).
  PYTHONDONTWRITEBYTECODE=1 \
  PYTHONPATH="$(cd "$SRCDIR/python" && pwd)${PYTHONPATH:+:$PYTHONPATH}" \
  GSORTD="$(cd "$BUILDDIR/daemon" && pwd)/gsortd" \
  GSORT_PCACHE="$(cd "$BUILDDIR/tests/pcache" && pwd)" \
  GSORT_NO_LOCAL=1 \
  GSORT_LIBRARY="$lib" \
    exec "$py" "$@"
}
