#!/usr/bin/env bash
# package.sh — one folder that runs tests/gpu/run_all.sh on a GPU machine with nothing but
# what it carries (issue 26). The GPU machine is lent rarely, for minutes, with no network,
# and its image may lack Debian's libdw, libunwind, libsqlite3, libzstd, Cairo…: so the
# binaries built here travel with the shared libraries they need, their RUNPATHs pointing
# inside the folder ($ORIGIN), beside the scripts and the sample sources run_all.sh runs.
#
#   tests/gpu/package.sh [--no-install] BUILD_DIR PKG_DIR        (e.g. build-gpu build-gpu-pkg)
#
# PKG_DIR (replaced as a whole; build it somewhere ignored, build-*/ is, and at most 64 MiB
# with the working tree, the device tool's limit):
#   bin/      memrec, libmemrec.so, python/ (the startup hook, beside libmemrec.so where
#             memrec looks), memanalyze, synth (a trace to check memanalyze with), cuda_sample
#             (when the build has it: the CUDA toolkit was found) — RUNPATH $ORIGIN/../lib
#   lib/      every shared library they need that is not glibc, libstdc++/libgcc_s or CUDA's
#             (ldd's closure, plus libunwind.so.8, which libmemrec.so dlopens by name), debug
#             info stripped, RUNPATH $ORIGIN. CUDA and NVIDIA libraries come from the GPU
#             machine: the driver must match its kernel, CUPTI the driver.
#   tests/gpu/run_all.sh, test_cuda_samples.py, test_torch_train.py, check_torch_window.py,
#   check_modules.py,
#   samples/pytorch/train.py, samples/cuda/cuda_sample.c: the scripts, as in the tree
#   package.txt  where it was made from (commit, build, host), the newest glibc symbol
#             version any of its ELF files needs (run_all.sh compares it with the machine's),
#             the libraries dlopened by name, and every file with its size and origin
#
# Needs patchelf (Debian package patchelf), readelf and strip (binutils), ldd. Without
# patchelf it installs it (root, apt-get) unless --no-install (the ctest), which exits 77.
# Exit 0 made, 1 failed, 2 usage, 77 a needed tool is missing (--no-install).
set -u
usage="usage: package.sh [--no-install] BUILD_DIR PKG_DIR"
install=1
while [ $# -gt 0 ]; do
    case $1 in
    --no-install) install=0 && shift ;;
    -*) echo "$usage" >&2 && exit 2 ;;
    *) break ;;
    esac
