#!/usr/bin/env bash
# cli_soak.sh - tools/soak.sh in small: 240 files with a bad one every 20th (each of the six kinds:
# truncated PNG and JPEG, empty, not an image, PNG and JPEG declaring 60000x60000 pixels, twice),
# classified by this build's swin on the CPU: exit 1, every good file classified and every bad one
# reported in its place with its reason. Too short to judge the memory curve (tools/soak.sh on
# 100,000 files does that), and slow enough under ASan, whose quarantine grows the heap by design,
# to be judged wrongly: --memory-report-only.
#   usage: cli_soak.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
out=$(bash "$src/tools/soak.sh" --files 240 --every 20 --swin "$swin" --memory-report-only 2>&1)
rc=$?
echo "$out"
if [ $rc -eq 0 ] && echo "$out" | grep -q '^ok   228 of 228 good files classified' &&
   echo "$out" | grep -q '^ok   12 of 12 bad files reported in place with their reason' &&
   ! echo "$out" | grep -q '^FAIL'; then
  echo "cli_soak: passed"
  exit 0
fi
echo "cli_soak: FAILED (exit $rc)"
exit 1
