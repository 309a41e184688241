#!/usr/bin/env bash
# On a Hopper GPU machine: time attention's mma.sync prefill path (issue 49's rows: B4 H16 S4096
# D128 bf16, full and causal), which sm_90a plans only through a tuning record. For each kiln
# binary given (a build's bin/kiln, e.g. base then new from scripts/ab-revisions.sh), in a cache
# directory of its own: `kiln tune` of each graph writes the record of its default kernel, the
# record's winner is rewritten to the mma path (wgmma 0, 128 x 64 tiles, 32 rows a warp, 2
# stages: the mma path's sm_90 default at D 128), then `kiln bench` runs it, twice, the binaries
# taking turns. A bench that did not run an mma kernel (`__fa` in its name) fails loudly.
# Usage: bench/trace/mma_rows.sh KILN_BIN...   (GRAPHS="a.json b.json" to choose the graphs)
set -uo pipefail
cd "$(dirname "$0")/../.."
graphs=${GRAPHS:-"bench/attention/attention_bf16_b4h16s4096d128.json bench/attention/attention_bf16_b4h16s4096d128_causal.json"}
winner='{"wgmma": 0, "bm": 128, "bn": 64, "stages": 2, "wm": 32}'
status=0
declare -A cache
for bin in "$@"; do
  cache[$bin]=$(mktemp -d)
  for g in $graphs; do
    timeout 200 "$bin" --cache-dir "${cache[$bin]}" tune --budget-s 1 "$g" >/dev/null 2>&1 ||
      { echo "mma_rows: kiln tune $g with $bin failed"; status=1; }
  done
  python3 - "${cache[$bin]}" "$winner" <<'EOF' || status=1
import glob, json, sys
files = glob.glob(sys.argv[1] + "/tuning/*.json")
if not files:
    sys.exit("mma_rows: kiln tune wrote no tuning records")
for f in files:
    db = json.load(open(f))
    for r in db["records"]:
        if r["kernel"].startswith("attention_"):
            r["winner"] = json.loads(sys.argv[2])
    json.dump(db, open(f, "w"), indent=1)
EOF
done
for round in 1 2; do
  for bin in "$@"; do
    for g in $graphs; do
      log=$(mktemp)
      timeout 200 "$bin" --cache-dir "${cache[$bin]}" bench "$g" >"$log" 2>&1
      kernel=$(grep -A1 "^kernel " "$log" | tail -n 1 | awk '{print $1, $2}')
      plan=$(grep -E "^plan:" "$log" | sed -E "s/.*Plan::replay ([0-9.]+) us.*/replay \1 us/")
      echo "r$round $bin $(basename "$g" .json): alone $kernel, $plan"
      [[ "$kernel" == *__fa* ]] || { echo "mma_rows: not the mma path:"; tail -n 5 "$log"; status=1; }
    done
  done
done
exit $status
