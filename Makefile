# make test: everything CI runs (.ci/run calls it): vet, the unit tests, the
# race detector on the concurrent packages, then the end-to-end tests
# against a real Jaeger built from the Go module proxy (e2e/run.sh).
.PHONY: test unit race e2e

test: unit race e2e

unit:
	go vet ./...
	go test -count=1 -timeout 20m ./...

race:
	go test -race -count=1 -timeout 10m ./otelcuzk/... ./cudaspans/... ./prover/engine ./prover/server ./prover/client

e2e:
	bash e2e/run.sh
