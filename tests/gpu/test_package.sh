#!/usr/bin/env bash
# test_package.sh — the ctest gpu_package: tests/gpu/package.sh on this build makes a folder
# that will run on a GPU machine that has none of Debian's libraries (issue 26), checked here
# without a GPU:
#   - it is at most 64 MiB (what the device tool carries, with the working tree);
#   - every ELF file in it resolves each NEEDED library that is not glibc's, libstdc++'s,
#     libgcc_s's or CUDA's inside the package, through its own RUNPATH (readelf -d), and no
#     RUNPATH leads out of it (but cuda_sample's to the CUDA toolkit); each library dlopened by
#     name (package.txt's "dlopened") lies on libmemrec.so's RUNPATH;
#   - the loader agrees: `ldd` under an empty environment resolves every such library to the
#     package's own copy;
#   - with the system's copies of those libraries hidden (bind-mounted empty in a private
#     mount namespace, `unshare -rm`, where this machine allows one), memanalyze --help,
#     memanalyze on a synth trace (exact step count) and memrec --help run from the package,
#     and the package's memrec records tests/recorder's fake CUDA program on the fake driver
#     and stand-in CUPTI (where the build has them): its alloc and free, each with a native
#     stack (libunwind, dlopened by libmemrec.so) symbolized to fake_cuda_prog.c's main
#     (libdw), in a trace the package's memanalyze reads;
#   - run_all.sh --pretend-no-gpu from the package exits 77 with its SKIP line, writing nothing.
#
#   test_package.sh BUILD_DIR WORK_DIR [SANITIZE]
#
# Exit 0 pass, 1 fail, 77 skip: a tool package.sh needs is missing (patchelf: Debian package
# patchelf), the build has no recorder, or SANITIZE is ON (a sanitizer build is not what
# goes to a GPU machine).
set -u
build=${1:?usage: test_package.sh BUILD_DIR WORK_DIR [SANITIZE]}
work=${2:?usage: test_package.sh BUILD_DIR WORK_DIR [SANITIZE]}
sanitize=${3:-OFF}
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

case $sanitize in ON | on | 1 | TRUE | true) skip "a sanitizer build is not what is packaged for the GPU machine" ;; esac
[ -x "$build/recorder/memrec" ] || skip "no recorder in $build (built without CUPTI or libunwind)"
for t in readelf ldd du; do
    command -v $t >/dev/null 2>&1 || skip "$t is missing"
done
command -v patchelf >/dev/null 2>&1 || skip "patchelf is missing (Debian package patchelf; package.sh needs it)"

rm -rf "$work" && mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)
pkg=$work/pkg
bash "$here/package.sh" --no-install "$build" "$pkg" >"$work/package.log" 2>&1
rc=$?
cat "$work/package.log"
[ $rc -eq 77 ] && skip "package.sh: $(grep -m1 SKIP "$work/package.log")"
[ $rc -eq 0 ] || { echo "FAIL: package.sh exit $rc"; exit 1; }

# ---- size -------------------------------------------------------------------------------------
size=$(du -sb "$pkg" | cut -f1)
[ "$size" -le $((64 << 20)) ] && ok "size $((size / 1024)) KiB <= 64 MiB" ||
    fail "size $((size / 1024)) KiB > 64 MiB"

