#!/bin/sh
# Regenerates prover/api/cuzkv1 from proto/cuzk/v1/*.proto.
# Needs protoc (apt-get install -y protobuf-compiler) and the plugins:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
set -eu
cd "$(dirname "$0")/.."
PATH="$(go env GOPATH)/bin:$PATH"
mkdir -p prover/api/cuzkv1
protoc -I proto \
	--go_out=prover/api/cuzkv1 --go_opt=paths=source_relative,Mcuzk/v1/engine.proto=github.com/otelcuzk/otelcuzk/prover/api/cuzkv1 \
	--go-grpc_out=prover/api/cuzkv1 --go-grpc_opt=paths=source_relative,Mcuzk/v1/engine.proto=github.com/otelcuzk/otelcuzk/prover/api/cuzkv1 \
	cuzk/v1/engine.proto
# paths=source_relative writes cuzk/v1/...; flatten into the package folder.
mv prover/api/cuzkv1/cuzk/v1/*.go prover/api/cuzkv1/
rm -r prover/api/cuzkv1/cuzk
