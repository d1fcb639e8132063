# smsform: the README's two commands are `make demo` and `make test`.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/smsform/smsform/internal/cli.Version=$(VERSION)

.PHONY: build demo test bench bench-scale crashtest reliability fuzz clean release release-check

# -buildvcs=auto: the commit goes into the binary (smsform version) even where
# GOFLAGS turns VCS stamping off, and a tree without git still builds.
build:
	$(GO) build -buildvcs=auto -ldflags '$(LDFLAGS)' -o smsform .

# Builds smsform, starts the sandbox on loopback, plans and applies an
# example campaign, reruns apply to show nothing is sent twice, stops the sandbox.
demo: build
	./examples/demo.sh ./smsform

# Vet plus every test with the race detector, short versions of the long checks.
# go test runs every vet analyzer (VET_CHECKS is go vet's own list) on each
# package it tests, which is every package: one compile of the dependencies
# (with -race) instead of two, a minute less on a fresh clone.
VET_CHECKS := appends,asmdecl,assign,atomic,bools,buildtag,cgocall,composites,copylocks,defers,directive,errorsas,framepointer,hostport,httpresponse,ifaceassert,loopclosure,lostcancel,nilfunc,printf,shift,sigchanyzer,slog,stdmethods,stdversion,stringintconv,structtag,testinggoroutine,tests,timeformat,unmarshal,unreachable,unsafeptr,unusedresult,waitgroup
# GORACE: a race-built program sleeps a second as it exits (atexit_sleep_ms,
# so that late reports get printed), and every test binary and every smsform a
# script runs paid it. Races are still reported, and fail the test, as they are
# found. A GORACE of your own comes after, so it wins.
test: export GORACE := atexit_sleep_ms=0 $(GORACE)
# The modules that hold test tools apart from smsform's go.mod (examples/ci:
# actionlint; internal/apispec: kin-openapi; internal/schemacheck: a JSON
# Schema validator; examples/policy: OPA) are tested too. actionlint's goes alongside the main
# module: on a fresh clone its compile fills the second core while the main
# module waits on its longest compile (the SQLite driver). The other two
# import much of smsform, so they go after it, when that is in the build
# cache: started at the same time, two go commands compile the same
# packages twice (measured on a fresh clone: 4m13s -> 3m50s). -p 4: most
# tests wait on processes and sockets, so four test binaries at once keep
# two cores busy.
test:
	@cd examples/ci && $(GO) test -race -short -vet=$(VET_CHECKS) ./... & ci=$$!; \
	$(GO) test -race -short -p 4 -timeout 20m -vet=$(VET_CHECKS) ./...; main=$$?; \
	cd internal/apispec && $(GO) test -race -short -vet=$(VET_CHECKS) ./... & spec=$$!; \
	cd internal/schemacheck && $(GO) test -race -short -vet=$(VET_CHECKS) ./... & schema=$$!; \
	cd examples/policy && $(GO) test -race -short -vet=$(VET_CHECKS) ./... & policy=$$!; \
	wait $$ci && wait $$spec && wait $$schema && wait $$policy && exit $$main

# Plan of 1,000,000 recipients (fresh, resumed) and apply of 100,000, each
# against its comparison in the same run; prints the table. Data is generated
# under a temporary folder.
bench: build
	$(GO) test -v -count=1 -timeout 60m -run 'TestBench$$' ./internal/bench -bench.full -bench.bin $(CURDIR)/smsform

# Ten million recipients: plans of 1,000,000 and 10,000,000 (fresh, resumed,
# saved), apply of the saved 10,000,000 and of 1,000,000 against the sandbox,
# state list --json; prints the table with targets and peak RSS. Generates
# about 2 GB of data under a temporary folder; takes about half an hour.
bench-scale: build
	$(GO) test -v -count=1 -timeout 120m -run 'TestScale$$' ./internal/bench -scale.full -bench.bin $(CURDIR)/smsform

# The kill test (SIGKILL at random moments, resume until done), with the state
# in a file and in PostgreSQL: 20 kills over 2,000 recipients, then 100 kills
# over 10,000; prints a crashtest: line each.
crashtest:
	$(GO) test -v -count=1 -timeout 30m -run 'TestKill$$' ./internal/reliability -crash.kills=20 -crash.recipients=2000
	$(GO) test -v -count=1 -timeout 30m -run 'TestKill$$' ./internal/reliability -crash.kills=100 -crash.recipients=10000

# The fault matrix (20 seeded runs of 1,000 recipients per fault, the state's
# own faults in a file and in PostgreSQL) and two and five applies at once on
# both; prints the report table.
reliability:
	$(GO) test -v -count=1 -timeout 60m -run 'TestFaultMatrix|TestConcurrentApplies' ./internal/reliability -reliability.runs=20 -reliability.recipients=1000

clean:
	rm -rf smsform .demo .bench dist

# The release files of a tagged commit, in dist/: smsform_VERSION_OS_ARCH.tar.gz
# (.zip for windows) for linux, darwin and windows on amd64 and arm64, a
# CycloneDX SBOM beside each (SBOM=0: none) and SHA256SUMS. Every byte depends
# only on the commit: git tag -a v0.3.0 -m v0.3.0 && make release VERSION=v0.3.0.
SBOM ?= 1
release:
	$(GO) run ./internal/release -version '$(VERSION)' -out dist -sbom=$(SBOM)

# Builds a release for this machine's platform from two clones of HEAD at
# different paths and compares every file byte for byte (half a minute with
# a warm build cache, a few minutes cold: not part of make test).
release-check:
	$(GO) test -count=1 -v -run 'TestReproducibleRelease$$' ./internal/release -release.check

# Every fuzz target for FUZZTIME each (go test runs one target at a time),
# after the full differential test of number validation (200,000 numbers
# against plain phonenumbers; make test checks 5,000).
# Crashers land in testdata/fuzz/ and become regression tests.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./campaign:FuzzLoad ./campaign:FuzzPrices ./campaign:FuzzReadCSV ./campaign:FuzzReadText ./campaign:FuzzRender \
	./plan/planfile:FuzzDecodeSaved ./plan/planfile:FuzzOpenBounded ./plan/planfile:FuzzFastBatch ./plan/planfile:FuzzReadManifest ./api:FuzzFindRequestID ./api:FuzzErrorReason \
	./api:FuzzParseToken ./internal/rawjson:FuzzPointer ./internal/rawjson:FuzzPick ./internal/mapping:FuzzResults ./apply:FuzzStatusOfResults ./internal/sms:FuzzAnalyze \
	./internal/rawjson:FuzzEachString ./internal/report:FuzzMarkdown ./internal/e164:FuzzMaskIn \
	./internal/words:FuzzVisible ./internal/words:FuzzClip ./internal/words:FuzzReplyWord ./internal/mapping:FuzzReports ./internal/redact:FuzzParseKeywords
fuzz:
	$(GO) test -count=1 -run '^TestDifferential$$' ./internal/e164
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "==> $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done
