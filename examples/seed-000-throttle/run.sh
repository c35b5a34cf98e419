#!/bin/sh
# Seed 000/002 before and after: the same job under the legacy iops wait
# ("wo patch") and the 2018 rest-of-slice wait ("w/ patch"), printed one
# after the other as the seed's message shows them.
#
#   examples/seed-000-throttle/run.sh [VARIANT_BEFORE] [VARIANT_AFTER]
#
# Defaults: legacy and slice-remainder. BLKQOS=path/to/blkqos overrides the
# binary (default: target/release/blkqos of this checkout, built if missing).
set -eu

before=${1:-legacy}
after=${2:-slice-remainder}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ -z "${BLKQOS:-}" ]; then
    BLKQOS="$root/target/release/blkqos"
    [ -x "$BLKQOS" ] || (cd "$root" && cargo build --release -q -p blkqos)
fi

echo "wo patch (--throttle=$before):"
"$BLKQOS" run "$here/scenario.toml" --throttle="$before"
echo
echo "w/ patch (--throttle=$after):"
"$BLKQOS" run "$here/scenario.toml" --throttle="$after"
