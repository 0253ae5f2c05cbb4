#!/usr/bin/env bash
# soak.sh runs seglog's reliability tests for as long as asked, round after
# round: every fuzz target in turn, the crash campaigns and fault matrices
# with a raised count, the disk-full test, the SIGKILL campaign, the
# concurrency soak under -race, the server's hostile-input and client
# integration tests and the CLI's hostile-directory tests. Each round
# shifts -soak.seed, so it explores new scenarios. It stops at the first
# failure, keeping the failing step's output and the command that replays
# it, and writes a JSON summary.
#
#   fuzz/soak.sh [-d DURATION] [-o SUMMARY.json] [-s SCALE] [-f FUZZTIME]
#
# DURATION is 90s, 20m or 2h (default 1h); SCALE multiplies every test's
# crash points, faults, kills and run time (default 5); FUZZTIME is each
# fuzz target's slice per round (default 60s). Run it niced on a shared
# machine: nice -n 10 fuzz/soak.sh -d 2h. Logs go to soak-logs/ beside the
# summary.
set -uo pipefail
cd "$(dirname "$0")/.."

duration=1h scale=5 fuzztime=60s steptimeout=60m out=${TMPDIR:-/tmp}/seglog-soak/summary.json
while getopts "d:o:s:f:" opt; do
  case $opt in
    d) duration=$OPTARG ;;
    o) out=$OPTARG ;;
    s) scale=$OPTARG ;;
    f) fuzztime=$OPTARG ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done

seconds() { # 90s, 20m, 2h, or a bare number of seconds
  local v=$1
  case $v in
    *h) echo $(( ${v%h} * 3600 )) ;;
    *m) echo $(( ${v%m} * 60 )) ;;
    *s) echo "${v%s}" ;;
    *) echo "$v" ;;
  esac
}

total=$(seconds "$duration")
slice=$(seconds "$fuzztime")
start=$(date +%s)
deadline=$(( start + total ))
logs="$(dirname "$out")/soak-logs"
mkdir -p "$logs"
counts="$(cd "$logs" && pwd)/counts.txt"
: > "$counts"
export SEGLOG_SOAK_COUNTS="$counts"

