#!/bin/sh
# CTest convbench_peak_link: `convbench --peak` prints a cache line's round
# trip between two CPUs wherever this test may run on two (nproc counts the
# CPUs of its affinity, as convbench does), and says it was not measured
# where it may run on one. convbench's exit status counts too.
# usage: test_peak_link.sh path/to/convbench
bench="$1"
out=$("$bench" --peak --threads 1 --warmup 1 --repeats 2 \
      --layer c=16,k=16,in=8x8,kernel=3x3,pad=1,name=tiny) || { echo "convbench failed"; exit 1; }
echo "$out"
if [ "$(nproc)" -ge 2 ]; then
    wants='line round trip before the suite: [1-9][0-9]* ns between CPUs
line round trip after the suite: [1-9][0-9]* ns between CPUs'
else
    wants='line round trip: not measured'
fi
echo "$wants" | while read -r want; do
    echo "$out" | grep -q "$want" || { echo "missing: $want"; exit 1; }
done
