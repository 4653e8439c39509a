#!/bin/sh
# CTest convbench_peer_onednn: `convbench --peer onednn` on three tiny layers
# (2-D, depthwise strided with asymmetric padding, 1-D dilated), every pass.
#   1. Always: a --peer-lib that holds no oneDNN exits 3 and says how to get it.
#      So does --peer-apart (the child that opens it passes the status on),
#      and --peer-apart without --peer is bad usage (2). --rounds 3 without
#      a peer: every JSON row says 3 rounds; --rounds 0 is bad usage.
#      --peer-reorders without --peer is bad usage (2).
#   2. Where oneDNN 3.x is found (CONVBENCH_ONEDNN_LIB, scripts/onednn.sh's
#      cache, the loader's path): every row has the peer's time and the
#      header names oneDNN 3.x, its ISA and threads; bf16 too where the ISA
#      has it; with --peer-apart at 2 threads, every row too, the header
#      saying the peer ran in its own process with OMP_WAIT_POLICY active
#      (whatever the environment says) and the JSON rows "peer_apart": true;
#      with --rounds 2, "rounds": 2 and a ratio in every row. With
#      --peer-reorders (nchw, nchw --prepared, nhwc) the header says what is
#      timed and every row counts its timed reorders, some, and fewer with
#      the weights prepared.
#      Elsewhere: skipped (77).
# usage: test_peer_onednn.sh path/to/convbench
set -u
cb="$1"
tmp="${TMPDIR:-/tmp}/convbench_peer_onednn.$$"
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

layers="--layer c=16,k=24,in=12x12,kernel=3x3,pad=1,name=conv3x3
        --layer c=16,k=16,in=9x9,kernel=3x3,stride=2,pad=1:0,groups=16,name=dw_s2
        --layer c=8,k=12,in=20,kernel=3,dil=2,pad=2,name=conv1d_d2"

# 1. A place without oneDNN: exit 3, the places tried and the way to get it.
# shellcheck disable=SC2086  # one word per option
"$cb" --peer onednn --peer-lib "$tmp" $layers --op fwd >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ "$rc" -eq 3 ] || fail "--peer-lib without oneDNN: exit $rc, expected 3"
grep -q "$tmp/libdnnl.so.3" "$tmp/err" || fail "the message does not name the file tried"
grep -q "scripts/onednn.sh" "$tmp/err" || fail "the message does not say how to get oneDNN"
# shellcheck disable=SC2086
"$cb" --peer onednn --peer-apart --peer-lib "$tmp" $layers --op fwd >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ "$rc" -eq 3 ] || fail "--peer-apart, --peer-lib without oneDNN: exit $rc, expected 3"
grep -q "scripts/onednn.sh" "$tmp/err" || fail "--peer-apart: the message does not say how to get oneDNN"
# shellcheck disable=SC2086
"$cb" --peer-apart $layers --op fwd >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "--peer-apart without --peer: exit $rc, expected 2"
grep -q -- "--peer-apart" "$tmp/err" || fail "--peer-apart without --peer: the message does not name it"
# shellcheck disable=SC2086
"$cb" --peer-reorders $layers --op fwd >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "--peer-reorders without --peer: exit $rc, expected 2"
grep -q -- "--peer-reorders" "$tmp/err" || fail "--peer-reorders without --peer: the message does not name it"
# shellcheck disable=SC2086
"$cb" $layers --op all --threads 1 --warmup 1 --repeats 2 --rounds 3 --verify --json "$tmp/rounds.json" \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/out" "$tmp/err"; fail "--rounds 3 exited $rc"; }
grep -q "one-shot calls, 3 rounds |" "$tmp/out" || fail "--rounds 3: the header does not say 3 rounds"
rows=$(grep -c '"rounds": 3' "$tmp/rounds.json")
[ "$rows" -eq 9 ] || fail "--rounds 3: $rows of 9 rows say 3 rounds"
# shellcheck disable=SC2086
"$cb" $layers --op fwd --rounds 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "--rounds 0: exit $rc, expected 2"

# 2. The oneDNN the defaults find.
# shellcheck disable=SC2086
"$cb" --peer onednn $layers --op all --threads 1 --warmup 1 --repeats 2 --verify \
    --json "$tmp/f32.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err"
if [ "$rc" -eq 3 ]; then
  echo "SKIP: oneDNN 3.x not found (scripts/onednn.sh fetches it)"
  exit 77