done
[ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
build=$1
dest=$2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
die() { echo "package.sh: $*" >&2; exit 1; }
missing_tool() { echo "SKIP: package.sh needs $1"; exit 77; }

# ---- tools ------------------------------------------------------------------------------------
for t in readelf strip ldd; do
    command -v $t >/dev/null 2>&1 || missing_tool "$t (binutils / libc-bin)"
done
if ! command -v patchelf >/dev/null 2>&1; then
    if [ $install = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "package.sh: patchelf missing: installing the Debian package patchelf" >&2
        { apt-get install -y -qq patchelf || { apt-get update -qq && apt-get install -y -qq patchelf; }; } \
            >/dev/null 2>&1 || die "apt-get install patchelf failed"
    elif [ $install = 1 ]; then
        die "patchelf missing; run: sudo apt-get install -y patchelf"
    else
        missing_tool "patchelf (Debian package patchelf)"
    fi
fi

[ -d "$build" ] || die "no build folder $build"
build=$(cd "$build" && pwd)
for f in recorder/memrec recorder/libmemrec.so recorder/python/sitecustomize.py analyzer/memanalyze; do
    [ -e "$build/$f" ] || die "$build/$f missing (build first; the recorder needs CUPTI and libunwind)"
done

mkdir -p "$(dirname "$dest")" || die "cannot make $(dirname "$dest")"
dest_abs=$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")
tmp=$dest_abs.tmp.$$
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/tests/gpu" "$tmp/samples/pytorch" "$tmp/samples/cuda" ||
    die "cannot write $tmp"
manifest=$tmp/package.txt.files
: >"$manifest"
note() { printf '%s\t%s\n' "$1" "$2" >>"$manifest"; } # note PATH ORIGIN

# ---- the project's binaries -------------------------------------------------------------------
cp "$build/recorder/memrec" "$build/recorder/libmemrec.so" "$tmp/bin/" || die "copy failed"
note bin/memrec "$build/recorder/memrec"
note bin/libmemrec.so "$build/recorder/libmemrec.so"
mkdir -p "$tmp/bin/python"
for f in "$build"/recorder/python/*.py; do
    cp "$f" "$tmp/bin/python/" && note "bin/python/$(basename "$f")" "$f"
done
cp "$build/analyzer/memanalyze" "$tmp/bin/" && note bin/memanalyze "$build/analyzer/memanalyze"
if [ -x "$build/samples/synth/synth" ]; then
    cp "$build/samples/synth/synth" "$tmp/bin/" && note bin/synth "$build/samples/synth/synth"
fi
if [ -x "$build/samples/cuda/cuda_sample" ]; then
    cp "$build/samples/cuda/cuda_sample" "$tmp/bin/" &&
        note bin/cuda_sample "$build/samples/cuda/cuda_sample"
else
    echo "package.sh: no $build/samples/cuda/cuda_sample (the build found no CUDA toolkit):" \
        "run_all.sh will skip the CUDA samples" >&2
fi

# ---- the scripts ------------------------------------------------------------------------------
for f in run_all.sh test_cuda_samples.py test_torch_train.py check_torch_window.py check_modules.py \
    README.md; do
    [ -e "$here/$f" ] || continue
    cp "$here/$f" "$tmp/tests/gpu/" && note "tests/gpu/$f" "$here/$f"
done
cp "$src/samples/pytorch/train.py" "$tmp/samples/pytorch/" &&
    note samples/pytorch/train.py "$src/samples/pytorch/train.py"
cp "$src/samples/cuda/cuda_sample.c" "$tmp/samples/cuda/" &&
    note samples/cuda/cuda_sample.c "$src/samples/cuda/cuda_sample.c"

# ---- the shared libraries ---------------------------------------------------------------------
# What the GPU machine must give itself: glibc (the process's own, which an injected library
# must share), libstdc++/libgcc_s (PyTorch's), CUDA and NVIDIA's (the driver's, the toolkit's).
is_system() {
    case $1 in
    linux-vdso.so* | ld-linux*.so* | libc.so* | libm.so* | libdl.so* | libpthread.so* | \
        librt.so* | libutil.so* | libresolv.so* | libnsl.so* | libanl.so* | libmvec.so* | \
        libBrokenLocale.so* | libthread_db.so* | libnss_*.so* | libstdc++.so* | libgcc_s.so*)
        return 0 ;;
    libcuda.so* | libcudart.so* | libcupti.so* | libnv*.so* | libcublas*.so* | libcufft*.so* | \
        libcurand.so* | libcusolver*.so* | libcusparse*.so* | libnccl.so* | libcudnn*.so*)
        return 0 ;;
    esac
    return 1
}
# Libraries loaded with dlopen by name, which ldd cannot see: libmemrec.so's libunwind.
dlopened="libunwind.so.8"

# find_lib SONAME: the path the loader here would use
find_lib() {
    ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64/ {print $NF; exit}'
}
queue=()
for f in "$tmp"/bin/memrec "$tmp"/bin/libmemrec.so "$tmp"/bin/memanalyze "$tmp"/bin/synth \
    "$tmp"/bin/cuda_sample; do
    [ -e "$f" ] && queue+=("$f")
done
for n in $dlopened; do
    p=$(find_lib "$n")
    [ -n "$p" ] || die "$n (dlopened by libmemrec.so) is not installed here (libunwind-dev's runtime)"
    queue+=("$p")
done
copied=" "
while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}
    queue=("${queue[@]:1}")
    # ldd prints "name => path (addr)" for each library of the closure
    while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        is_system "$name" && continue
        case "$copied" in *" $name "*) continue ;; esac
        [ "$path" != "not" ] && [ -e "$path" ] || die "$f needs $name, which is not found here"
        cp -L "$path" "$tmp/lib/$name" || die "cannot copy $path"
        chmod u+w "$tmp/lib/$name"
        note "lib/$name" "$(readlink -f "$path")"
        copied="$copied$name "
        queue+=("$tmp/lib/$name")
    done < <(env -i PATH=/usr/bin:/bin ldd "$f" 2>/dev/null)
done
for n in $dlopened; do
    case "$copied" in
    *" $n "*) ;;
    *)
        p=$(find_lib "$n")
        cp -L "$p" "$tmp/lib/$n" && chmod u+w "$tmp/lib/$n" && note "lib/$n" "$(readlink -f "$p")"
        copied="$copied$n "
        ;;
    esac
done

# ---- RUNPATHs and size ------------------------------------------------------------------------
for f in "$tmp"/lib/*; do
    [ -e "$f" ] || continue
    strip --strip-debug "$f" 2>/dev/null || die "strip $f failed"
    patchelf --set-rpath '$ORIGIN' "$f" || die "patchelf $f failed"
done
for f in memrec libmemrec.so memanalyze synth; do
    [ -e "$tmp/bin/$f" ] || continue
    patchelf --set-rpath '$ORIGIN/../lib' "$tmp/bin/$f" || die "patchelf $f failed"
done
if [ -e "$tmp/bin/cuda_sample" ]; then
    # libcudart is the GPU machine's toolkit's (where the build found it, or the usual places)
    rp=$(patchelf --print-rpath "$tmp/bin/cuda_sample")
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
        case :$rp: in *:$d:*) ;; *) rp=${rp:+$rp:}$d ;; esac
    done
    patchelf --set-rpath "$rp" "$tmp/bin/cuda_sample" || die "patchelf cuda_sample failed"
fi

# ---- the manifest -----------------------------------------------------------------------------
glibc=$(for f in "$tmp"/bin/* "$tmp"/lib/*; do
    [ -f "$f" ] && readelf -V "$f" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*'
done | sed 's/GLIBC_//' | sort -Vu | tail -1)
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$src" status --porcelain 2>/dev/null | head -1)" ] && commit="$commit+changes"
{
    echo "gpumemtrace GPU package (tests/gpu/package.sh; run: bash tests/gpu/run_all.sh --package PKG OUT)"
    echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"))"
    echo "source: $src at $commit"
    echo "build: $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null))"
    echo "glibc_needed: $glibc"
    echo "dlopened: $dlopened"
    echo "files:"
    while IFS=$'\t' read -r p o; do
        printf '  %-40s %9s  %s\n' "$p" "$(stat -c %s "$tmp/$p")" "$o"
    done <"$manifest"
} >"$tmp/package.txt"
rm -f "$manifest"

rm -rf "$dest_abs" && mv "$tmp" "$dest_abs" || die "cannot move the package to $dest_abs"
trap - EXIT
size=$(du -sb "$dest_abs" | cut -f1)
echo "package: $dest_abs, $((size / 1024)) KiB, $(ls "$dest_abs/lib" | wc -l) libraries, glibc >= $glibc"
if [ "$size" -gt $((64 << 20)) ]; then
    echo "package.sh: the package is over 64 MiB: the device tool cannot carry it" >&2
    exit 1
fi
exit 0
