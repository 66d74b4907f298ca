#!/usr/bin/env bash
# Fuzzing (docs/fuzzing.md). Builds the "fuzz" preset (clang, ASan + UBSan, libFuzzer) in build-fuzz/ if
# needed, replays each target's regression inputs and seed corpus, then fuzzes each target for SECONDS,
# one after another (2 cores: one libFuzzer process at a time).
#
#   bash scripts/fuzz.sh SECONDS [TARGET...]     # SECONDS = 0: only the replay
#
# Fails (exit 1) on any crash, sanitizer report, leak, timeout (an input taking over 10 s) or RSS over
# 1 GiB. The input that did it is kept in build-fuzz/findings/<target>/ and the reproduction command is
# printed. Nothing is written into the repository: the working corpus is a fresh temporary copy of
# tests/fuzz/corpus/<target>/ unless FUZZ_CORPUS_DIR names a directory to keep it in (long campaigns).
# FUZZ_ARGS adds libFuzzer flags to the fuzzing runs (e.g. "-fork=1 -ignore_crashes=1" for a campaign
# past a known finding); the test command never sets it.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(fuzz_scenario fuzz_hpa fuzz_nodepool_json fuzz_nodepool_yaml fuzz_answers fuzz_seed fuzz_schedule fuzz_plan)
usage() { echo "usage: bash scripts/fuzz.sh SECONDS [TARGET...]  (targets: ${all_targets[*]})" >&2; exit 2; }
[ $# -ge 1 ] || usage
seconds=$1
shift
[[ "$seconds" =~ ^[0-9]+$ ]] || usage
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: unknown target $t" >&2; usage; }
done

# The longest input libFuzzer may make, per target: a scenario or a YAML stream may be long, a seed is short.
max_len() {
  case $1 in
    fuzz_scenario | fuzz_nodepool_yaml | fuzz_schedule) echo 65536 ;;
    fuzz_hpa | fuzz_nodepool_json | fuzz_plan) echo 32768 ;;
    fuzz_answers) echo 8192 ;;
    fuzz_seed) echo 64 ;;
  esac
}

command -v clang++ >/dev/null 2>&1 || { echo "fuzz: clang++ not found (bash scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
echo "fuzz: building the fuzz preset (build-fuzz/): ${targets[*]}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$jobs" --target "${targets[@]}" >/dev/null

bin_dir=build-fuzz/tests/fuzz
findings_root=build-fuzz/findings
logs=build-fuzz/fuzz-logs
mkdir -p "$findings_root" "$logs"
# Readable stack traces (function, file:line) need llvm-symbolizer; UBSan prints one for every report.
for s in llvm-symbolizer /usr/lib/llvm-14/bin/llvm-symbolizer; do
  if command -v "$s" >/dev/null 2>&1; then export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$(command -v "$s")}"; break; fi
done
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
common=(-rss_limit_mb=1024 -timeout=10)

work=$(mktemp -d "${TMPDIR:-/tmp}/gpuscale-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=()

# Tells how to look at a finding, from the artifacts libFuzzer wrote since `since` (a marker file).
report() {
  local t=$1 since=$2 log=$3
  echo "fuzz: $t FAILED; last lines of $log:"
  tail -n 40 "$log" | sed 's/^/    /'
  local found=0
  while IFS= read -r artifact; do
    found=1
    echo "fuzz: $t: finding kept in $artifact"
    echo "      reproduce: $bin_dir/$t $artifact"
    echo "      minimise:  $bin_dir/$t -minimize_crash=1 -runs=100000 -exact_artifact_path=$artifact.min $artifact"
    echo "      then add it as a regression: cp $artifact.min tests/fuzz/regressions/$t/<name>"
  done < <(find "$findings_root/$t" -type f -newer "$since" 2>/dev/null | sort)
  [ $found = 1 ] || echo "fuzz: $t: no artifact written (see the log)"
}

for t in "${targets[@]}"; do
  bin=$bin_dir/$t
  findings=$findings_root/$t
  mkdir -p "$findings"
  marker=$work/$t.start
  touch "$marker"

  # 1. Replay: every input that once crashed or hung, and every seed, must pass.
  inputs=()
  for dir in tests/fuzz/regressions/$t tests/fuzz/corpus/$t; do
    [ -d "$dir" ] || continue
    while IFS= read -r f; do inputs+=("$f"); done < <(find "$dir" -type f ! -name 'README*' | sort)
  done
  log=$logs/$t.replay.log
  if [ ${#inputs[@]} -gt 0 ]; then
    if "$bin" "${common[@]}" -artifact_prefix="$findings/" "${inputs[@]}" >"$log" 2>&1; then
      echo "fuzz: $t: replayed ${#inputs[@]} regression and seed inputs"
    else
      report "$t" "$marker" "$log"
      failed+=("$t (replay)")
      continue
    fi
  fi
  [ "$seconds" -gt 0 ] || continue

  # 2. Fuzz for $seconds, from a working corpus seeded with the checked-in one (and the regressions).
  if [ -n "${FUZZ_CORPUS_DIR:-}" ]; then corpus=$FUZZ_CORPUS_DIR/$t; else corpus=$work/corpus-$t; fi
  mkdir -p "$corpus"
  [ ${#inputs[@]} -eq 0 ] || cp "${inputs[@]}" "$corpus/" 2>/dev/null || true
  dict=tests/fuzz/${t#fuzz_}.dict
  log=$logs/$t.log
  echo "fuzz: $t: fuzzing for ${seconds}s (log: $log)"
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
  if "$bin" "${common[@]}" -max_total_time="$seconds" -max_len="$(max_len "$t")" -dict="$dict" \
      -print_final_stats=1 -artifact_prefix="$findings/" ${FUZZ_ARGS:-} "$corpus" >"$log" 2>&1; then
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
    rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)
    rss=$(grep -E '^stat::peak_rss_mb' "$log" | awk '{print $2}' || true)
    echo "fuzz: $t: ok: ${done_line:-?} (average ${rate:-?} exec/s, peak RSS ${rss:-?} MB)"
  else
    report "$t" "$marker" "$log"
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz: all passed (${targets[*]})"
