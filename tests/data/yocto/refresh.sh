#!/usr/bin/env bash
# Copies openembedded-core's python3 manifest at a given commit into this folder.
#   refresh.sh OECORE_CLONE COMMIT RELEASE   e.g. refresh.sh ~/src/openembedded-core 5435505 scarthgap
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 OECORE_CLONE COMMIT RELEASE" >&2; exit 2; }
clone=$1 commit=$2 release=$3
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/python3-manifest.$release.json"
git -C "$clone" show "$commit:meta/recipes-devtools/python/python3/python3-manifest.json" >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out from $(git -C "$clone" rev-parse "$commit")"
