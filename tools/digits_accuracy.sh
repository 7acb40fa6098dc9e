#!/usr/bin/env bash
# digits_accuracy.sh - held-out accuracy of the default model (weights/digits), swin next to PyTorch.
#   tools/digits_accuracy.sh SWIN_BINARY [classify options, e.g. --device cuda]
# prints e.g.  digits held-out: swin 98.3% (354/360), PyTorch 98.3% (354/360)
# The true label is in each file name (<index>_<label>.png); PyTorch's predictions come from
# tests/data/digits/pytorch_predictions.tsv (tools/train_digits.py). Exit 2 on usage or run errors.
set -euo pipefail
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,6s/^# \{0,1\}//p' "$0"
    [ $# -ge 1 ] && exit 0 || exit 2
fi
swin=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/tests/data/digits
ref=$data/pytorch_predictions.tsv
[ -f "$ref" ] || { echo "digits_accuracy: missing $ref (run tools/train_digits.py)" >&2; exit 2; }

out=$("$swin" classify --json --top 1 --model "$root/weights/digits" "$@" "$data") ||
    { echo "digits_accuracy: swin classify failed" >&2; exit 2; }

printf '%s\n' "$out" |
    sed -n 's|^{"file":"\([^"]*/\)\{0,1\}\([^"/]*\)","top":\[{"index":\([0-9]*\),.*|\2\t\3|p' |
    awk -F'\t' '
        NR == FNR { if (FNR > 1) { n++; if ($2 == $3) t++ } next }
        { split($1, parts, "[_.]"); m++; if (parts[2] == $2) s++ }
        END {
            if (n == 0 || m != n) { printf "digits_accuracy: classified %d images, expected %d\n", m, n > "/dev/stderr"; exit 2 }
            printf "digits held-out: swin %.1f%% (%d/%d), PyTorch %.1f%% (%d/%d)\n", 100 * s / m, s, m, 100 * t / n, t, n
        }' "$ref" -
