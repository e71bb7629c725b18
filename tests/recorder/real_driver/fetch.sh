#!/usr/bin/env bash
# fetch.sh DIR — gets the real-driver tier's NVIDIA packages from Debian's
# non-free section into DIR (a build folder) without touching the machine's
# apt setup, and writes DIR/real_driver.env for the tests to source. Nothing
# is installed: the packages are unpacked with dpkg-deb -x, and the tests
# point LD_LIBRARY_PATH (or -I) at them.
#
# apt runs with a private sources list, lists, cache, no status file and no
# preferences (-o Dir::…), so the machine's /etc/apt and /var/lib/apt stay as
# they were; its apt.conf.d (a proxy, say) still applies. The archive is the
# machine's own Debian archive, read from its apt sources (debfetch.py
# archive): no mirror is named here. Its `non-free` component gives:
#
#   bookworm  libcuda1 (R535, 535.x: CUDA 12.2), libcupti11.8, libcupti-dev
#             (CUPTI 11.8 headers), nvidia-cuda-dev's headers (CUDA 11.8)
#   trixie    libcupti12, libcupti-dev (CUPTI 12.4), nvidia-cuda-dev's
#             headers (CUDA 12.4) — optional: without them the CUDA 12
#             parts of the tests skip, saying why
#
# libcuda1 is all the real driver needs here: without a GPU, cuInit loads the
# injection and returns CUDA_ERROR_NO_DEVICE without opening any other NVIDIA
# library (seen with LD_DEBUG=files: libnvidia-ptxjitcompiler1, which
# libcuda1 depends on, is not loaded, and cuInit gives the same results
# without it). nvidia-cuda-dev is too large to download (774 MB, 934 MB): its
# headers, the first ~1 MB of the package, are streamed (debfetch.py headers).
# About 38 MB are downloaded in all, in a few seconds (what the tests do not
# use is deleted: ~75 MB stay); a second run finds DIR/real_driver.env and
# downloads nothing. Concurrent runs (ctest -j) wait
# for each other (flock).
#
# Exit 0: fetched (or cached). Exit 77 with one line saying why when the
# packages cannot be had (no network, no such package, no apt).
set -u
dir=${1:?usage: fetch.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
skip() {
    echo "SKIP: real-driver tier: $*" >&2
    exit 77
}
for tool in apt-get apt-cache apt-config dpkg dpkg-deb python3 flock; do
    command -v "$tool" >/dev/null || skip "no $tool on this machine"
done
mkdir -p "$dir" || skip "cannot create $dir"
dir=$(cd "$dir" && pwd)
exec 9>"$dir/.lock"
flock 9
env_file=$dir/real_driver.env
[ -f "$env_file" ] && exit 0

# ---- the machine's Debian archive ------------------------------------------------
eval "$(apt-config shell sourcelist Dir::Etc::sourcelist/f sourceparts Dir::Etc::sourceparts/d)"
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || skip "not a Debian system (no VERSION_CODENAME in /etc/os-release)"
found=$(python3 "$here/debfetch.py" archive "${sourcelist:-/etc/apt/sources.list}" \
    "${sourceparts:-/etc/apt/sources.list.d/}" "$codename" 2>&1) || skip "$found"
read -r uri keyring <<<"$found"
arch=$(dpkg --print-architecture)

apt=$dir/apt
rm -rf "$apt" "$dir/root-bookworm" "$dir/root-trixie"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$dir/debs" || exit 1
opts="arch=$arch target=Packages"
[ "$keyring" != - ] && opts="$opts signed-by=$keyring"
{
    echo "deb [$opts] $uri bookworm non-free"
    echo "deb [$opts] $uri trixie non-free"
} >"$apt/sources.list"
APT=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
    -o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$apt/parts"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null
    -o Acquire::Languages=none -o Acquire::Retries=1 -o Acquire::http::Timeout=30
    -o Acquire::https::Timeout=30)
[ "$(id -u)" = 0 ] && APT+=(-o APT::Sandbox::User=root) # the files are root's, not _apt's

apt-get "${APT[@]}" update >"$apt/update.log" 2>&1 # trixie may fail alone: checked below

