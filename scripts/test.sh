#!/usr/bin/env bash
# Runs every test ferrolog has, on a fresh Debian machine as on a developer's.
# Installs what the tests need when it is missing, then: format check, clippy,
# the whole cargo test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null || need_apt+=(build-essential)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
if ! command -v cargo >/dev/null; then
  echo "cargo is required (rustup)" >&2
  exit 1
fi
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy

echo "== cargo fmt --check"
cargo fmt -- --check
echo "== cargo clippy"
cargo clippy --all-targets -- -D warnings
echo "== cargo test"
cargo test --all-targets
# Benches are compiled above by --all-targets; run them with `cargo bench`.