# The fuzz targets: package and name.
targets=(
  "./record FuzzParseBatch" "./record FuzzBuild" "./internal/crc32c FuzzChecksum"
  "./index FuzzOffsetFile" "./index FuzzTimeFile" "./fsck FuzzCheck" "./segment FuzzRecover"
  "./fuzz FuzzLog" "./fuzz FuzzRecoveryVsFsck" "./fuzz FuzzBatchKmsg"
  "./layout FuzzParseCheckpoint" "./store FuzzParseTopicFile" "./store FuzzCommitRecord"
  "./server FuzzRequest" "./raftlog FuzzCodec" "./internal/epochcache FuzzParse"
  "./compaction FuzzOffsetMap" "./cleaner FuzzDecide"
)
declare -A execs=()
for t in "${targets[@]}"; do execs[${t#* }]=0; done
rounds=0 steps=0 failure="" replay="" faillog=""

now() { date +%s; }
left() { echo $(( deadline - $(now) )); }

summary() {
  local status=$1 fuzzjson="" sep=""
  for name in "${!execs[@]}"; do
    fuzzjson+="$sep\"$name\": ${execs[$name]}"
    sep=", "
  done
  sum() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$counts"; }
  local commit
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  cat > "$out" <<EOF
{
  "status": "$status",
  "commit": "$commit",
  "started": "$(date -u -d @"$start" +%Y-%m-%dT%H:%M:%SZ)",
  "seconds": $(( $(now) - start )),
  "rounds": $rounds,
  "steps": $steps,
  "scale": $scale,
  "fuzz_executions": { $fuzzjson },
  "crash_points": $(sum crash_points),
  "faults_injected": $(sum faults),
  "disk_full_rounds": $(sum disk_full_rounds),
  "kills": $(sum kills),
  "records_verified": $(sum records_verified),
  "failures": $( [ -n "$failure" ] && echo 1 || echo 0 ),
  "failure": "$(printf '%s' "$failure" | sed 's/"/\\"/g')",
  "replay": "$(printf '%s' "$replay" | sed 's/"/\\"/g')",
  "failure_log": "$faillog"
}
EOF
}

# step NAME REPLAY-COMMAND...: runs the command, logging; on failure
# records it and stops the soak.
step() {
  local name=$1; shift
  local log="$logs/round$rounds-$name.log"
  steps=$((steps + 1))
  if ! nice -n 10 "$@" > "$log" 2>&1; then
    failure="$name failed in round $rounds"
    faillog=$log
    # The tests name their scenario's replay command; else the step's.
    replay="$*"
    if grep -q -m1 -o 'replay: [^)]*' "$log"; then
      replay="$(grep -m1 -o 'replay: [^)]*' "$log" | sed 's/replay: //')"
    fi
    echo "FAIL: $failure; replay: $replay; log: $log"
    tail -30 "$log"
    summary failed
    exit 1
  fi
  return 0
}

echo "soak: $total s, scale $scale, fuzz slice $slice s, summary $out"
while [ "$(left)" -gt 0 ]; do
  rounds=$((rounds + 1))
  seed=$rounds
  # go test's default 10-minute limit is CI's size, not a soak's: at a
  # raised scale on a loaded machine the Log's campaigns pass it (the first
  # 2-hour soak died of it, in TestDiskFull, with nothing wrong). Every step
  # is still bounded.
  flags=(-count=1 -timeout="$steptimeout" -soak.scale="$scale" -soak.seed="$seed")
  for t in "${targets[@]}"; do
    l=$(left); [ "$l" -le 0 ] && break
    pkg=${t% *} name=${t#* }
    ft=$(( l < slice ? l : slice ))
    [ "$ft" -lt 5 ] && break
    # The fuzzing engine sometimes ends a run with "context deadline
    # exceeded" while a worker is busy, writing no input: not a failure.
    log="$logs/round$rounds-$name.log"
    steps=$((steps + 1))
    if ! nice -n 10 go test -run '^$' -fuzz "^$name\$" -fuzztime "${ft}s" -fuzzminimizetime 30s "$pkg" > "$log" 2>&1; then
      if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
        :
      else
        failure="$name failed in round $rounds"; faillog=$log
        input=$(grep -o 'Failing input written to [^ ]*' "$log" | head -1 | sed 's/Failing input written to //')
        replay="go test -run='^$name\$' $pkg  # failing input: $pkg/${input}"
        echo "FAIL: $failure; replay: $replay"; tail -30 "$log"
        summary failed; exit 1
      fi
    fi
    n=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
    execs[$name]=$(( ${execs[$name]} + ${n:-0} ))
  done
  [ "$(left)" -le 0 ] && break
  # The package comes first: go test takes everything after a flag it
  # does not know (-soak.scale) as the test binary's, so "./store" there
  # ran the root package, where these tests do not exist, and passed.
  step campaigns-log go test . "${flags[@]}" -run '^(TestLogCrashCampaign|TestLogFaultMatrix|TestDiskFull)$'
  step campaigns-store go test ./store "${flags[@]}" -run '^(TestStoreCrashCampaign|TestStoreFaultMatrix)$'
  step campaigns-raft go test ./raftlog "${flags[@]}" -run '^(TestRaftCrashCampaign|TestRaftFaultMatrix)$'

  # Kills are cheap next to the campaigns: four times the scale (20 kills
  # per unit), so that a 2-hour soak kills over a thousand times.
  step kill go test . -count=1 -timeout="$steptimeout" -soak.scale=$((scale * 4)) -soak.seed="$seed" -run '^TestKillCampaign$'
  step concurrency go test -race . "${flags[@]}" -run '^TestConcurrencySoak$'
  # Real seglog serve processes SIGKILLed and SIGSTOPped under kgo writers
  # (4 kills per unit of scale; the round's seed fixes the schedule).
  step nemesis go test ./internal/nemesis "${flags[@]}" -run '^TestNemesisSingleNode$'
  # A step that ran no test is a broken step, not a pass.
  if grep -q 'no tests to run' "$logs"/round"$rounds"-campaigns-*.log "$logs"/round"$rounds"-kill.log "$logs"/round"$rounds"-concurrency.log "$logs"/round"$rounds"-nemesis.log; then
    failure="a campaign step of round $rounds ran no test"; faillog="$logs"
    replay="grep -l 'no tests to run' $logs/round$rounds-*.log"
    echo "FAIL: $failure"; summary failed; exit 1
  fi
  # The server's hostile-input and client integration tests (franz-go's
  # kgo against a started server; they take no -soak flags). The kcat
  # tests are CI's: they skip where kcat is not installed.
  step server go test -count=1 -timeout="$steptimeout" -run '^(TestHostile.*|TestShutdownAnswersParkedFetch|TestFetchOfTruncatedSliceFails|TestKgo.*|TestIdempotence)$' ./server
  step hostile-cli go test -count=1 -timeout="$steptimeout" -run '^(TestHostileDirectories|TestGarbageInputs)$' ./cmd/seglog
  summary running
  echo "round $rounds done, $(left) s left"
done
summary passed
echo "soak passed: $(cat "$out")"
