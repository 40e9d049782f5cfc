#!/usr/bin/env bash
# Format the C/CUDA sources with the committed .clang-format.
#   ./scripts/format.sh          rewrite files in place
#   ./scripts/format.sh --check  only report files that differ (exit 1 if any)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v clang-format >/dev/null 2>&1; then
    echo "clang-format not found (apt-get install clang-format)" >&2
    exit 2
fi
mapfile -t files < <(find include src md tools tests bench -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort)
if [ "${1:-}" = "--check" ]; then
    clang-format --dry-run --Werror "${files[@]}"
    echo "format: ${#files[@]} files clean"
else
    clang-format -i "${files[@]}"
    echo "format: ${#files[@]} files formatted"
fi
