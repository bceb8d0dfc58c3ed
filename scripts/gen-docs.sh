#!/usr/bin/env bash
# Regenerates the docs that come from the rules' metadata (the docs test fails when they drift).
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory docs
