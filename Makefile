# make test: everything CI runs (.ci/run calls it): gofmt, vet, the unit tests (with
# NVRTC fetched from Debian's archive, so every CUDA kernel module is
# compiled for sm_90 without a GPU), the race detector on the concurrent
# packages, then the end-to-end tests against a real Jaeger built from the
# Go module proxy (e2e/run.sh).
.PHONY: test unit race e2e soak

test: unit race e2e

unit:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "make: not gofmt'd (run gofmt -w):" $$unformatted; exit 1; fi
	go vet ./...
	if nvrtc=$$(scripts/fetch-nvrtc.sh); then \
		export CUDASPANS_NVRTC=$$nvrtc LD_LIBRARY_PATH=$$(dirname $$nvrtc) OTELCUZK_REQUIRE_NVRTC=1; \
	else echo "make: no NVRTC could be fetched; the kernel compile test will skip"; fi; \
	go test -count=1 -timeout 20m ./...

race:
	go test -race -count=1 -timeout 10m ./otelcuzk/... ./cudaspans/... ./prover/engine ./prover/server ./prover/client

e2e:
	bash e2e/run.sh

# make fuzz: every Go fuzz test of the repository (scripts/fuzz.sh finds
# them), one at a time, FUZZTIME each (default 5m); make test runs each for
# 10 s (fuzz-short) with the committed corpora.
.PHONY: fuzz fuzz-short
test: fuzz-short
fuzz:
	FUZZTIME=$${FUZZTIME:-5m} scripts/fuzz.sh
fuzz-short:
	FUZZTIME=$${FUZZTIME:-10s} scripts/fuzz.sh

# make soak: the daemon for 10 minutes under good and bad requests, cancels
# and an OTLP receiver going down and up (cmd/cuzk TestSoak; make test runs
# it for 40 s).
soak:
	CUZK_SOAK_DURATION=$${CUZK_SOAK_DURATION:-10m} go test -count=1 -run '^TestSoak$$' -v -timeout 30m ./cmd/cuzk

# make proto: regenerate prover/api/cuzkv1 from proto/cuzk/v1/engine.proto
# (proto/generate.sh: buf from the Go module proxy, and protoc-gen-go and
# protoc-gen-go-grpc built at the versions the generated headers name; no
# protoc needed).
.PHONY: proto
proto:
	sh proto/generate.sh
