#!/usr/bin/env bash
# Installs a test's npm packages into DIR/node_modules exactly as LOCKED/package-lock.json pins them
# (every package and version, dependencies included), with `npm ci`: the same tree on every machine
# and run, whatever the registry has published since. Nothing happens when DIR already holds that
# lockfile's install. Sourced by the installers (tests/serve/npm_install.sh, tests/text/*_npm_install.sh),
# which say what is pinned and why; without node, npm or the registry they skip (77), and fail under
# CI=true (tests/common/skip.sh).
# Usage: npm_ci LOCKED DIR [npm ci options...]
npm_ci() {
  local locked=$1 dir=$2
  shift 2
  if [ -f "$dir/.uform-lock" ] && cmp -s "$locked/package-lock.json" "$dir/.uform-lock"; then
    echo "$dir already holds $locked/package-lock.json's packages"
    return 0
  fi
  command -v node > /dev/null || skip_missing "node"
  command -v npm > /dev/null || skip_missing "npm"
  mkdir -p "$dir"
  rm -f "$dir/.uform-lock"
  cp "$locked/package.json" "$locked/package-lock.json" "$dir/"
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" ||
    skip_missing "the npm packages of $locked/package-lock.json (npm ci failed: is the npm registry reachable?)"
  cp "$locked/package-lock.json" "$dir/.uform-lock"
}
