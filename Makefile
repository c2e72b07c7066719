# ba-mock: serve asset folders as Apple-hosted-style asset packs. `make help` lists the targets.
SWIFT ?= swift
PREFIX ?= /usr/local
# make demo and make serve: a debug build (the quicker build, for a first look).
CONFIG ?= debug
# make build: the fast binaries by default (a debug build runs delta updates and verify 10-50x slower).
BUILD_CONFIG ?= release
# Release binaries link Swift's runtime and Foundation statically: each command starts in ~13 ms instead of
# ~20 (the dynamic linker's share), which is a sixth of packing 1 000 small files. The same flags on every
# release build here, or SwiftPM builds everything again. Linked statically, Swift exports every symbol of the
# executable (about 48 000): the loader's lookups and the runtime's one dladdr at start go through them all
# (0.3-1 ms a command); nothing looks them up (a crash's backtrace reads the file's own symbol table), so not.
RELEASE_FLAGS ?= --static-swift-stdlib -Xlinker --no-export-dynamic
ASSETS ?= Assets
PORT ?= 8443
TORTURE_RUNS ?= 4
FUZZ_ITERATIONS ?= 20000
BENCH_ROUNDS ?= 3

# Debian packages the build, the tests, the demo and the benchmarks need (bsdtar, wrk and GNU time are the
# references and the meter of make bench, whose smoke run is part of make test, rsync the reference of its
# update step; python3's http.server is the plain static server a test installs an Apple-shaped manifest from).
# liblz4, liblzma and zlib decode and encode Apple Archive blocks; LZFSE is written here. libxxhash names the
# chunks of delta updates (XXH3-128); libzstd compresses a tar on a thread of its own. e2fsprogs makes make bench's
# own journaled ext4 where the folder's ext4 has no journal (scripts/bench.sh, BENCH_FS).
APT_PACKAGES := libarchive-dev pkg-config nginx curl libarchive-tools wrk time rsync python3 python3-pip \
  liblz4-dev liblzma-dev zlib1g-dev libxxhash-dev libzstd-dev e2fsprogs
# chromium and chromium-driver run the dashboard's browser tests (headless, through WebDriver).
APT_PACKAGES += chromium chromium-driver
# PyPI packages the tests and the bench use as independent references: lzfse binds Apple's reference LZFSE
# implementation, lz4 binds liblz4's block API (Apple Archive test archives are written with them); moto's
# server is the S3-compatible store publish is tested against, boto3 the independent client that reads it back,
# awscli (aws s3 sync) the reference of make bench's publish rows.
PIP_PACKAGES := lzfse lz4 'moto[server]==5.2.1' 'boto3==1.43.11' 'awscli==1.45.11'

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BIN = $(shell $(SWIFT) build -c $(CONFIG) --show-bin-path)

.PHONY: help deps build test torture fuzz bench demo serve lint format install clean

help:
	@echo "make demo     install what is missing, build, serve $(ASSETS)/ on 127.0.0.1 and fetch from it"
	@echo "make test     install what is missing, run every test (the example app's under Examples/ too)"
	@echo "make torture  every fault rule, random SIGKILLs of ba-sync, the attack-run cases; $(TORTURE_RUNS) runs each (minutes)"
	@echo "make bench    release build, then ours side by side with bsdtar, nginx, curl, wrk, rsync, C and sha256sum;"
	@echo "              writes bench/results.md and puts its table into README.md (~6-13 min)"
	@echo "make fuzz     manifest, archive (.aar too), index-row, fault-rule, glob and LZFSE fuzzing on $(FUZZ_ITERATIONS) inputs each,"
	@echo "              then libFuzzer on the C decoders for $(FUZZ_SECONDS) s"
	@echo "make serve    serve $(ASSETS)/ on http://127.0.0.1:$(PORT) until Ctrl-C; dashboard at /_mock/"
	@echo "make build    release build of ba-mock and ba-sync (BUILD_CONFIG=debug: a quicker build, slower binaries)"
	@echo "make lint     swift format lint --strict;  make format  rewrite in place"
	@echo "make install  release build of ba-mock and ba-sync into \$$PREFIX/bin (default $(PREFIX))"
	@echo "make deps     apt-get install what is missing: $(APT_PACKAGES)"
	@echo "make clean    remove build output and $(ASSETS)/.ba-mock"

deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@python3 -c "import lzfse, lz4.block, moto.server, boto3, awscli" 2>/dev/null || { echo "installing (pip): $(PIP_PACKAGES)"; \
	  python3 -m pip install --quiet --disable-pip-version-check $(PIP_PACKAGES) 2>/dev/null \
	  || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages $(PIP_PACKAGES); }

