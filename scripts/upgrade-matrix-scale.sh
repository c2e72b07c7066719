#!/usr/bin/env bash
# The upgrade matrix at scale: 20 releases of 10 packs (5 files of 20 kB each; pack N changes every N+1
# releases; essential, prefetch and on-demand in turn), every release to the newest and a first install.
# Prints the table's last line and the wall time. Usage: scripts/upgrade-matrix-scale.sh [BIN_DIR]
# (default: the debug build's bin path).
set -euo pipefail
bin="${1:-$(swift build --show-bin-path)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import os, random, sys
base = sys.argv[1]
policies = [
    '{"essential": {"installationEventTypes": ["firstInstallation"]}}',
    '{"prefetch": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}}',
    '{"onDemand": {}}',
]
for release in range(1, 21):
    for pack in range(10):
        folder = f"{base}/r{release:02d}/Pack{pack}"
        os.makedirs(folder, exist_ok=True)
        with open(f"{folder}.json", "w") as manifest:
            manifest.write('{"assetPackID": "Pack%d", "downloadPolicy": %s, "platforms": ["iOS"], '
                           '"fileSelectors": [{"directory": "Pack%d"}]}' % (pack, policies[pack % 3], pack))
        for file in range(5):
            content = random.Random(pack * 1000 + file * 10 + release // (pack + 1))
            with open(f"{folder}/file{file}.bin", "wb") as out:
                out.write(content.randbytes(20000))
PY
start=$(date +%s%N)
"$bin/ba-sync" upgrade-matrix "$work"/r* 2>/dev/null | tail -1
end=$(date +%s%N)
echo "wall time: $(( (end - start) / 1000000 )) ms"
