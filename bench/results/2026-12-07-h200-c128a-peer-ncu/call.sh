#!/usr/bin/env bash
# One device call for an H200 (fifty-first session): today's kernels beside the Triton peer on
# the C128A build the peer still leads on the H200 (Flash, prefill 8K after 120K), profiled:
# Nsight Compute, every section, ours planned and unplanned, its translated floor (each shape),
# and the peer's engine kernel on the same inputs. The last H200 profile of this build beside
# the peer (2026-12-04-h200-peer-ncu-c128a) had the kernel before the gathered lookups (64
# threads a row); ours has since been 32 threads a row with every table read of a pass issued
# first. First, one round of the peer-lead replication (timings, same-run peer) for context.
#   OUT=$OUT bash bench/results/2026-12-07-h200-c128a-peer-ncu/call.sh      (carry [".deps"])
# Comes back: gpu.txt, call.log, b/bench.tgz, b/bench.log, profile.log, ncu.tar.gz (the
# reports as text and the ncu logs; the .ncu-rep files are left on the device, for size).
set -uo pipefail
out=${OUT:?}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
# The replication call writes $out/gpu.txt (the card) before anything else.
ROUNDS=1 OTHER_CARDS=${OTHER_CARDS:-none} OUT=$out bash bench/results/2026-12-06-h200-peer-lead-replication/call.sh
echo "replication rc=$? at $((SECONDS - start)) s" >> "$out/call.log"
prof=/tmp/ncu-c128a
PEER=1 DEPS=$PWD/.deps scripts/gpu_profile.sh "$prof" kernel_planned/flash/C128A/prefill8K_ctx120K \
  kernel/flash/C128A/prefill8K_ctx120K translated_floor/flash/C128A/prefill8K_ctx120K > "$out/profile.log" 2>&1
echo "profile rc=$? at $((SECONDS - start)) s" >> "$out/profile.log"
(cd "$prof" && rm -f ./*.ncu-rep && tar czf "$out/ncu.tar.gz" .)
ls -la "$out" "$out"/b >> "$out/profile.log" 2>&1
