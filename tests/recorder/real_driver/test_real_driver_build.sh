#!/usr/bin/env bash
# test_real_driver_build.sh FETCH_DIR CC SOURCE_DIR SOURCES [INCLUDE_DIR...] — the build half
# of the real-driver tier: do the recorder's sources (SOURCES, a :-list of the files of
# recorder/ that libmemrec.so is built from: the CUPTI adapter, rec_inject.c, rec_core.c, the
# NVTX and API parts) and samples/cuda/cuda_sample.c compile
# against older CUDA toolkits than the one on the machine? The headers are Debian's
# (fetch.sh: nvidia-cuda-dev and libcupti-dev, CUDA 11.8 from bookworm and 12.4 from
# trixie), in place of /usr/local/cuda/include, with the project's own include folders and
# flags (-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror, CC as
# the build's: gcc here, clang in the sanitizer build), -fsyntax-only. INCLUDE_DIRs: the
# other folders the recorder's build adds (libunwind's).
#
# Seen (gcc 12 and clang 14; 2026-12-01): every source compiled against CUDA 11.8 and
# 12.4 (CUPTI 11.8 and 12.4) but rec_nvtx_mem.c, which included nvtx3/nvToolsExtMem.h (the
# NVTX 3.1 memory extension), a header neither toolkit has (CUDA 13's has it): with a CUDA
# 12.4 toolkit alone the recorder did not build. rec_nvtx_mem.c now builds without it
# (serving no memory extension), and every source must compile.
# cuda_sample.c compiles against 12.4 with its guard for cudaGetDriverEntryPointByVersion
# (CUDA 12.5); it needs CUDA 12 (the entry-point query result), so 11.8 is not tried.
set -u
fetch_dir=$1
cc=$2
src=$3
IFS=':' read -r -a sources <<<"$4"
shift 4
extra_includes=("$@")
name=test_real_driver_build
here=$(cd "$(dirname "$0")" && pwd)

bash "$here/fetch.sh" "$fetch_dir"
rc=$?
[ "$rc" = 0 ] || exit "$rc" # 77: fetch.sh said why
# shellcheck source=/dev/null
. "$fetch_dir/real_driver.env"
. "$here/../../cli_lib.sh"
cd "$T" || exit 1

flags=(-fsyntax-only -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror
    '-DGMT_VERSION="0"' '-DGMT_CUPTI_TOOLKIT_PATH=""')
project=(-I"$src/recorder" -I"$src/schema" -I"$src/common" -I"$src/model")
for d in "${extra_includes[@]}"; do
    [ -n "$d" ] && project+=(-I"$d")
done

# check_toolkit LABEL INCLUDE VERSION: the recorder against those headers.
check_toolkit() {
    local label=$1 inc=$2 version=$3 f base got
    got=$(printf '#include <cuda.h>\nCUDA_VERSION\n' | "$cc" -E -P -I"$inc" - 2>&1 | tail -n 1)
    [ "$got" = "$version" ] || { fail "$label: cuda.h says CUDA_VERSION $got, not $version"; return; }
    # The test is not vacuous: cuda.h and cupti.h come from the package, not the machine's toolkit.
    got=$("$cc" -M -D_GNU_SOURCE -I"$src/recorder" -I"$inc" "${project[@]}" "$src/recorder/rec_cupti.c" 2>&1 |
        tr ' \\' '\n\n' | grep -E '/(cuda|cupti)\.h$' | sort -u | tr '\n' ' ')
    [ "$got" = "$inc/cuda.h $inc/cupti.h " ] || fail "$label: rec_cupti.c takes its headers from: $got"
    local broken=()
    for f in "${sources[@]}"; do
        [ "${f#/}" = "$f" ] && f=$src/recorder/$f
        base=${f##*/}
        if ! "$cc" "${flags[@]}" -I"$src/recorder" -I"$inc" "${project[@]}" "$f" >"$label-$base.log" 2>&1; then
            broken+=("$base")
        fi
    done
    if [ "${#broken[@]}" != 0 ]; then
        fail "$label: the recorder sources that do not compile: '${broken[*]}':
$(for b in "${broken[@]}"; do grep -m 3 -E 'error' "$label-$b.log"; done)"
    else
        echo "$label: all ${#sources[@]} recorder sources compile" >&2
    fi
}

check_toolkit cuda11.8 "$RD_INCLUDE11" 11080
if [ -n "$RD_INCLUDE12" ]; then
    check_toolkit cuda12.4 "$RD_INCLUDE12" 12040
    # The sample is built with the toolkit as a system folder (samples/cuda/CMakeLists.txt).
    "$cc" "${flags[@]}" -isystem "$RD_INCLUDE12" "$src/samples/cuda/cuda_sample.c" >sample.log 2>&1 ||
        fail "cuda_sample.c does not compile against CUDA 12.4: $(grep -m 3 error sample.log)"
else
    echo "note: no CUDA 12 headers ($RD_NO12): only CUDA 11.8 checked" >&2
fi
finish