# ---- NEEDED, RUNPATH --------------------------------------------------------------------------
is_system() {
    case $1 in
    ld-linux*.so* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libutil.so* | \
        libresolv.so* | libmvec.so* | libstdc++.so* | libgcc_s.so*) return 0 ;;
    libcuda.so* | libcudart.so* | libcupti.so* | libnv*.so*) return 0 ;;
    esac
    return 1
}
elfs=()
while IFS= read -r -d '' f; do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = "177ELF" ] && elfs+=("$f")
done < <(find "$pkg" -type f -print0)
[ ${#elfs[@]} -ge 4 ] && ok "${#elfs[@]} ELF files" || fail "only ${#elfs[@]} ELF files in the package"
for f in "${elfs[@]}"; do
    rel=${f#$pkg/}
    dir=$(dirname "$f")
    runpath=$(readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    readelf -d "$f" | grep -q '(RPATH)' && fail "$rel has a DT_RPATH (package.sh sets RUNPATHs)"
    dirs=()
    IFS=: read -r -a parts <<<"$runpath"
    for p in ${parts[@]+"${parts[@]}"}; do
        d=${p//\$ORIGIN/$dir}
        case $p in
        \$ORIGIN*)
            d=$(cd "$d" 2>/dev/null && pwd) || { fail "$rel: RUNPATH $p is no folder"; continue; }
            case $d/ in "$pkg"/*) dirs+=("$d") ;; *) fail "$rel: RUNPATH $p leads out of the package" ;; esac
            ;;
        /usr/local/cuda*) [ "$rel" = bin/cuda_sample ] || fail "$rel: RUNPATH $p outside the package" ;;
        *) fail "$rel: RUNPATH $p outside the package" ;;
        esac
    done
    while read -r lib; do
        is_system "$lib" && continue
        found=""
        for d in ${dirs[@]+"${dirs[@]}"}; do
            [ -e "$d/$lib" ] && found=$d/$lib && break
        done
        [ -n "$found" ] || fail "$rel needs $lib: not on its RUNPATH (${runpath:-none}) in the package"
    done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
[ $fails -eq 0 ] && ok "every NEEDED library that is not the system's is on its file's RUNPATH in the package"
dlopened=$(sed -n 's/^dlopened: //p' "$pkg/package.txt")
[ -n "$dlopened" ] || fail "package.txt names no dlopened library (libunwind.so.8 at least)"
memrec_runpath=$(readelf -d "$pkg/bin/libmemrec.so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
for n in $dlopened; do
    [ "$memrec_runpath" = '$ORIGIN/../lib' ] && [ -e "$pkg/lib/$n" ] &&
        ok "$n (dlopened by libmemrec.so) is on its RUNPATH" ||
        fail "$n (dlopened by libmemrec.so): RUNPATH '$memrec_runpath', $(ls "$pkg/lib/$n" 2>&1)"
done

# ---- the loader's view ------------------------------------------------------------------------
before=$fails
for f in "${elfs[@]}"; do
    while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        is_system "$name" && continue
        case $(readlink -f "$path" 2>/dev/null)/ in
        "$pkg"/*) ;;
        *) fail "ldd ${f#$pkg/}: $name => $path, not the package's" ;;
        esac
    done < <(env -i PATH=/usr/bin:/bin ldd "$f" 2>&1)
done
[ $fails -eq $before ] && ok "ldd (empty environment) resolves every non-system library inside the package"

# ---- from the package, the system's copies hidden ---------------------------------------------
"$build/samples/synth/synth" --steps 7 --seed 3 -o "$work/synth.zst" >/dev/null 2>&1 ||
    fail "synth made no trace"
cat >"$work/run_pkg.sh" <<'EOF'
# run from the package: memanalyze --help, memanalyze on a trace, memrec --help
pkg=$1 trace=$2 cache=$3
env -i PATH=/usr/bin:/bin "$pkg/bin/memanalyze" --help >/dev/null || { echo "memanalyze --help failed"; exit 1; }
n=$(env -i PATH=/usr/bin:/bin GMT_CACHE_DIR="$cache" "$pkg/bin/memanalyze" sql "$trace" \
    "SELECT count(*) FROM steps" --csv | sed -n 2p)
[ "$n" = 7 ] || { echo "memanalyze sql: '$n' steps, want 7"; exit 1; }
env -i PATH=/usr/bin:/bin "$pkg/bin/memrec" --help >/dev/null || { echo "memrec --help failed"; exit 1; }
echo "ran from the package"
[ -n "${4:-}" ] || exit 0
# a recording: the fake driver and stand-in CUPTI on the search path, nothing else
fake=$4 prog=$5 rec=$(dirname "$trace")/fake.zst
env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$fake/driver13:$fake/cupti" "$pkg/bin/memrec" -o "$rec" \
    -- "$prog" alloc >"$rec.log" 2>&1 || { echo "memrec -- fake_cuda_prog alloc failed: $(cat "$rec.log")"; exit 1; }
q() { env -i PATH=/usr/bin:/bin GMT_CACHE_DIR="$cache" "$pkg/bin/memanalyze" sql "$rec" "$1" --csv | sed 1d | tr '\n' ' '; }
got=$(q "SELECT op, source, stack_id IS NOT NULL FROM events WHERE event_id > 0 ORDER BY event_id")
[ "$got" = "alloc,cupti,1 free,cupti,1 " ] || { echo "the fake program's trace: '$got' $(cat "$rec.log")"; exit 1; }
got=$(q "SELECT count(*) FROM events e JOIN stack_frames f ON f.stack_id = e.stack_id WHERE e.event_id = 1 AND f.name = 'main' AND f.file LIKE '%fake_cuda_prog.c'")
[ "$got" = "1 " ] || { echo "the alloc's stack has no symbolized main of fake_cuda_prog.c: $(q "SELECT f.depth, f.name, f.file FROM events e JOIN stack_frames f ON f.stack_id = e.stack_id WHERE e.event_id = 1")"; exit 1; }
echo "recorded a fake CUDA program with native stacks and symbols from the package"
EOF
hide=""
for l in "$pkg"/lib/*; do
    p=$(ldconfig -p 2>/dev/null | awk -v n="$(basename "$l")" '$1 == n && /x86-64/ {print $NF; exit}')
    [ -n "$p" ] && hide="$hide $(readlink -f "$p")"
done
fake=$build/tests/recorder/fake_cuda
args=("$work/run_pkg.sh" "$pkg" "$work/synth.zst" "$work/cache")
if [ -f "$fake/driver13/libcuda.so.1" ] && [ -f "$fake/cupti/libcupti.so.13" ] &&
    [ -x "$build/tests/recorder/fake_cuda_prog" ]; then
    args+=("$fake" "$build/tests/recorder/fake_cuda_prog")
else
    echo "note: the fake CUDA libraries are not built: no recording from the package checked"
fi
if unshare -rm true 2>/dev/null; then
    # shellcheck disable=SC2016
    out=$(unshare -rm sh -c 'for f in $1; do mount --bind /dev/null "$f" || exit 3; done
        shift; sh "$@"' hide "$hide" "${args[@]}" 2>&1)
    rc=$?
    [ $rc -eq 0 ] && ok "$(echo "$out" | tr '\n' ';' | sed 's/;$//'), with $(echo $hide | wc -w) system copies hidden" ||
        fail "from the package with the system copies hidden: exit $rc: $out"
else
    echo "note: no private mount namespace here (unshare -rm): the system copies stay visible"
    out=$(sh "${args[@]}" 2>&1) && ok "$(echo "$out" | tr '\n' ';' | sed 's/;$//')" ||
        fail "from the package: $out"
fi

# ---- run_all.sh from the package --------------------------------------------------------------
out=$(bash "$pkg/tests/gpu/run_all.sh" --pretend-no-gpu --package "$pkg" "$work/run_all_out" 2>&1)
rc=$?
[ $rc -eq 77 ] && [ "${out#SKIP: }" != "$out" ] && [ ! -e "$work/run_all_out" ] &&
    ok "run_all.sh --pretend-no-gpu from the package: 77, '$out'" ||
    fail "run_all.sh --pretend-no-gpu from the package: exit $rc, '$out', out dir $(ls -d "$work/run_all_out" 2>&1)"

[ $fails -eq 0 ] || { echo "$fails failures"; exit 1; }
rm -rf "$work"
exit 0
