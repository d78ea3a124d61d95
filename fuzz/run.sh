#!/bin/sh
# Long fuzz runs: every target (fuzz_protocol.py's, then fuzz_qos.py) for SECONDS_PER_TARGET
# (default 600) each, starting from the tracked corpus fuzz/corpus/TARGET plus the seeds of
# fuzz/seeds.py. New inputs go to a scratch corpus (fuzz/work/TARGET, untracked); crashes to
# fuzz/findings/ (turn each into a regression test, see fuzz/findings/README.md).
# Merge the new finds back into the tracked corpus, minimised, with:
#   MERGE=1 fuzz/run.sh        (or by hand: python fuzz/fuzz_protocol.py TARGET -merge=1 \
#                               fuzz/corpus/TARGET fuzz/work/TARGET)
# then commit fuzz/corpus/ (tests/test_fuzz_targets.py replays every file of it on each CI run).
set -e
cd "$(dirname "$0")/.."
seconds="${SECONDS_PER_TARGET:-600}"
python fuzz/seeds.py fuzz/work/seeds >/dev/null
mkdir -p fuzz/findings
run() {  # run TARGET SCRIPT [TARGET-ARG]
    target=$1; script=$2; shift 2
    mkdir -p "fuzz/corpus/$target" "fuzz/work/$target"
    python "fuzz/$script" "$@" -max_total_time="$seconds" -artifact_prefix="fuzz/findings/$target-" \
        "fuzz/work/$target" "fuzz/corpus/$target" "fuzz/work/seeds/$target"
    if [ -n "$MERGE" ]; then
        python "fuzz/$script" "$@" -merge=1 "fuzz/corpus/$target" "fuzz/work/$target" "fuzz/work/seeds/$target"
    fi
}
for target in frames greeting properties null plain-server plain-client curve-server curve-client; do
    run "$target" fuzz_protocol.py "$target"
done
run qos-commands fuzz_qos.py
