#!/usr/bin/env bash
# test_export_perfetto.sh — `memanalyze export --to perfetto` and `--to chrome-json` (issue 30)
# against known answers. Inputs: synth runs (two devices with steps, NVTX stages and a leak;
# one that runs out of memory) and every shared PyTorch snapshot in DATA. The Perfetto file's
# deflated bundles (compressed_packets, each under 512 KB) are inflated (python's zlib) and the
# file and its packets decoded by a real protobuf parser (protoc --decode against
# tests/perfetto/perfetto_subset.proto, upstream's field numbers; skipped, saying so, when protoc
# is missing); every field must be one the subset names. Then, per device: three counter tracks
# (UNIT_SIZE_BYTES), whose values (deltas when is_incremental, summed in file order) end at
# report --json's end state (allocated, reserved) and whose greatest allocated value is the
# peak; as many allocation instants as the allocations view has device allocations (alloc_id
# >= 1), their callstack weights summing to those allocations' bytes; as many OOM instants as
# OOM events, with their facts; one slice per step and per NVTX range, each begun and ended on
# its track, never two open on one track; the callstacks interned once each (one per distinct
# stack of those allocations), each before its first use; the first packet clearing the
# incremental state. Categories: a counter track "allocated: CATEGORY" per (device, category)
# that has bytes (allocations.category, which `sql` adds to the cache after the exports ran)
# when the analyzer knows any (a block whose category is not unknown), none when it knows none
# (the one-moment snapshots); after every counter event their sum is the device's allocated, and
# at the device's peak (its first sample at peak_allocated_bytes) they are report --json's
# categories_at_peak. The Chrome JSON (json.load) gives the same answers (its samples grouped
# by process and time). A database given as input without block_categories (one of an older
# memanalyze: import -o's with them deleted) exports the same files, its categories swept in
# memory. Options the timeline formats do not take exit 2, one line, no file; so does
# chrome-json above its limit.
# usage: test_export_perfetto.sh SYNTH MEMANALYZE PROTO_DIR [DATA]
set -u
SYNTH=$1 MA=$2 PROTO=$3 DATA=${4:-}
name=test_export_perfetto
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" --steps 6 --devices 2 --stages --leak 1048576 -o "$T/two.zst" 2>/dev/null || fail synth
"$SYNTH" --steps 4 --device-memory 600000000 -o "$T/oom.zst" 2>/dev/null || fail "synth oom"
inputs=("$T/two.zst" "$T/oom.zst")
if [ -n "$DATA" ] && [ -d "$DATA" ]; then
    for p in "$DATA"/*.pickle; do
        [ -e "$p" ] && inputs+=("$p")
    done
fi
have_protoc=1
command -v protoc >/dev/null || {
    have_protoc=0
    echo "$name: protoc not found (Debian's protobuf-compiler): the Perfetto files are not decoded"
}

n=0
for in in "${inputs[@]}"; do
    n=$((n + 1))
    "$MA" report "$in" --json >"$T/r$n.json" || {
        fail "$in: report: exit $?"
        continue
    }
    "$MA" sql "$in" --json "SELECT (SELECT count(*) FROM steps) AS steps,
        (SELECT count(*) FROM ranges) AS ranges,
        (SELECT count(*) FROM events WHERE op = 'oom' AND event_id >= 1) AS ooms,
        (SELECT count(*) FROM allocations WHERE kind = 'device' AND alloc_id >= 1) AS allocs,
        (SELECT coalesce(sum(size), 0) FROM allocations WHERE kind = 'device' AND alloc_id >= 1)
          AS alloc_bytes,
        (SELECT count(DISTINCT coalesce(alloc_stack_id, 0)) FROM allocations
          WHERE kind = 'device' AND alloc_id >= 1) AS stacks,
        min(0, coalesce((SELECT min(ts_ns) FROM markers), 0),
            coalesce((SELECT min(begin_ts_ns) FROM steps), 0)) AS earliest,
        coalesce((SELECT value FROM meta WHERE key = 'timestamps'), 1) AS timed,
        (SELECT json_group_array(begin_ts_ns) FROM steps) AS step_begins,
        (SELECT json_group_array(alloc_ts_ns) FROM (SELECT alloc_ts_ns FROM allocations
          WHERE kind = 'device' AND alloc_id >= 1 ORDER BY alloc_id)) AS alloc_ts,
        (SELECT count(*) FROM event_rows AS a JOIN event_rows AS b ON b.event_id = a.event_id + 1
          WHERE a.event_id >= 1 AND b.ts_ns < a.ts_ns) AS out_of_order" >"$T/q$n.json" ||
        fail "$in: sql: exit $?"
    "$MA" export "$in" --to perfetto -o "$T/p$n.perfetto-trace" >"$T/p$n.txt" 2>&1 ||
        fail "$in: export --to perfetto: $(cat "$T/p$n.txt")"
    grep -q "^wrote $T/p$n.perfetto-trace: a Perfetto trace of [0-9]* devices\?, " "$T/p$n.txt" ||
        fail "$in: export's line: $(cat "$T/p$n.txt")"
    "$MA" export "$in" --to chrome-json -o "$T/c$n.json" >"$T/c$n.txt" 2>&1 ||
        fail "$in: export --to chrome-json: $(cat "$T/c$n.txt")"
    # after the exports (which add block_categories to the cache themselves): what they knew
    "$MA" sql "$in" --json "SELECT (SELECT count(*) FROM allocations WHERE category IS NOT NULL
          AND category <> 'unknown') AS known,
        (SELECT json_group_array(DISTINCT device || ':' || category) FROM allocations
          WHERE kind = 'device' AND size > 0) AS with_bytes" >"$T/k$n.json" ||
        fail "$in: sql (categories): exit $?"
    # the file's packets with each deflated bundle (compressed_packets) inflated in its place
    python3 - "$T/p$n.perfetto-trace" "$T/p$n.plain" <<'PY' || fail "$in: the bundles"
import sys, zlib
data, out = open(sys.argv[1], "rb").read(), bytearray()
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        wire = key & 7
        if wire == 0:
            _, j = varint(b, i); yield key >> 3, b[i:j]; i = j
        elif wire == 1:
            yield key >> 3, b[i:i + 8]; i += 8
        elif wire == 2:
            n, i = varint(b, i); yield key >> 3, b[i:i + n]; i += n
        else:
            sys.exit(f"wire type {wire}")
bundles = 0
for f, packet in fields(data):
    assert f == 1, f"Trace field {f}"
    inner = [v for g, v in fields(packet) if g == 50]
    if inner:
        assert len(packet) < 512 * 1024, "a bundle over 512 KB"
        out += zlib.decompress(inner[0]); bundles += 1
    else:
        n, enc = len(packet), bytearray()
        while True:
            enc.append((n & 0x7f) | (0x80 if n > 0x7f else 0)); n >>= 7
            if not n:
                break
        out += b"\x0a" + bytes(enc) + packet
open(sys.argv[2], "wb").write(out)
PY
    if [ "$have_protoc" = 1 ]; then
        protoc --decode=perfetto.protos.Trace -I "$PROTO" perfetto_subset.proto \
            <"$T/p$n.perfetto-trace" >/dev/null 2>"$T/p$n.protoc" ||
            fail "$in: protoc --decode of the file: $(head -3 "$T/p$n.protoc")"
        protoc --decode=perfetto.protos.Trace -I "$PROTO" perfetto_subset.proto \
            <"$T/p$n.plain" >"$T/p$n.decoded" 2>"$T/p$n.protoc" ||
            fail "$in: protoc --decode of the packets: $(head -3 "$T/p$n.protoc")"
    fi
    python3 - "$T" "$n" "$in" "$have_protoc" <<'PY' || fail "$in: the exports' answers"
import json, re, sys
t, n, src, have_protoc = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
report = json.load(open(f"{t}/r{n}.json"))
q = json.load(open(f"{t}/q{n}.json"))
q = q[0] if isinstance(q, list) else q["rows"][0]
devs = {d["device"]: d for d in report["devices"]}
want_ooms = q["ooms"]
bad = []
k = json.load(open(f"{t}/k{n}.json"))
k = k[0] if isinstance(k, list) else k["rows"][0]
known = k["known"] > 0
CAT = "allocated: "
want_cats = sorted((int(x.split(":")[0]), CAT + x.split(":", 1)[1])
                   for x in json.loads(k["with_bytes"]) if known)

class Categories:
    """Each device's category counters beside its allocated: the sum checked after every
    counter event, the categories kept at the first sample at the device's peak."""
    def __init__(self, kind):
        self.kind, self.cur, self.at_peak, self.sums, self.wrong = kind, {}, {}, 0, []

    def value(self, d, name, v):
        self.cur[(d, name)] = v

    def event_done(self, d):
        cats = {c[len(CAT):]: v for (e, c), v in self.cur.items() if e == d and c.startswith(CAT)}
        alloc = self.cur.get((d, "allocated"))
        if not known or alloc is None:
            return
        self.sums += 1
        if sum(cats.values()) != alloc and len(self.wrong) < 3:
            self.wrong.append(f"device {d}: categories {sum(cats.values())} != allocated {alloc}")
        if d not in self.at_peak and d in devs and alloc == devs[d]["peak_allocated_bytes"]:
            self.at_peak[d] = {c: v for c, v in cats.items() if v}

    def answers(self, tracks):
        kind = self.kind
        check(f"{kind}: category tracks", sorted(tracks), want_cats)
        for w in self.wrong:
            bad.append(f"{kind}: {w}")
        if known:
            check(f"{kind}: category sums checked", self.sums > 0, True)
        for d, r in devs.items():
            want = {c: v for c, v in (r.get("categories_at_peak") or {}).items() if v}
            if known and r["peak_allocated_bytes"] > 0:
                check(f"{kind}: device {d} categories at the peak", self.at_peak.get(d), want)

def check(what, got, want):
    if got == want:
        return
    if isinstance(got, list) and isinstance(want, list):  # the first difference, not the lists
        i = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
        bad.append(f"{what}: {len(got)} values, want {len(want)}; at [{i}] "
                   f"{got[i] if i < len(got) else None!r}, want {want[i] if i < len(want) else None!r}")
    else:
        bad.append(f"{what}: {got!r}, want {want!r}")

def parse(path):
    """protoc's text format as nested lists of (key, value or list)."""
    root, stack = [], []
    cur = root
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        if line == "}":
            cur = stack.pop()
            continue
        if line.endswith("{"):
            child = []
            cur.append((line[:-1].strip(), child))
            stack.append(cur)
            cur = child
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*): (.*)$", line)
        if not m:
            bad.append(f"a field the subset does not name: {line}")
            continue
        v = m.group(2)
        if v.startswith('"'):
            v = bytes(v[1:-1], "utf-8").decode("unicode_escape")
        elif re.match(r"^-?[0-9]+$", v):
            v = int(v)
        elif re.match(r"^-?[0-9.e+]+$", v):
            v = float(v)
        cur.append((m.group(1), v))
    return root

def get(msg, key, dflt=None):
    for k, v in msg:
        if k == key:
            return v
    return dflt

def all_of(msg, key):
    return [v for k, v in msg if k == key]

def answers(kind, counter_tracks, last, peak, allocs, weight, ooms, slices):
    counter_tracks = [k for k in counter_tracks if not k[1].startswith(CAT)]
    check(f"{kind}: counter tracks", sorted(counter_tracks), sorted(
        (d, c) for d in devs for c in ("allocated", "reserved", "requested")))
    for d, r in devs.items():
        check(f"{kind}: device {d} allocated at the end", last.get((d, "allocated")),
              r["end_allocated_bytes"])
        check(f"{kind}: device {d} reserved at the end", last.get((d, "reserved")),
              r["end_reserved_bytes"])
        check(f"{kind}: device {d} greatest allocated", peak.get(d), r["peak_allocated_bytes"])
    check(f"{kind}: allocation instants", allocs, q["allocs"])
    check(f"{kind}: allocated bytes", weight, q["alloc_bytes"])
    check(f"{kind}: OOM instants", ooms, want_ooms)
    check(f"{kind}: slices", slices, q["steps"] + q["ranges"])

if have_protoc:
    trace = parse(f"{t}/p{n}.decoded")
    packets = all_of(trace, "packet")
    check("first packet's flags", get(packets[0], "sequence_flags"), 1)
    tracks, procs = {}, {}
    for p in packets:
        td = get(p, "track_descriptor")
        if td is not None:
            uuid = get(td, "uuid")
            if uuid in tracks or uuid in procs:
                bad.append(f"track uuid {uuid} twice")
            pr = get(td, "process")
            if pr is not None:
                procs[uuid] = get(pr, "process_name")
            else:
                tracks[uuid] = (get(td, "parent_uuid"), get(td, "name"), get(td, "counter"))
    dev_of = {}
    for uuid, name in procs.items():
        m = re.search(r"GPU (\d+)", name or "")
        if m:
            dev_of[uuid] = int(m.group(1))
    by_uuid, incremental, total = {}, set(), {}
    for uuid, (parent, name, counter) in tracks.items():
        if counter is not None:
            check(f"track {name} unit", get(counter, "unit"), "UNIT_SIZE_BYTES")
            by_uuid[uuid] = (dev_of.get(parent), name)
            if get(counter, "is_incremental") == "true":
                incremental.add(by_uuid[uuid])
    last, peak = {}, {}
    stacks, used = set(), set()
    allocs = ooms = 0
    weight = 0.0
    open_slices, slices = {}, 0
    # The times: the events' sequence (1) counts microseconds on its own incremental clock
    # (64: defined by the first packet's clock snapshot, made the default by its
    # trace_packet_defaults), the slices' sequence (2) nanoseconds on the trace clock.
    first = packets[0]
    clocks = {get(c, "clock_id"): c for c in all_of(get(first, "clock_snapshot") or [], "clocks")}
    check("the events' clock", sorted(clocks), [6, 64])
    if 64 in clocks:
        check("the events' clock is incremental", get(clocks[64], "is_incremental"), "true")
        check("the events' clock counts microseconds", get(clocks[64], "unit_multiplier_ns"), 1000)
    check("the events' default clock",
          get(get(first, "trace_packet_defaults") or [], "timestamp_clock_id"), 64)
    check("the first packet's own clock", get(first, "timestamp_clock_id"), 6)
    pcats = Categories("perfetto")
    clock_us = 0
    event_times, alloc_us = [], []
    slice_begins = []
    for p in packets[1:]:
        seq = get(p, "trusted_packet_sequence_id")
        if get(p, "track_descriptor") is None:
            check("sequence id", seq, 1 if get(p, "track_event") is None or
                  get(get(p, "track_event"), "type") not in ("TYPE_SLICE_BEGIN", "TYPE_SLICE_END")
                  else 2)
        if seq == 1 and get(p, "timestamp") is not None:
            clock_us += get(p, "timestamp")
            event_times.append(clock_us)
        p.append(("abs_ns", clock_us * 1000 if seq == 1 else get(p, "timestamp", 0)))
    for p in packets:
        idata = get(p, "interned_data")
        if idata is not None:
            for cs in all_of(idata, "callstacks"):
                iid = get(cs, "iid")
                if iid in stacks:
                    bad.append(f"callstack {iid} interned twice")
                stacks.add(iid)
        te = get(p, "track_event")
        if te is None:
            continue
        ts = get(p, "abs_ns", 0)
        typ = get(te, "type")
        values = []
        if get(te, "counter_value") is not None:
            values.append((get(te, "track_uuid"), get(te, "counter_value")))
        values += zip(all_of(te, "extra_counter_track_uuids"), all_of(te, "extra_counter_values"))
        touched = set()
        for uuid, v in values:
            key = by_uuid.get(uuid)
            if key is None:
                bad.append(f"a counter value on track {uuid}, no counter track")
                continue
            if key in incremental:  # a delta: the value is the sum so far (file order)
                v = total[key] = total.get(key, 0) + v
            prev = last.get(key)
            if prev is None or prev[0] <= ts:
                last[key] = (ts, v)
            if key[1] == "allocated":
                peak[key[0]] = max(peak.get(key[0], 0), v)
            pcats.value(key[0], key[1], v)
            touched.add(key[0])
        for d in touched:
            pcats.event_done(d)
        if typ == "TYPE_INSTANT":
            name = tracks.get(get(te, "track_uuid"), (None, None))[1]
            if name == "allocations":
                allocs += 1
                alloc_us.append(ts // 1000)
                weight += get(te, "callstack_weight", 0)
                cs = get(te, "callstack_iid")
                if cs not in stacks:
                    bad.append(f"callstack {cs} used before it is interned")
                used.add(cs)
            elif name == "OOMs":
                ooms += 1
                names = [get(a, "name_iid") for a in all_of(te, "debug_annotations")]
                if names[:3] != [1, 2, 3]:
                    bad.append(f"an OOM's annotations: {names}")
        elif typ == "TYPE_SLICE_BEGIN":
            u = get(te, "track_uuid")
            if open_slices.get(u):
                bad.append(f"a slice begins on track {u} inside another")
            open_slices[u] = (ts, get(te, "name"))
            slices += 1
            if u == 2:  # the steps' track
                slice_begins.append(ts)
        elif typ == "TYPE_SLICE_END":
            u = get(te, "track_uuid")
            if not open_slices.get(u) or open_slices[u][0] > ts:
                bad.append(f"a slice ends on track {u} before it begins")
            open_slices[u] = None
    if any(open_slices.values()):
        bad.append("slices never ended")
    check("the events' times never go back", event_times, sorted(event_times))
    shift = -q["earliest"]
    if int(q["timed"]):
        # each allocation at its own microsecond (the records in time order), or later (the
        # clock never goes back where threads' records interleave)
        want = [(a + shift) // 1000 for a in json.loads(q["alloc_ts"])]
        if q["out_of_order"] == 0:
            check("the allocations' microseconds", alloc_us, want)
        elif len(alloc_us) != len(want) or any(g < w for g, w in zip(alloc_us, want)):
            bad.append("an allocation before its microsecond")
        check("the steps' begins (ns)", sorted(slice_begins),
              sorted(b + shift for b in json.loads(q["step_begins"])))
    check("callstacks interned", len(stacks), q["stacks"])
    check("callstacks used", used, stacks)
    # the tracks with values (a device of the devices table without events has none)
    counter_tracks = list(last)
    answers("perfetto", counter_tracks, {k: v for k, (_, v) in last.items()}, peak, allocs,
            round(weight), ooms, slices)
    pcats.answers([k for k in counter_tracks if k[1].startswith(CAT)])
    for uuid, (d, name) in by_uuid.items():  # a category's track only once it has bytes
        if name.startswith(CAT) and (d, name) not in last:
            bad.append(f"perfetto: track {name} of device {d} without values")

chrome = json.load(open(f"{t}/c{n}.json"))
check("displayTimeUnit", chrome.get("displayTimeUnit"), "ns")
pid_dev, counter_tracks, last, peak = {}, set(), {}, {}
allocs = ooms = slices = weight = 0
ccats, group = Categories("chrome-json"), None
for e in chrome["traceEvents"]:
    if group is not None and (e["ph"] != "C" or (e["pid"], e["ts"]) != group):
        ccats.event_done(pid_dev[group[0]])  # a counter event's samples: one process, one time
        group = None
    if e["ph"] == "C":
        group = (e["pid"], e["ts"])
        ccats.value(pid_dev[e["pid"]], e["name"], e["args"]["bytes"])
    if e["ph"] == "M" and e["name"] == "process_name":
        m = re.search(r"GPU (\d+)", e["args"]["name"])
        if m:
            pid_dev[e["pid"]] = int(m.group(1))
    elif e["ph"] == "C":
        key = (pid_dev[e["pid"]], e["name"])
        counter_tracks.add(key)
        prev = last.get(key)
        if prev is None or prev[0] <= e["ts"]:
            last[key] = (e["ts"], e["args"]["bytes"])
        if e["name"] == "allocated":
            peak[key[0]] = max(peak.get(key[0], 0), e["args"]["bytes"])
    elif e["ph"] == "i" and e["name"] == "alloc":
        allocs += 1
        weight += e["args"]["bytes"]
    elif e["ph"] == "i" and e["name"] == "OOM":
        ooms += 1
        check("a Chrome OOM's scope", e["s"], "p")
    elif e["ph"] == "X":
        slices += 1
if group is not None:
    ccats.event_done(pid_dev[group[0]])
answers("chrome-json", list(counter_tracks), {k: v for k, (_, v) in last.items()}, peak, allocs,
        weight, ooms, slices)
ccats.answers([k for k in counter_tracks if k[1].startswith(CAT)])
if bad:
    print(f"{src}:\n  " + "\n  ".join(bad[:20]), file=sys.stderr)
    sys.exit(1)
PY
done

# the OOM run has OOMs, the two-device run steps and ranges (else the checks above test nothing)
python3 -c 'import json,sys
q=json.load(open(sys.argv[1])); q=q[0] if isinstance(q,list) else q["rows"][0]
sys.exit(0 if q["ooms"] > 0 else 1)' "$T/q2.json" || fail "the OOM run has no OOM"
python3 -c 'import json,sys
q=json.load(open(sys.argv[1])); q=q[0] if isinstance(q,list) else q["rows"][0]
sys.exit(0 if q["steps"] > 0 and q["ranges"] > 0 else 1)' "$T/q1.json" || fail "no steps or ranges"

# a database given as input without block_categories (an older memanalyze's: import -o writes
# them): the same files as from the database with them, and as from the trace (input 1)
"$MA" import "$T/two.zst" -o "$T/two.db" >/dev/null 2>&1 || fail "import -o"
cp "$T/two.db" "$T/old.db"
python3 - "$T/old.db" <<'PY' || fail "import -o: no block_categories to delete"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("SELECT count(*) FROM block_categories").fetchone()[0]
db.execute("DELETE FROM block_categories")
db.execute("DELETE FROM meta WHERE key = 'categories_blocks'")
db.commit()
sys.exit(0 if n > 0 else 1)
PY
for fmt in perfetto chrome-json; do
    want=$T/p1.perfetto-trace
    [ "$fmt" = chrome-json ] && want=$T/c1.json
    for db in two old; do
        "$MA" export "$T/$db.db" --to $fmt -o "$T/$db.$fmt" >"$T/db.txt" 2>&1 ||
            fail "$db.db: export --to $fmt: $(cat "$T/db.txt")"
        cmp -s "$T/$db.$fmt" "$want" || fail "$db.db: --to $fmt differs from the trace's"
    done
done

# options the timeline formats do not take: exit 2, one line, no file
for opt in "--what peak" "--device 0" "--from step:1" "--until step:2"; do
    # shellcheck disable=SC2086
    "$MA" export "$T/two.zst" --to perfetto -o "$T/no.pf" $opt 2>"$T/bad.err" >/dev/null
    rc=$?
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/bad.err")" -eq 1 ] &&
        grep -q "writes the whole run, every device" "$T/bad.err" || fail "$opt: exit $rc: $(cat "$T/bad.err")"
    [ -e "$T/no.pf" ] && fail "$opt: left a file"
done
# chrome-json's limit: above 1,000,000 events, one line naming perfetto, exit 2, no file
"$SYNTH" --events 1000100 -o "$T/big.zst" 2>/dev/null || fail "synth big"
"$MA" export "$T/big.zst" --to chrome-json -o "$T/big.json" >/dev/null 2>"$T/bad.err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$T/bad.err")" -eq 1 ] &&
    grep -q "at most 1000000 .*use --to perfetto" "$T/bad.err" ||
    fail "chrome-json over its limit: exit $rc: $(cat "$T/bad.err")"
[ -e "$T/big.json" ] && fail "chrome-json over its limit: left a file"
ls "$T" | grep -q "big.json." && fail "chrome-json over its limit: left a temporary"
"$MA" export --help >"$T/help" && grep -q "^  perfetto " "$T/help" &&
    grep -q "^  chrome-json " "$T/help" || fail "export --help"
finish
