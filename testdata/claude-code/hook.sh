#!/bin/sh
# Command hook probe: hook.sh EVENTNAME
# Records stdin JSON, env, pid/ppid and parent cmdline to $CC/logs/hook-<EVENT>-<n>.{json,env,proc}.
# For SessionStart it prints hookSpecificOutput.additionalContext JSON on stdout.
dir=${HOOK_LOG_DIR:-$CC/logs}
mkdir -p "$dir"
ev=$1
n=$(date +%s%N)
base="$dir/hook-$ev-$n"
cat > "$base.json"
env | sort > "$base.env"
{
  echo "pid=$$"
  echo "ppid=$PPID"
  echo "parent_cmdline=$(tr '\0' ' ' < /proc/$PPID/cmdline)"
  echo "parent_exe=$(readlink /proc/$PPID/exe)"
  pp=$(awk '{print $4}' /proc/$PPID/stat)
  echo "grandparent=$pp $(tr '\0' ' ' < /proc/$pp/cmdline)"
  echo "stat_ppid=$(cat /proc/$PPID/stat)"
} > "$base.proc"
if [ "$ev" = "SessionStart" ]; then
  src=$(sed -n 's/.*"source" *: *"\([a-z]*\)".*/\1/p' "$base.json")
  printf '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"MEMORYD_BOOTSTRAP_MARKER source=%s hookppid=%s"}}\n' "$src" "$PPID"
fi
if [ "$ev" = "PreCompact" ] && [ -f $CC/BLOCK_PRECOMPACT ]; then
  # test: can a PreCompact hook block compaction? mode in the file: exit2 | json
  mode=$(cat $CC/BLOCK_PRECOMPACT)
  if [ "$mode" = "json" ]; then
    printf '{"decision":"block","reason":"MEMORYD: write a checkpoint note first"}\n'; exit 0
  fi
  echo "MEMORYD: write a checkpoint note first" >&2; exit 2
fi
exit 0
