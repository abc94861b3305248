#!/bin/sh
# Runs the Limelight executable named by the first argument:
#   limelight-coordinator --listen ...   limelight-indexer ...   limelight up ...
# Arguments that start with a dash, or a `limelight` subcommand (`up`, `query`,
# ...), go to `limelight`; anything else runs as given (`sh`, for debugging).
set -e
case "${1:-}" in
  "") exec limelight --help ;;
  limelight|limelight-*) exe="$1"; shift; exec "/usr/local/bin/$exe" "$@" ;;
  -*) exec limelight "$@" ;;
esac
if command -v "$1" >/dev/null 2>&1; then exec "$@"; fi
exec limelight "$@"