build: deps
	$(SWIFT) build -c $(BUILD_CONFIG) $(if $(filter release,$(BUILD_CONFIG)),$(RELEASE_FLAGS))
	@bin=$$($(SWIFT) build -c $(BUILD_CONFIG) --show-bin-path); \
	echo "built: $$bin/ba-mock and $$bin/ba-sync ($(BUILD_CONFIG))"; \
	if [ "$(BUILD_CONFIG)" = debug ]; then \
	  echo "note: debug binaries run delta updates, verify and hashing 10-50x slower than release; measure with make build"; \
	fi

# One test at a time: the end-to-end and torture tests wait on real processes, and on two cores tests
# run side by side starved each other into timeouts.
# First the C codecs' own checks under ASan and UBSan, a short pass (about 40 s; make fuzz is the long one);
# then the example app package (Examples/AssetStoreApp), which builds against this tree as an app would and
# runs its own tests against ba-mock; then every test of this package.
# CI shows only the end of a run, so a failing run ends by naming its failures again (the whole log stays
# in .build/test.log).
test: deps
	bash scripts/codec/sanitized.sh
	cd Examples/AssetStoreApp && $(SWIFT) test
	@mkdir -p .build
	@{ $(SWIFT) test --no-parallel 2>&1; echo $$? > .build/test.rc; } | tee .build/test.log; \
	rc=$$(cat .build/test.rc); \
	if [ "$$rc" != 0 ]; then \
	  echo "--- the failures of this run (whole log: .build/test.log) ---"; \
	  grep -E '✘|error:|Fatal error|fatalError|Signal|signal [0-9]' .build/test.log | grep -v ' passed after ' | tail -60; \
	fi; \
	exit $$rc

# The torture run includes the attack-run cases (issue 18): planted symlinks, stalled and surplus peers, a
# server killed while it builds.
torture: deps
	BA_TORTURE_RUNS=$(TORTURE_RUNS) $(SWIFT) test --no-parallel \
	  --filter 'TortureTests|PlantedSymlinkTests|StalledPeerEndToEndTests|ManyPacksEndToEndTests'

# The fuzz run includes the fault-rule parser, the glob matcher (against a reference), hostile delta rows,
# Apple Archives (mutated .aar packs of every algorithm, and LZFSE streams); then libFuzzer, with ASan and UBSan,
# on the C decoders for FUZZ_SECONDS (seeded from Apple's reference encoder: scripts/codec/README.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	BA_FUZZ_ITERATIONS=$(FUZZ_ITERATIONS) $(SWIFT) test \
	  --filter 'FuzzTests|fuzzedRulesParseOrAreRefused|randomPatternsMatchAsTheReferenceDoes|PackDeltaHostileRowTests|AppleArchiveTests|LZFSEDecoderTests'
	bash scripts/codec/fuzz.sh $(FUZZ_SECONDS)

# Release binaries against the reference tools; writes bench/results.md and bench/results.json, and puts
# that table into the README.
bench: deps
	$(SWIFT) build -c release $(RELEASE_FLAGS)
	bash scripts/bench.sh --rounds $(BENCH_ROUNDS) "$$($(SWIFT) build -c release --show-bin-path)"
	bash scripts/bench-readme.sh

demo: deps
	$(SWIFT) build -c $(CONFIG)
	@bash scripts/demo.sh "$(BIN)/ba-mock" "$(ASSETS)"

serve: deps
	$(SWIFT) build -c $(CONFIG)
	@echo "dashboard: http://127.0.0.1:$(PORT)/_mock/ (open it in a browser on this machine)"
	"$(BIN)/ba-mock" serve "$(ASSETS)" --port $(PORT)

lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Package.swift Examples/AssetStoreApp/Sources Examples/AssetStoreApp/Tests Examples/AssetStoreApp/Package.swift

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift Examples/AssetStoreApp/Sources Examples/AssetStoreApp/Tests Examples/AssetStoreApp/Package.swift

# No apt-get here: installing copies what a release build made (make deps first on a machine without them).
install:
	$(SWIFT) build -c release $(RELEASE_FLAGS)
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 755 "$$($(SWIFT) build -c release --show-bin-path)/ba-mock" "$(DESTDIR)$(PREFIX)/bin/ba-mock"
	install -m 755 "$$($(SWIFT) build -c release --show-bin-path)/ba-sync" "$(DESTDIR)$(PREFIX)/bin/ba-sync"

clean:
	$(SWIFT) package clean
	rm -rf .build "$(ASSETS)/.ba-mock" Examples/AssetStoreApp/.build
