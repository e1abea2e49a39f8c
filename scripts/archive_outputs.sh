# shellcheck shell=bash
# Sourced by the GPU scripts (gpu_check.sh, gpu_trial.sh, gpu_profile.sh). A device call brings
# back at most 8 files of its output folder, so with ARCHIVE=1 every file of OUTDIR but the
# ones named is packed into OUTDIR/logs.tar.gz (and removed).
#   archive_outputs OUTDIR [KEEP_NAME...]
archive_outputs() {
  [ -n "${ARCHIVE:-}" ] || return 0
  local out=$1 name
  shift
  local keep=(! -name logs.tar.gz ! -name .archived)
  for name in "$@"; do keep+=(! -name "$name"); done
  (cd "$out" && find . -type f "${keep[@]}" -print0 > .archived &&
    tar czf logs.tar.gz --null -T .archived && xargs -0 rm -f < .archived && rm -f .archived)
}