# version SUITE PACKAGE: the package's version in that suite, "" when none.
version() {
    apt-cache "${APT[@]}" madison "$2" 2>/dev/null |
        awk -F' *[|] *' -v s="$1/non-free" '$3 ~ (" " s " ") {print $2; exit}'
}
# get SUITE PACKAGE...: downloads them (checked against the signed index) and
# unpacks them into root-SUITE; records "package version bytes" in packages.SUITE.
get() {
    local suite=$1 pkg v deb
    shift
    for pkg in "$@"; do
        v=$(version "$suite" "$pkg")
        [ -n "$v" ] || { echo "$pkg is not in $uri $suite/non-free ($arch)"; return 1; }
        deb=$(cd "$dir/debs" && apt-get "${APT[@]}" --print-uris download "$pkg=$v" 2>/dev/null |
            awk '/^\x27/ {print $2; exit}')
        [ -n "$deb" ] || { echo "$pkg $v: apt-get gives no URI"; return 1; }
        if [ ! -f "$dir/debs/$deb" ]; then
            (cd "$dir/debs" && apt-get "${APT[@]}" download "$pkg=$v") >"$apt/download.log" 2>&1 ||
                { echo "$pkg $v: download failed: $(grep -E '^(E|Err):' "$apt/download.log" | head -n 1)"; return 1; }
        fi
        dpkg-deb -x "$dir/debs/$deb" "$dir/root-$suite" || { echo "$pkg: dpkg-deb -x failed"; return 1; }
        echo "$pkg $v $(stat -c %s "$dir/debs/$deb")" >>"$dir/packages.$suite"
        rm -f "$dir/debs/$deb"
    done
    # What the tests never use (static libraries, CUPTI's profiler hosts, docs):
    # 150 MB less in the build folder.
    find "$dir/root-$suite" \( -name '*.a' -o -name 'libnvperf_*' -o -name 'libpcsamplingutil*' \
        -o -name 'libcheckpoint*' \) -delete
    rm -rf "$dir/root-$suite/usr/share"
}
# headers SUITE: nvidia-cuda-dev's /usr/include into root-SUITE, streamed (see the top).
headers() {
    local suite=$1 v line
    v=$(version "$suite" nvidia-cuda-dev)
    [ -n "$v" ] || { echo "nvidia-cuda-dev is not in $uri $suite/non-free"; return 1; }
    line=$(cd "$dir/debs" && apt-get "${APT[@]}" --print-uris download "nvidia-cuda-dev=$v" 2>/dev/null |
        grep "^'")
    local f # 'URI' FILE SIZE HASH
    read -r -a f <<<"$line"
    [ "${#f[@]}" -ge 3 ] || { echo "nvidia-cuda-dev $v: apt-get gives no URI"; return 1; }
    python3 "$here/debfetch.py" headers "${f[0]//\'/}" "${f[2]}" "$dir/root-$suite" 2>&1 || return 1
    echo "nvidia-cuda-dev $v ${f[2]} (headers only)" >>"$dir/packages.$suite"
}
# why SUITE: why nothing could be had from SUITE.
index_why() {
    if ls "$apt/lists/"*"_$1_non-free_"*Packages* >/dev/null 2>&1; then
        echo "$2"
    else
        echo "cannot read $uri $1/non-free ($(grep -E '^(E|W): ' "$apt/update.log" | grep "/$1/" |
            head -n 1 | sed 's/^[EW]: //'))"
    fi
}

rm -f "$dir/packages.bookworm" "$dir/packages.trixie"
why=$(get bookworm libcuda1 libcupti11.8 libcupti-dev && headers bookworm) ||
    skip "$(index_why bookworm "$why")"
why12=$(get trixie libcupti12 libcupti-dev && headers trixie) || {
    why12=$(index_why trixie "$why12")
    rm -rf "$dir/root-trixie" "$dir/packages.trixie"
}

# ---- what the tests need ---------------------------------------------------------
libdir() { # the folder of file NAME under root-SUITE
    find "$dir/root-$1" -name "$2" \( -type f -o -type l \) -printf '%h\n' 2>/dev/null | head -n 1
}
driver=$(libdir bookworm libcuda.so.1)
cupti11=$(libdir bookworm libcupti.so.11.8)
[ -n "$driver" ] && [ -n "$cupti11" ] || skip "libcuda.so.1 or libcupti.so.11.8 is not in the packages"
cupti12=""
[ -d "$dir/root-trixie" ] && cupti12=$(libdir trixie libcupti.so.12)
{
    echo "# written by fetch.sh from $uri; remove this file to fetch again"
    echo "RD_DRIVER_DIR='$driver'"
    echo "RD_CUPTI11='$cupti11/libcupti.so.11.8'"
    echo "RD_INCLUDE11='$dir/root-bookworm/usr/include'"
    echo "RD_PACKAGES11='$(tr '\n' ';' <"$dir/packages.bookworm")'"
    if [ -n "$cupti12" ]; then
        echo "RD_CUPTI12_DIR='$cupti12'"
        echo "RD_INCLUDE12='$dir/root-trixie/usr/include'"
        echo "RD_PACKAGES12='$(tr '\n' ';' <"$dir/packages.trixie")'"
        echo "RD_NO12=''"
    else
        echo "RD_CUPTI12_DIR=''"
        echo "RD_INCLUDE12=''"
        echo "RD_PACKAGES12=''"
        echo "RD_NO12='${why12//\'/}'"
    fi
} >"$env_file.new" && mv "$env_file.new" "$env_file"
echo "fetch.sh: $(tr '\n' ';' <"$dir/packages.bookworm")${cupti12:+ $(tr '\n' ';' <"$dir/packages.trixie")}" >&2
exit 0
