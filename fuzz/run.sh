#!/bin/sh
# Long fuzz runs: every target (fuzz_protocol.py's, then fuzz_qos.py) for SECONDS (default 600) each, corpus in fuzz/corpus/TARGET.
set -e
cd "$(dirname "$0")/.."
for target in frames greeting properties null plain-server plain-client curve-server curve-client; do
    mkdir -p "fuzz/corpus/$target"
    python fuzz/fuzz_protocol.py "$target" -max_total_time="${SECONDS_PER_TARGET:-600}" "fuzz/corpus/$target"
done
mkdir -p fuzz/corpus/qos-commands
python fuzz/fuzz_qos.py -max_total_time="${SECONDS_PER_TARGET:-600}" fuzz/corpus/qos-commands