fi
[ "$rc" -eq 0 ] || fail "convbench --peer onednn exited $rc"
header='^peer oneDNN 3\.[0-9]+\.[0-9]+ \(.*libdnnl\.so\.3.*\) \| isa [a-z0-9_]+ \| threads 1 \(OpenMP'
grep -Eq "$header" "$tmp/out" || fail "the header does not name oneDNN 3.x, its ISA and 1 OpenMP thread"
rows=$(grep -c '"peer_ms": [0-9]' "$tmp/f32.json")
[ "$rows" -eq 9 ] || fail "f32: $rows of 9 rows have the peer's time"

# The peer in its own process, at 2 threads; the environment's policy is
# overridden there (the header is the child's).
# shellcheck disable=SC2086
OMP_WAIT_POLICY=passive "$cb" --peer onednn --peer-apart $layers --op all --threads 2 --warmup 1 \
    --repeats 2 --rounds 2 --verify --json "$tmp/apart.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err"
[ "$rc" -eq 0 ] || fail "convbench --peer onednn --peer-apart exited $rc"
grep -Eq '^peer oneDNN 3\..* threads 2 \(OpenMP .*OMP_WAIT_POLICY active\).* in a process of its own' "$tmp/out" ||
  fail "--peer-apart: the header does not say 2 threads, policy active, a process of its own"
rows=$(grep -c '"peer_ms": [0-9]' "$tmp/apart.json")
[ "$rows" -eq 9 ] || fail "--peer-apart: $rows of 9 rows have the peer's time"
rows=$(grep -c '"peer_apart": true' "$tmp/apart.json")
[ "$rows" -eq 9 ] || fail "--peer-apart: $rows of 9 rows say peer_apart"
rows=$(grep -c '"rounds": 2, "ratio": [0-9][^,]*, "ratio_low": [0-9][^,]*, "ratio_high": [0-9]' "$tmp/apart.json")
[ "$rows" -eq 9 ] || fail "--rounds 2: $rows of 9 rows have 2 rounds, a ratio and its spread"

# --peer-reorders: each timed call also reorders the inputs from the
# caller's layout into the primitive's and the output back. The JSON rows
# count those reorders; with --prepared the weights are reordered once
# before timing, so the forward and backward-data calls run fewer.
reorders() { grep -o '"peer_reorders": [0-9]*' "$1" | awk '{ n++; s += $2 } END { print n + 0, s + 0 }'; }
for variant in "" "--prepared" "--layout nhwc"; do
  # shellcheck disable=SC2086
  "$cb" --peer onednn --peer-reorders $variant $layers --op all --threads 1 --warmup 1 --repeats 2 \
      --json "$tmp/reorders.json" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  cat "$tmp/out" "$tmp/err"
  [ "$rc" -eq 0 ] || fail "--peer-reorders $variant exited $rc"
  case "$variant" in
    --prepared) want='from and to nchw tensors timed, oihw weights reordered once before timing' ;;
    --layout*) want='from and to nhwc/ohwi tensors timed' ;;
    *) want='from and to nchw/oihw tensors timed' ;;
  esac
  grep -q "^peer oneDNN.*primitive and reorders: $want" "$tmp/out" ||
    fail "--peer-reorders $variant: the header does not say '$want'"
  counts=$(reorders "$tmp/reorders.json")
  counted=${counts% *} total=${counts#* }
  [ "$counted" -eq 9 ] || fail "--peer-reorders $variant: $counted of 9 rows count the peer's reorders"
  [ "$total" -gt 0 ] || fail "--peer-reorders $variant: no row's timed call ran a reorder"
  case "$variant" in
    "") one_shot=$total ;;
    --prepared) [ "$total" -lt "$one_shot" ] ||
      fail "--peer-reorders --prepared: $total reorders timed, one-shot calls $one_shot" ;;
  esac
done
rows=$(grep -c '"peer_reorders": null' "$tmp/f32.json")
[ "$rows" -eq 9 ] || fail "without --peer-reorders: $rows of 9 rows have peer_reorders null"

# bf16 where oneDNN's ISA has it: the peer's rows (libconv's side may be n/a
# on the CPU, so its exit status is not checked here).
if grep -Eq '^peer .* \| isa [a-z0-9_]*(bf16|amx|fp16)' "$tmp/out"; then
  # shellcheck disable=SC2086
  "$cb" --peer onednn $layers --op all --threads 1 --warmup 1 --repeats 2 --dtype bf16 \
      --device cpu --json "$tmp/bf16.json" >"$tmp/out" 2>"$tmp/err"
  cat "$tmp/out" "$tmp/err"
  grep -q '^peer .* | bf16 |' "$tmp/out" || fail "bf16: the header does not say bf16"
  rows=$(grep -c '"peer_ms": [0-9]' "$tmp/bf16.json")
  [ "$rows" -eq 9 ] || fail "bf16: $rows of 9 rows have the peer's time"
fi
echo "OK"
