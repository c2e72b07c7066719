#!/usr/bin/env bash
# Writes docs/dashboard.png and docs/bench-report.png, the README's pictures of the dashboard and of a bench
# report. For the dashboard, the browser test that keeps a throttled
# download in flight takes it in headless Chromium (make deps installs chromium and chromium-driver).
#
#   scripts/screenshots.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
mkdir -p docs
swift build --build-tests
BA_DASHBOARD_SCREENSHOT="$here/docs/dashboard.png" \
  swift test --skip-build --filter 'DashboardBrowserTests/aDownloadInFlightShowsItsProgress'
echo "wrote docs/dashboard.png"
BA_BENCH_SCREENSHOT="$here/docs/bench-report.png" \
  swift test --skip-build --filter 'BenchHTMLEndToEndTests/theReportIsDrawnInABrowser'
echo "wrote docs/bench-report.png"
